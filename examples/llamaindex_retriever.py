"""LlamaIndex and agentkit memory, both ways: a LlamaIndex index becomes one source of an
agentkit memory stack, and the stack goes back into LlamaIndex as a retriever.

Offline: agentkit's HashingEmbedder stands in for an embedding model, and nothing here
calls an LLM.
"""

import asyncio

from agentkit_llamaindex import AgentkitEmbedding, AgentkitRetriever, LlamaIndexMemory
from llama_index.core import VectorStoreIndex
from llama_index.core.schema import TextNode

from agentkit.kernel import Ctx, Scope
from agentkit.state.memory import CompositeMemory, MemoryItem, VectorMemory
from agentkit.vector import HashingEmbedder, InMemoryVectorStore


def main() -> None:
    # The LlamaIndex index you already have ...
    index = VectorStoreIndex(
        [
            TextNode(
                text="Refunds are issued within 14 days of the return arriving.", id_="faq-refunds"
            ),
            TextNode(
                text="Orders ship from the Berlin warehouse every Monday.", id_="faq-shipping"
            ),
        ],
        embed_model=AgentkitEmbedding(HashingEmbedder()),
    )

    # ... becomes one source beside agentkit's own per-tenant notes ...
    notes = VectorMemory(InMemoryVectorStore(), name="notes")
    acme = Ctx(Scope(org_id="acme", domain_id="support"))
    asyncio.run(
        notes.write([MemoryItem("Acme's order 42 was refunded on Friday.", "notes")], ctx=acme)
    )
    stack = CompositeMemory([LlamaIndexMemory(index.as_retriever(), name="faq"), notes])

    # ... and the stack is a LlamaIndex retriever again, bound to one tenant.
    retriever = AgentkitRetriever(stack, k=3).bind(ctx=acme)
    for hit in retriever.retrieve("when are refunds issued"):
        print(
            f"[{hit.node.metadata['agentkit_source']}] {hit.node.get_content()}  "
            f"(id={hit.node.node_id})"
        )


if __name__ == "__main__":
    main()
