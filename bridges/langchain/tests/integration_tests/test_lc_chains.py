"""AgentkitRetriever inside real LangChain compositions, and tracing through the stack."""

from __future__ import annotations

import time
from typing import Any
from uuid import UUID

from agentkit_langchain import (
    AgentkitEmbeddings,
    AgentkitRetriever,
    LangChainMemory,
    LangChainVectorPort,
)
from langchain_classic.retrievers import EnsembleRetriever
from langchain_core.callbacks import BaseCallbackHandler, CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableLambda, RunnablePassthrough
from langchain_core.tools import create_retriever_tool
from langchain_core.tracers.context import collect_runs
from langchain_core.vectorstores import InMemoryVectorStore

from agentkit.kernel import Ctx, Scope
from agentkit.state.memory import CompositeMemory, MemoryItem, VectorMemory
from agentkit.vector import HashingEmbedder

NOTES = {
    Scope("acme", "support"): ["acme refunds take 5 days", "acme support hours are 9-5"],
    Scope("globex", "support"): ["globex refunds take 30 days", "globex has no phone support"],
}


async def _tenant_memory() -> VectorMemory:
    store = InMemoryVectorStore(AgentkitEmbeddings(HashingEmbedder()))
    mem = VectorMemory(LangChainVectorPort(store), name="kb")
    for scope, notes in NOTES.items():
        await mem.write([MemoryItem(n, "kb") for n in notes], ctx=Ctx(scope))
    return mem


def format_docs(docs: list[Document]) -> str:
    return "\n".join(f"[{d.metadata['agentkit_source']}] {d.page_content}" for d in docs)


PROMPT = ChatPromptTemplate.from_template("Context:\n{context}\n\nQuestion: {question}")


async def test_lcel_rag_chain_serves_each_tenant_from_config() -> None:
    retriever = AgentkitRetriever(memory=await _tenant_memory(), k=2)
    chain = {"context": retriever | format_docs, "question": RunnablePassthrough()} | PROMPT
    for org, other in (("acme", "globex"), ("globex", "acme")):
        config: Any = {"configurable": {"org_id": org, "domain_id": "support"}}
        for value in (
            chain.invoke("refunds", config=config),
            await chain.ainvoke("refunds", config),
        ):
            text = value.to_string()
            assert f"[kb] {org} refunds" in text and other not in text
    # No tenant in config: the unscoped bucket, which holds nothing here.
    assert "[kb]" not in chain.invoke("refunds").to_string()


async def test_create_retriever_tool() -> None:
    retriever = AgentkitRetriever(memory=await _tenant_memory(), k=1)
    tool = create_retriever_tool(
        retriever, "support_kb", "Search support notes.", response_format="content_and_artifact"
    )
    config: Any = {"configurable": {"org_id": "acme", "domain_id": "support"}}
    message = tool.invoke(
        {"type": "tool_call", "id": "call-1", "name": "support_kb", "args": {"query": "refunds"}},
        config,
    )
    assert message.content == "acme refunds take 5 days"
    [doc] = message.artifact
    assert doc.metadata["agentkit_source"] == "kb" and doc.id
    text = await create_retriever_tool(retriever, "kb", "notes").ainvoke("phone", config)
    assert "acme" in text


class Keyword(BaseRetriever):
    """A plain sync retriever over a fixed list."""

    docs: list[Document]

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        return [d for d in self.docs if any(w in d.page_content for w in query.split())]


async def test_inside_ensemble_retriever_with_per_call_tenant() -> None:
    ours = AgentkitRetriever(memory=await _tenant_memory(), k=2)
    plain = Keyword(docs=[Document(page_content="generic refunds policy", id="g1")])
    ensemble = EnsembleRetriever(retrievers=[ours, plain], weights=[0.5, 0.5])
    config: Any = {"configurable": {"org_id": "globex", "domain_id": "support"}}
    for docs in (ensemble.invoke("refunds", config), await ensemble.ainvoke("refunds", config)):
        texts = [d.page_content for d in docs]
        assert "globex refunds take 30 days" in texts and "generic refunds policy" in texts
        assert not any(t.startswith("acme") for t in texts)


class Tracker(BaseCallbackHandler):
    def __init__(self) -> None:
        self.starts: dict[str, tuple[UUID, UUID | None]] = {}
        self.count = 0
        self.ends = 0

    def on_retriever_end(self, documents: Any, **kwargs: Any) -> None:
        self.ends += 1

    def on_retriever_start(
        self,
        serialized: Any,
        query: str,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        self.starts[kwargs.get("name") or str(run_id)] = (run_id, parent_run_id)
        self.count += 1


class SyncOnly(BaseRetriever):
    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        time.sleep(0.01)
        return [Document(page_content=f"sync hit for {query}")]


def _stack() -> AgentkitRetriever:
    store = InMemoryVectorStore(AgentkitEmbeddings(HashingEmbedder()))
    store.add_texts(["vector hit for cats"])
    mem = CompositeMemory(
        [LangChainMemory(store.as_retriever(), name="vec"), LangChainMemory(SyncOnly(), name="s")]
    )
    return AgentkitRetriever(memory=mem, k=4)


def _check_nesting(tracker: Tracker) -> None:
    # Exactly one run per retriever, each ended: no half-started run from a retry.
    assert (tracker.count, tracker.ends) == (3, 3)
    outer_id, _ = tracker.starts["AgentkitRetriever"]
    assert tracker.starts["VectorStoreRetriever"][1] == outer_id
    assert tracker.starts["SyncOnly"][1] == outer_id


def test_child_retriever_runs_nest_under_the_bridge_run_sync() -> None:
    tracker = Tracker()
    docs = _stack().invoke("cats", config={"callbacks": [tracker]})
    assert len(docs) == 2
    _check_nesting(tracker)


async def test_child_retriever_runs_nest_under_the_bridge_run_async() -> None:
    tracker = Tracker()
    docs = await _stack().ainvoke("cats", config={"callbacks": [tracker]})
    assert len(docs) == 2
    _check_nesting(tracker)


async def test_run_tree_inside_a_chain_sync_and_async() -> None:
    chain = RunnableLambda(lambda q: q) | _stack() | format_docs
    for call in ("sync", "async"):
        with collect_runs() as collected:
            if call == "sync":
                chain.invoke("cats")
            else:
                await chain.ainvoke("cats")
        [root] = collected.traced_runs
        [bridge] = [r for r in root.child_runs if r.name == "AgentkitRetriever"]
        assert sorted(r.name for r in bridge.child_runs) == ["SyncOnly", "VectorStoreRetriever"]
