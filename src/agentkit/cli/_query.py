"""``query``: run one search and print it as a table, JSON, and/or an explanation."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import Any

from agentkit.cli._hybrid import RRF_CONSTANT, Mode, Stack, build
from agentkit.kernel.ctx import Ctx, Scope
from agentkit.state.memory import MemoryItem

SNIPPET = 72


async def run(
    store: Any,
    text: str,
    *,
    k: int,
    mode: Mode,
    scope: Scope,
    depth: int,
    where: dict[str, Any] | None = None,
    exact: bool = False,
) -> tuple[list[MemoryItem], Stack, float]:
    stack = build(store, mode, depth=depth, exact=exact)
    start = time.perf_counter()
    items = await stack.memory.query(text, k=k, ctx=Ctx(scope), where=where)
    return items, stack, time.perf_counter() - start


def _sources(item: MemoryItem) -> list[str]:
    stamped = item.metadata.get("dedupe_sources")
    if isinstance(stamped, tuple) and stamped:
        return [str(s) for s in stamped]
    return [item.source]


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


def table(items: list[MemoryItem]) -> str:
    if not items:
        return "no results"
    rows = [("rank", "score", "source(s)", "id", "path", "snippet")]
    for rank, item in enumerate(items, 1):
        rows.append(
            (
                str(rank),
                "-" if item.score is None else f"{item.score:.4f}",
                "+".join(_sources(item)),
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


def explain(items: list[MemoryItem], stack: Stack, total: float) -> dict[str, Any]:
    """Each half's own ranking, which chunks both halves found, and where time went."""
    ranks: dict[str, dict[str, int]] = {}
    halves = []
    for half in stack.halves:
        own = []
        for rank, item in enumerate(half.last, 1):
            if item.id is not None:
                ranks.setdefault(item.id, {})[half.name] = rank
            own.append({"rank": rank, "score": item.score, "id": item.id, "path": _where(item)})
        halves.append({"source": half.name, "ms": round(half.elapsed * 1000, 2),
                       "returned": len(half.last), "results": own})
    shown = {item.id for item in items}
    both = [(cid, by) for cid, by in ranks.items() if len(by) > 1]
    both.sort(key=lambda pair: (pair[0] not in shown, min(pair[1].values())))
    merged = [{"id": cid, "ranks": by, "in_results": cid in shown} for cid, by in both]
    return {"total_ms": round(total * 1000, 2), "sources": halves, "merged": merged}


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
        out.append(f"  fused score = sum over sources of 1/({RRF_CONSTANT} + rank)  (rrf_rerank)")
    return "\n".join(out)


def as_json(
    text: str, mode: str, scope: Scope, items: list[MemoryItem], info: Mapping[str, Any] | None
) -> str:
    doc: dict[str, Any] = {
        "query": text,
        "mode": mode,
        "scope": {"org_id": scope.org_id, "domain_id": scope.domain_id},
        "results": [
            {
                "rank": rank,
                "score": item.score,
                "sources": _sources(item),
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
