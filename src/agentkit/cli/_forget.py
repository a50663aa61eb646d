"""``agentkit-memory forget``: delete records by id, by metadata, or a whole scope.

One mode per run: ids, a filter (``--where key=value`` and/or ``--filter JSON``, see
``_where``), or ``--all`` for the whole ``--scope``, which also needs ``--yes``. The
filter is the one search takes: it deletes exactly what a query with it finds. The
count printed is the store's own: records that were there and
are now gone. No model is loaded and no store is created: forgetting from a path that
holds no store is an error.

An ID may be shortened, as the query table prints it: a prefix that names exactly one
record of the scope stands for it. Every ID is resolved before anything is deleted, and
one that names no record, or several, refuses the whole run (naming the candidates), so
a typo never passes for "already gone".
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
from agentkit.kernel.errors import InvalidArgument, StoreError

# Candidates listed when a shortened id is ambiguous.
_SHOWN = 5


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("ids", nargs="*", metavar="ID",
                        help="chunk ids to delete; a prefix naming one record will do")
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
            what = await resolve(store, what, args.scope)
            n = await store.delete(what, scope=args.scope)
        elif mode == "where":
            n = await store.delete_where(what, scope=args.scope)
        else:
            n = await store.delete_scope(scope=args.scope)
    if not isinstance(n, int):
        raise StoreError(f"{type(store).__name__} did not say how many records it deleted")
    if args.json:
        doc = {"forgot": n, "scope": scope_text(args.scope), "mode": mode}
        if mode == "ids":
            doc["ids"] = what
        print(json.dumps(doc, ensure_ascii=False))
        return 0
    detail = f"{len(what)} id(s) named; " if mode == "ids" else ""
    noun = "record" if n == 1 else "records"
    print(f"forgot {n} {noun} ({detail}scope {scope_text(args.scope)})")
    return 0


async def resolve(store: Any, ids: list[str], scope: Scope) -> list[str]:
    """The full id each of ``ids`` names in ``scope``: itself when the scope holds it, else
    the one id it is a prefix of. InvalidArgument naming every ID that names no record
    or several; the store is only read, so a refusal deletes nothing."""
    held = {chunk.id for chunk in await store.get(ids, scope=scope)}
    out: dict[str, None] = {}
    problems: list[str] = []
    for cid in ids:
        if cid in held:
            out[cid] = None
            continue
        found = await store.ids_with_prefix(cid, scope=scope, limit=_SHOWN + 1)
        if len(found) == 1:
            out[found[0]] = None
        elif not found:
            problems.append(f"no record has id {cid!r} or an id starting with it")
        else:
            listed = ", ".join(found[:_SHOWN]) + (", ..." if len(found) > _SHOWN else "")
            problems.append(f"{cid!r} starts more than one id ({listed}); give more of it")
    if problems:
        raise InvalidArgument(
            f"{'; '.join(problems)} (scope {scope_text(scope)}); nothing was deleted"
        )
    return list(out)
