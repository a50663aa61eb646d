"""Quickstart: a scoped hybrid memory over a vector store, a journal and a read-only KB."""

import asyncio
from dataclasses import dataclass

from agentkit.kernel import Ctx, Scope
from agentkit.state.journal import MutationJournal
from agentkit.state.memory import (
    CompositeMemory,
    JournalMemory,
    MemoryItem,
    ReadOnlyMemory,
    ScopedMemory,
    VectorMemory,
    rrf_rerank,
)
from agentkit.vector import InMemoryVectorStore


@dataclass
class Note:
    role: str
    text: str


async def main() -> None:
    ctx = Ctx(Scope(org_id="acme", domain_id="support"))

    # Three kinds of memory: the agent's own notes, the run's journal, a shared KB.
    notes = VectorMemory(InMemoryVectorStore(), name="notes")
    journal: MutationJournal[Note] = MutationJournal()
    kb = VectorMemory(InMemoryVectorStore(), name="kb")
    await kb.write(
        [
            MemoryItem("Refunds are issued within 14 days of the return.", "kb"),
            MemoryItem("Support is open Monday to Friday, 9 to 5.", "kb"),
        ],
        ctx=ctx,
    )

    # The vector stores score by cosine; the journal orders by time and gives no score.
    # rrf_rerank fuses each source's own ranking instead of comparing raw scores, so
    # every source's best match comes first. (The default, score_sort_rerank, suits
    # sources on one scale: here it would sink the unscored journal entry to the end.)
    memory = ScopedMemory(
        CompositeMemory(
            [
                ReadOnlyMemory(kb, on_write="ignore"),
                notes,
                JournalMemory(journal, render=lambda n: n.text),
            ],
            reranker=rrf_rerank,
        )
    )

    journal.record(Note("user", "The customer asked about refunds for order 42."))
    await memory.write(
        [
            MemoryItem("Order 42 shipped on Monday.", "notes"),
            MemoryItem("Order 42 arrived damaged; a full refund was promised.", "notes"),
        ],
        ctx=ctx,
    )  # the read-only KB ignores the write; the journal stores nothing it is given

    # One refund-related item from each source; "shipped on Monday" ranks below the cut.
    for item in await memory.query("refund", k=3, ctx=ctx):
        print(f"[{item.source:7}] {item.content}  (score={item.score:.4f})")


if __name__ == "__main__":
    asyncio.run(main())
