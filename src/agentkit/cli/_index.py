"""``agentkit-memory index check|rebuild``: the indexes beside an embedded store.

The rows in the SQLite file are the truth; the lexical and dense indexes beside it are
derived from them, caught up by the change and rebuilt by themselves when missing,
damaged or from another version (see ``agentkit.vector._derived``). ``check`` says
where each scope's indexes stand without changing anything; ``rebuild`` rebuilds them
from the rows now (one scope with ``--scope``), with a progress bar, instead of leaving
it to the next query.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from agentkit.cli._forget import scope_text
from agentkit.cli._progress import Progress
from agentkit.cli._stores import inspect_store, is_postgres
from agentkit.kernel.ctx import Scope
from agentkit.kernel.errors import StoreError
from agentkit.vector.sqlite import SQLiteVectorStore
from agentkit.vector.stats import IndexStatus


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("action", choices=("check", "rebuild"),
                        help="check: where each index stands; rebuild: from the rows, now")
    parser.add_argument("--json", action="store_true", help="check: machine-readable output")
    parser.add_argument("--all-scopes", action="store_true",
                        help="rebuild: every scope (default: the --scope given)")


def _path(args: argparse.Namespace) -> Path:
    if is_postgres(args.store):
        raise StoreError(
            "index check/rebuild is for embedded SQLite stores; PostgreSQL keeps its own "
            "indexes (REINDEX rebuilds them)"
        )
    path = Path(args.store)
    inspect_store(path, create=False)
    return path


async def run(args: argparse.Namespace) -> int:
    path = _path(args)
    if args.action == "check":
        async with SQLiteVectorStore(path, embedder=None, read_only=True) as store:
            states = await store.check_indexes()
        print(as_json(states) if args.json else render(states))
        return 0
    bar: Progress | None = None

    def progress(what: str, done: int, total: int) -> None:
        nonlocal bar
        if bar is None or bar.label != what:
            if bar is not None:
                bar.close()
            bar = Progress(total, what)
        bar.update(done - bar.done)

    async with SQLiteVectorStore(path, embedder=None, create=False, progress=progress) as store:
        scope: Scope | None = None if args.all_scopes else args.scope
        count = await store.rebuild_indexes(scope=scope)
    if bar is not None:
        bar.close()
    print(f"rebuilt the lexical and dense indexes of {count} scope(s)")
    return 0


def render(states: list[IndexStatus]) -> str:
    if not states:
        return "no scopes hold records"
    rows = [("scope", "index", "rows at", "indexed at", "state")]
    for s in states:
        shown = "-" if s.indexed is None else str(s.indexed)
        rows.append((scope_text(s.scope), s.kind, str(s.generation), shown, s.state))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join(
        "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows
    )


def as_json(states: list[IndexStatus]) -> str:
    return json.dumps(
        [
            {"scope": scope_text(s.scope), "org_id": s.scope.org_id,
             "domain_id": s.scope.domain_id, "index": s.kind, "generation": s.generation,
             "indexed": s.indexed, "state": s.state}
            for s in states
        ],
        indent=2,
    )
