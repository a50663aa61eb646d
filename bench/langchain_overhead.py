"""The seam's own cost: AgentkitRetriever over a hand-written LangChain retriever.

Both return the same 10 Documents (same text, metadata, ids), built per call through
``Document(...)``, the public constructor, as a real retriever builds them from its
backing data. Ours adds the whole bridge: per-call tenant resolution, an agentkit
memory query (an in-process source) and the MemoryItem -> Document mapping; its sync
``invoke`` also hands the query to the interop layer's background loop and waits (the
query runs once, there). The baseline implements both ``_get_relevant_documents`` and
a native ``_aget_relevant_documents``, so neither side pays a thread hop the other
does not.

Targets: async (``ainvoke``) <= 1.15x, sync (``invoke``) <= 1.6x, as the median of
per-round wall-time ratios over interleaved rounds.

    python bench/langchain_overhead.py [--rounds N] [--calls N]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from agentkit_langchain import AgentkitRetriever, to_document
from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever

from agentkit.kernel import Ctx
from agentkit.state.memory import MemoryItem

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _paired import handoff_us, paired_async, paired_sync, report

ASYNC_TARGET = 1.15
SYNC_TARGET = 1.6
N_DOCS = 10
ITEMS = [
    MemoryItem(
        f"passage {i}: the quick brown fox",
        "inproc",
        1.0 - i / 20,
        {"i": i, "source": f"f{i}.md"},
        id=f"d{i}",
    )
    for i in range(N_DOCS)
]
# The baseline's backing rows: exactly what the bridge's documents hold.
ROWS = [(d.page_content, dict(d.metadata), d.id) for d in map(to_document, ITEMS)]


class InProcessSource:
    """An agentkit MemorySource answering from memory."""

    name = "inproc"

    async def query(
        self, query: str, *, k: int, ctx: Ctx, where: dict[str, Any] | None = None
    ) -> list[MemoryItem]:
        return ITEMS[:k]

    async def write(self, items: Any, *, ctx: Ctx) -> None:
        return None


class PlainRetriever(BaseRetriever):
    """The minimal LangChain retriever over the same rows, sync and native async."""

    def _docs(self) -> list[Document]:
        return [Document(page_content=t, metadata=dict(m), id=i) for t, m, i in ROWS]

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        return self._docs()

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun
    ) -> list[Document]:
        return self._docs()


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--rounds", type=int, default=60)
    parser.add_argument("--calls", type=int, default=100)
    args = parser.parse_args()

    ours = AgentkitRetriever(memory=InProcessSource(), k=N_DOCS)
    plain = PlainRetriever()
    assert ours.invoke("fox") == plain.invoke("fox")  # the very same documents

    print(f"{args.rounds} interleaved rounds x {args.calls} calls, {N_DOCS} documents per call")
    ok_async = report(
        "langchain_overhead_async",
        "ainvoke: AgentkitRetriever vs hand-written retriever",
        paired_async(
            lambda: ours.ainvoke("fox"),
            lambda: plain.ainvoke("fox"),
            rounds=args.rounds,
            calls=args.calls,
        ),
        ASYNC_TARGET,
    )
    ok_sync = report(
        "langchain_overhead_sync",
        "invoke: AgentkitRetriever (one loop handoff) vs hand-written retriever",
        paired_sync(
            lambda: ours.invoke("fox"),
            lambda: plain.invoke("fox"),
            rounds=args.rounds,
            calls=args.calls,
        ),
        SYNC_TARGET,
    )
    wall, cpu = handoff_us()
    print(
        f"sync: the bare loop handoff (run_sync of a no-op) is {wall:.1f} us wall, {cpu:.1f} us cpu"
    )
    print(f"RESULT langchain_overhead_handoff_us={wall:.2f}")
    print(f"RESULT langchain_overhead_target_met={int(ok_async and ok_sync)}")


if __name__ == "__main__":
    main()
