"""``agentkit-memory forget``: delete records by id, by metadata, or a whole scope.

One mode per run: ids, a filter (``--where key=value`` and/or ``--filter JSON``, see
``_where``), or ``--all`` for the whole ``--scope``, which also needs ``--yes``. The
filter is the one search takes: it deletes exactly what a query with it finds. The
count printed is the store's own: records that were there and
are now gone. No model is loaded and no store is created: forgetting from a path that
holds no store is an error.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from agentkit.cli import _where
from agentkit.cli._args import UsageError
from agentkit.cli._stores import inspect_store, is_postgres
from agentkit.kernel.ctx import Scope
from agentkit.kernel.errors import StoreError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("ids", nargs="*", metavar="ID", help="chunk ids to delete")
    _where.add_arguments(parser, "delete")
    parser.add_argument("--all", action="store_true",
                        help="delete every record of --scope (needs --yes)")
    parser.add_argument("--yes", action="store_true", help="confirm --all")
    parser.add_argument("--json", action="store_true", help="machine-readable output")


def plan(args: argparse.Namespace) -> tuple[str, Any]:
    """The one thing this run deletes, or UsageError (exit 2) saying what is missing."""
    filtered = bool(args.where) or args.filter_json is not None
    modes = [m for m, given in (("ids", args.ids), ("where", filtered), ("all", args.all))
             if given]
    if not modes:
        raise UsageError("forget needs chunk IDs, --where KEY=VALUE, --filter JSON or --all")
    if len(modes) > 1:
        raise UsageError(
            f"forget takes one of IDs, --where/--filter or --all, got {' and '.join(modes)}"
        )
    if args.yes and not args.all:
        raise UsageError("--yes only confirms --all")
    if args.all:
        if not args.yes:
            raise UsageError(
                f"--all deletes every record of scope {scope_text(args.scope)}; "
                "add --yes to confirm"
            )
        return "all", None
    if filtered:
        return "where", _where.from_args(args)
    for cid in args.ids:
        if not cid:
            raise UsageError("an ID cannot be empty")
    return "ids", list(dict.fromkeys(args.ids))


def scope_text(scope: Scope) -> str:
    """``org/domain``, ``-`` for an unset part; ``-`` alone for the unset bucket."""
    if scope.org_id is None and scope.domain_id is None:
        return "-"
    return "/".join(part or "-" for part in scope.key)


def open_for_forget(target: str) -> Any:
    """A writable store on an existing store only, with no embedder (none is needed)."""
    if is_postgres(target):
        from agentkit.vector.postgres import PostgresVectorStore

        return PostgresVectorStore(target, embedder=None, create=False)
    from agentkit.vector.sqlite import SQLiteVectorStore

    path = Path(target)
    inspect_store(path, create=False)
    return SQLiteVectorStore(path, embedder=None, create=False)


async def run(args: argparse.Namespace) -> int:
    mode, what = plan(args)
    store = open_for_forget(args.store)
    async with store:
        if mode == "ids":
            n = await store.delete(what, scope=args.scope)
        elif mode == "where":
            n = await store.delete_where(what, scope=args.scope)
        else:
            n = await store.delete_scope(scope=args.scope)
    if not isinstance(n, int):
        raise StoreError(f"{type(store).__name__} did not say how many records it deleted")
    if args.json:
        print(json.dumps({"forgot": n, "scope": scope_text(args.scope), "mode": mode}))
        return 0
    detail = f"{len(what)} id(s) named; " if mode == "ids" else ""
    noun = "record" if n == 1 else "records"
    print(f"forgot {n} {noun} ({detail}scope {scope_text(args.scope)})")
    return 0
