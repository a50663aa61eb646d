"""One coroutine per subcommand: open the store, do the work, print, return a status."""

from __future__ import annotations

import argparse
import sys

from agentkit.cli import _eval, _forget, _import, _ingest, _query, _stats, _where
from agentkit.cli._stores import open_store


async def cmd_ingest(args: argparse.Namespace) -> int:
    # Every input is read and checked before a model loads or a store file is made.
    ready = _ingest.prepare(args.paths, size=args.chunk_size, overlap=args.overlap)
    async with open_store(args, create=True) as store:
        stats = await _ingest.write(store, args.scope, ready, batch=args.batch)
    print(stats.summary(args.scope), file=sys.stderr)
    return 0


async def cmd_query(args: argparse.Namespace) -> int:
    lexical_only = args.mode == "lexical"
    where = _where.from_args(args)  # checked before the store is opened
    async with open_store(args, create=False, need_vectors=not lexical_only) as store:
        items, found, total = await _query.run(
            store, args.text, k=args.k, mode=args.mode, scope=args.scope, depth=args.candidates,
            where=where, exact=args.exact,
        )
        note = None if items else await _stats.elsewhere(store, args.scope)
    if note is not None:
        print(note, file=sys.stderr)
    info = _query.explain(items, found, total) if args.explain else None
    if args.json:
        print(_query.as_json(args.text, args.mode, args.scope, items, info, found))
        return 0
    print(_query.table(items, found))
    if info is not None:
        print()
        print(_query.render_explain(info, items, args.k))
    return 0


async def cmd_eval(args: argparse.Namespace) -> int:
    data = _eval.load(args.dir, args.split)
    ready = _ingest.prepare([str(data.corpus)])
    async with open_store(args, create=True) as store:
        stats = await _ingest.write(store, args.scope, ready)
        if stats.written:
            print(stats.summary(args.scope), file=sys.stderr)
        scores, _ = await _eval.evaluate(
            store,
            args.scope,
            data,
            args.modes,
            k=args.k,
            recall_at=args.recall_at,
            limit=args.limit,
        )
    print(_eval.render(scores, data, args.k, args.recall_at))
    return 0


async def cmd_import(args: argparse.Namespace) -> int:
    return await _import.run(args)


async def cmd_forget(args: argparse.Namespace) -> int:
    return await _forget.run(args)


async def cmd_stats(args: argparse.Namespace) -> int:
    return await _stats.run(args)


async def cmd_index(args: argparse.Namespace) -> int:
    from agentkit.cli import _index

    return await _index.run(args)


async def cmd_mcp(args: argparse.Namespace) -> int:
    from agentkit.cli import _mcp_args  # the MCP SDK is imported only for this command

    return await _mcp_args.run(args)
