"""LangChain and agentkit memory, both ways: a LangChain vector store becomes one source of
an agentkit memory stack, and the stack goes back into LangChain as a retriever.

Offline: agentkit's HashingEmbedder stands in for an embedding model on both sides.
"""

import asyncio

from agentkit_langchain import AgentkitEmbeddings, AgentkitRetriever, LangChainMemory
from langchain_core.documents import Document
from langchain_core.vectorstores import InMemoryVectorStore as LangChainVectorStore

from agentkit.kernel import Ctx, Scope
from agentkit.state.memory import CompositeMemory, MemoryItem, VectorMemory
from agentkit.vector import HashingEmbedder, InMemoryVectorStore


def main() -> None:
    # The LangChain vector store you already have ...
    faq = LangChainVectorStore(AgentkitEmbeddings(HashingEmbedder()))
    faq.add_documents(
        [
            Document("Refunds are issued within 14 days of the return arriving.", id="faq-refunds"),
            Document("Orders ship from the Berlin warehouse every Monday.", id="faq-shipping"),
        ]
    )

    # ... becomes one source beside agentkit's own per-tenant notes ...
    notes = VectorMemory(InMemoryVectorStore(), name="notes")
    acme = Ctx(Scope(org_id="acme", domain_id="support"))
    asyncio.run(
        notes.write([MemoryItem("Acme's order 42 was refunded on Friday.", "notes")], ctx=acme)
    )
    stack = CompositeMemory([LangChainMemory(faq.as_retriever(), name="faq"), notes])

    # ... and the stack is a LangChain retriever again; the tenant travels per call.
    retriever = AgentkitRetriever(memory=stack, k=3)
    config = {"configurable": {"org_id": "acme", "domain_id": "support"}}
    for doc in retriever.invoke("when are refunds issued", config=config):
        print(f"[{doc.metadata['agentkit_source']}] {doc.page_content}  (id={doc.id})")


if __name__ == "__main__":
    main()
