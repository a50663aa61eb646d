"""``query``: run one search and print it as a table, JSON, and/or an explanation."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from agentkit.kernel.ctx import Ctx, Scope
from agentkit.state.memory import HybridMemory, HybridMode, HybridResult, MemoryItem

SNIPPET = 72


async def run(
    store: Any,
    text: str,
    *,
    k: int,
    mode: HybridMode,
    scope: Scope,
    depth: int,
    where: dict[str, Any] | None = None,
    exact: bool = False,
) -> tuple[list[MemoryItem], HybridResult, float]:
    memory = HybridMemory(ExactSearch(store) if exact else store, mode=mode, depth=depth)
    found = await memory.search(text, k=k, ctx=Ctx(scope), where=where)
    return list(found.items), found, found.seconds


class ExactSearch:
    """The store with its dense search made exact (``query --exact``): every vector of
    the scope is compared with the query instead of the approximate index's candidates.
    Everything else passes through to the store."""

    def __init__(self, store: Any) -> None:
        self._store = store

    async def search(self, query: str, *, k: int, scope: Any, where: Any = None) -> Any:
        return await self._store.search(query, k=k, scope=scope, where=where, exact=True)

    async def search_by_vector(self, vector: Any, *, k: int, scope: Any, where: Any = None) -> Any:
        return await self._store.search_by_vector(
            vector, k=k, scope=scope, where=where, exact=True
        )

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


def _sources(item: MemoryItem, found: HybridResult | None) -> list[str]:
    """The halves that found the item (the search's own record of it)."""
    halves = found.found_by(item.id) if found is not None else ()
    return list(halves) or [item.source]


def _snippet(text: str, width: int = SNIPPET) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def _where(item: MemoryItem) -> str:
    path = item.metadata.get("path")
    if path is None:
        return "-"
    if item.metadata.get("corpus") is not None:
        return f"{path}:{item.metadata.get('doc_id')}"
    position = item.metadata.get("position")
    return f"{path}#{position}" if position is not None else str(path)


def table(items: list[MemoryItem], found: HybridResult | None = None) -> str:
    if not items:
        return "no results"
    rows = [("rank", "score", "source(s)", "id", "path", "snippet")]
    for rank, item in enumerate(items, 1):
        rows.append(
            (
                str(rank),
                "-" if item.score is None else f"{item.score:.4f}",
                "+".join(_sources(item, found)),
                (item.id or "-")[:12],
                _where(item),
                _snippet(item.content),
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    lines = []
    for r in rows:
        cells = "  ".join(c.ljust(w) for c, w in zip(r[:-1], widths, strict=True))
        lines.append(f"{cells}  {r[-1]}")
    return "\n".join(lines)


def explain(items: list[MemoryItem], found: HybridResult, total: float) -> dict[str, Any]:
    """Each half's own ranking, which chunks both halves found, and where time went."""
    halves = []
    for half in found.halves:
        own = [
            {"rank": rank, "score": item.score, "id": item.id, "path": _where(item)}
            for rank, item in enumerate(half.items, 1)
        ]
        halves.append({"source": half.name, "ms": round(half.seconds * 1000, 2),
                       "returned": len(half.items), "results": own})
    shown = {item.id for item in items}
    both = [(cid, dict(by)) for cid, by in found.ranks.items() if len(by) > 1]
    both.sort(key=lambda pair: (pair[0] not in shown, min(pair[1].values())))
    merged = [{"id": cid, "ranks": by, "in_results": cid in shown} for cid, by in both]
    return {"total_ms": round(total * 1000, 2), "sources": halves, "merged": merged,
            "rrf_constant": found.constant}


def render_explain(info: Mapping[str, Any], items: list[MemoryItem], k: int) -> str:
    out: list[str] = []
    out.append(f"explain: {len(info['sources'])} source(s), {info['total_ms']:.1f} ms total")
    for half in info["sources"]:
        out.append(f"  [{half['source']}] {half['returned']} result(s) in {half['ms']:.1f} ms"
                   " (own ranks and scores)")
        for row in half["results"][:k]:
            score = "-" if row["score"] is None else f"{row['score']:.4f}"
            cid = (row["id"] or "-")[:12]
            out.append(f"    #{row['rank']:<3} {score:>10}  {cid}  {row['path']}")
        if half["returned"] > k:
            out.append(f"    ... {half['returned'] - k} more read for fusion")
    if len(info["sources"]) > 1:
        merges = info["merged"]
        out.append(f"  dedupe (by id): {len(merges)} chunk(s) found by both halves, "
                   "merged into one item each")
        for m in merges[:k]:
            where = ", ".join(f"{s} #{r}" for s, r in m["ranks"].items())
            tag = "shown" if m["in_results"] else "not in top-k"
            out.append(f"    {m['id'][:12]}  {where}  ({tag})")
        constant = info["rrf_constant"]
        out.append(f"  fused score = sum over sources of 1/({constant} + rank)  (rrf_rerank)")
    return "\n".join(out)


def as_json(
    text: str,
    mode: str,
    scope: Scope,
    items: list[MemoryItem],
    info: Mapping[str, Any] | None,
    found: HybridResult | None = None,
) -> str:
    doc: dict[str, Any] = {
        "query": text,
        "mode": mode,
        "scope": {"org_id": scope.org_id, "domain_id": scope.domain_id},
        "results": [
            {
                "rank": rank,
                "score": item.score,
                "sources": _sources(item, found),
                "id": item.id,
                "path": item.metadata.get("path"),
                "position": item.metadata.get("position"),
                "title": item.metadata.get("title"),
                "content": item.content,
                "metadata": _plain(item.metadata),
            }
            for rank, item in enumerate(items, 1)
        ],
    }
    if info is not None:
        doc["explain"] = info
    return json.dumps(doc, ensure_ascii=False, indent=2, default=str)


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value
