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
)
from agentkit.vector import InMemoryVectorStore


@dataclass
class Note:
    role: str
    text: str


async def main() -> None:
    ctx = Ctx(Scope(org_id="acme", domain_id="support"))

    notes = VectorMemory(InMemoryVectorStore(), name="notes")
    journal: MutationJournal[Note] = MutationJournal()
    kb = VectorMemory(InMemoryVectorStore(), name="kb")
    await kb.write([MemoryItem("Refunds are issued within 14 days.", "kb")], ctx=ctx)

    memory = ScopedMemory(
        CompositeMemory([notes, JournalMemory(journal, render=lambda n: n.text),
                         ReadOnlyMemory(kb, on_write="ignore")])
    )

    journal.record(Note("user", "The customer asked about refunds for order 42."))
    await memory.write([MemoryItem("Order 42 shipped on Monday.", "notes")], ctx=ctx)

    for item in await memory.query("refunds", k=3, ctx=ctx):
        print(f"[{item.source}] {item.content}  (score={item.score}, id={item.id})")


if __name__ == "__main__":
    asyncio.run(main())
