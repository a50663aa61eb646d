"""``agentkit-memory stats``: what a store holds, per scope, without changing it.

Per scope: documents (what ingest read: chunks sharing corpus/path/doc_id metadata),
chunks (stored records), and the last write or delete. For the store: the embedder its
vectors came from, and the size on disk (the SQLite file, its WAL and shared-memory
files and its lexical indexes folder; the PostgreSQL table with its indexes). The
store is opened read-only and checked first, so pointing this at the wrong file names
it and changes nothing.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

from agentkit.cli._args import PROG
from agentkit.cli._forget import scope_text
from agentkit.cli._stores import open_store
from agentkit.kernel.ctx import Scope
from agentkit.vector.stats import ScopeStats, StoreStats

# Scopes named by the hint after an empty query before it says "and N more".
_NAMED = 10


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="machine-readable output")


async def run(args: argparse.Namespace) -> int:
    async with open_store(args, create=False, need_vectors=False) as store:
        stats: StoreStats = await store.stats()
    print(as_json(stats) if args.json else render(stats))
    return 0


async def elsewhere(store: Any, scope: Scope) -> str | None:
    """When ``scope`` holds no records: a note naming the scopes that do, as ``stats``
    would list them, so "no results" is not mistaken for "nothing matched".

    For the shell user who owns the store file only: the MCP server answers one tenant
    and never calls this (other tenants' names are theirs).
    """
    if await store.count(scope=scope):
        return None
    stats: StoreStats = await store.stats()
    held = [s for s in stats.scopes if s.records and s.scope != scope]
    asked = "the unscoped bucket" if scope == Scope() else f"scope {scope_text(scope)}"
    if not held:
        return f"note: {asked} holds no records, and no other scope does"
    named = [
        f"{scope_text(s.scope)} ({s.records} chunk{'' if s.records == 1 else 's'}"
        f"{', no --scope' if s.scope == Scope() else ''})"
        for s in held[:_NAMED]
    ]
    more = f" and {len(held) - _NAMED} more" if len(held) > _NAMED else ""
    return (f"note: {asked} holds no records; scopes with records: {', '.join(named)}{more} "
            f"(see {PROG} stats)")


def when(at: float | None) -> str | None:
    """ISO 8601 in UTC, to the second; None when unknown."""
    if at is None:
        return None
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(at))


def _scope(s: ScopeStats) -> dict[str, Any]:
    return {
        "scope": scope_text(s.scope),
        "org_id": s.scope.org_id,
        "domain_id": s.scope.domain_id,
        "documents": s.documents,
        "chunks": s.records,
        "last_write": when(s.last_write),
    }


def as_json(stats: StoreStats) -> str:
    return json.dumps(
        {
            "store": stats.location,
            "kind": stats.kind,
            "embedder": stats.embedder,
            "dim": stats.dim,
            "bytes_on_disk": stats.bytes_on_disk,
            "documents": sum(s.documents for s in stats.scopes),
            "chunks": sum(s.records for s in stats.scopes),
            "scopes": [_scope(s) for s in stats.scopes],
        },
        ensure_ascii=False,
    )


def size_text(n: int | None) -> str:
    if n is None:
        return "-"
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{n} B" if unit == "B" else f"{value:.1f} {unit} ({n} B)"
        value /= 1024
    raise AssertionError("unreachable")


def render(stats: StoreStats) -> str:
    embedder = "-" if stats.embedder is None else f"{stats.embedder} (dim {stats.dim})"
    lines = [
        f"store:    {stats.location} ({stats.kind})",
        f"embedder: {embedder}",
        f"size:     {size_text(stats.bytes_on_disk)}",
    ]
    if not stats.scopes:
        lines.append("scopes:   none (the store holds no records)")
        return "\n".join(lines)
    rows = [("scope", "documents", "chunks", "last write (UTC)")]
    for s in stats.scopes:
        rows.append((scope_text(s.scope), str(s.documents), str(s.records),
                     when(s.last_write) or "-"))
    if len(stats.scopes) > 1:
        rows.append(("total", str(sum(s.documents for s in stats.scopes)),
                     str(sum(s.records for s in stats.scopes)), ""))
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    lines.append("")
    for row in rows:
        cells = [row[0].ljust(widths[0])] + [c.rjust(w) for c, w in zip(row[1:3], widths[1:3],
                                                                         strict=True)]
        lines.append("  ".join([*cells, row[3]]).rstrip())
    return "\n".join(lines)
