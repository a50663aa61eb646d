"""Overhead of AgentkitRetriever.invoke over a plain hand-written LangChain retriever.

Both return the same 10 documents. Ours goes through the whole bridge: per-call
tenant resolution, the LangChain run, an agentkit memory query (an in-process
source, completed without an event loop) and the MemoryItem -> Document mapping.
The baseline is the smallest honest BaseRetriever: it builds its 10 Documents per
call, as a real retriever does from its backing data.

Measured interleaved (A, B, A, B, ...) in short batches so machine noise hits both
sides alike; the ratio reported is the median of the per-round ratios.
Target: <= 1.10x.

    python bench/langchain_overhead.py [--rounds N] [--batch N]
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

from agentkit_langchain import AgentkitRetriever
from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever

from agentkit.kernel import Ctx
from agentkit.state.memory import MemoryItem

N_DOCS = 10
ROWS = [
    (f"passage {i}: the quick brown fox", {"i": i, "source": f"f{i}.md"}, f"d{i}")
    for i in range(N_DOCS)
]
ITEMS = [
    MemoryItem(text, "inproc", 1.0 - i / 20, meta, id=doc_id)
    for i, (text, meta, doc_id) in enumerate(ROWS)
]


class InProcessSource:
    """An agentkit MemorySource answering from memory: never suspends."""

    name = "inproc"

    async def query(
        self, query: str, *, k: int, ctx: Ctx, where: dict[str, Any] | None = None
    ) -> list[MemoryItem]:
        return ITEMS[:k]

    async def write(self, items: Any, *, ctx: Ctx) -> None:
        return None


class PlainRetriever(BaseRetriever):
    """The minimal LangChain retriever: same rows, same 10 documents."""

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        return [Document(page_content=t, metadata=dict(m), id=i) for t, m, i in ROWS]


def _batch(fn: Any, n: int) -> float:
    start = time.perf_counter()
    for _ in range(n):
        fn("fox")
    return (time.perf_counter() - start) / n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=60)
    parser.add_argument("--batch", type=int, default=200)
    args = parser.parse_args()

    ours = AgentkitRetriever(memory=InProcessSource(), k=N_DOCS)
    plain = PlainRetriever()
    same = [d.page_content for d in plain.invoke("fox")]
    assert [d.page_content for d in ours.invoke("fox")] == same
    for _ in range(3):  # warm-up
        _batch(ours.invoke, args.batch)
        _batch(plain.invoke, args.batch)

    ratios, a_times, b_times = [], [], []
    for r in range(args.rounds):
        if r % 2:
            b = _batch(plain.invoke, args.batch)
            a = _batch(ours.invoke, args.batch)
        else:
            a = _batch(ours.invoke, args.batch)
            b = _batch(plain.invoke, args.batch)
        a_times.append(a)
        b_times.append(b)
        ratios.append(a / b)
    ratio = statistics.median(ratios)
    a_us = statistics.median(a_times) * 1e6
    b_us = statistics.median(b_times) * 1e6
    print(f"AgentkitRetriever.invoke (10 items): {a_us:8.1f} us/call (median)")
    print(f"plain BaseRetriever.invoke (10 docs): {b_us:8.1f} us/call (median)")
    print(
        f"overhead ratio (median of {args.rounds} interleaved rounds): "
        f"{ratio:.3f}x  (target <= 1.10x)"
    )
    print(f"RESULT langchain_overhead_ratio={ratio:.4f}")
    print(f"RESULT langchain_overhead_ours_us={a_us:.2f}")
    print(f"RESULT langchain_overhead_plain_us={b_us:.2f}")


if __name__ == "__main__":
    main()
