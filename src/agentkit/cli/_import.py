"""``agentkit-memory import SOURCE``: another store's folder into the agentkit store.

The source is opened and checked (its kind, the pickle trust, the collection) before
the target store is opened, so a refused import creates and changes nothing.
"""

from __future__ import annotations

import argparse
import asyncio

from agentkit.cli._progress import Progress, metered
from agentkit.cli._stores import open_store
from agentkit.migrate import copy, read_folder


async def run(args: argparse.Namespace) -> int:
    """Import, print the report; exit status 1 when the store does not hold every id."""
    source = await asyncio.to_thread(
        read_folder,
        args.source,
        kind=args.kind,
        collection=args.collection,
        trust_pickle=args.trust_pickle,
        page=args.batch,
    )
    async with open_store(args, create=True) as store:
        bar = Progress(source.total or 0, f"import {source.kind}", unit="records")
        try:
            with metered(store, bar.advance):  # live while records are embedded
                report = await copy(
                    source,
                    store,
                    scope=args.scope,
                    source_embedder=args.source_embedder,
                    progress=bar.update,
                )
        finally:
            bar.close()
    for line in report.lines():
        print(line)
    return 0 if report.verified else 1
