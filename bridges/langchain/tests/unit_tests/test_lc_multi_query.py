"""AgentkitRetriever under MultiQueryRetriever: the score opt-out for equality dedupe.

MultiQueryRetriever asks its retriever once per generated query and keeps one copy
of each *equal* Document. Every query scores a record differently, so with the
score stamped into metadata no two copies are equal; ``include_score=False`` is the
documented way out, and the default stays lossless.
"""

from __future__ import annotations

import pytest
from agentkit_langchain import AgentkitRetriever, from_document
from langchain_classic.retrievers.multi_query import MultiQueryRetriever
from langchain_core.language_models import FakeListLLM

from agentkit.kernel import Ctx
from agentkit.state.memory import MemoryItem, VectorMemory
from agentkit.vector import InMemoryVectorStore

TEXTS = {
    "r1": "refunds are paid within 30 days",
    "r2": "a refund needs the original receipt",
    "s1": "shipping to europe takes a week",
    "h1": "the office opens at nine",
}
# Three different phrasings, as an LLM would generate them: every record scores
# differently under each.
QUERIES = "how long do refunds take\nrefund receipt rules\nwhen are refunds paid"


async def _memory() -> VectorMemory:
    memory = VectorMemory(InMemoryVectorStore())
    await memory.write(
        [MemoryItem(t, "caller", metadata={"id": i, "kind": "faq"}) for i, t in TEXTS.items()],
        ctx=Ctx(),
    )
    return memory


def _multi(retriever: AgentkitRetriever) -> MultiQueryRetriever:
    return MultiQueryRetriever.from_llm(retriever=retriever, llm=FakeListLLM(responses=[QUERIES]))


async def test_by_default_every_record_comes_back_once_per_query_with_its_score() -> None:
    memory = await _memory()
    retriever = AgentkitRetriever(memory=memory, k=4)
    docs = await _multi(retriever).ainvoke("refunds?")
    assert len(docs) == 3 * len(TEXTS)  # what the issue reports: no dedupe happens
    # ... because the default is lossless: each document carries its query's score.
    direct = await memory.query("refund receipt rules", k=4, ctx=Ctx())
    back = [from_document(d) for d in await retriever.ainvoke("refund receipt rules")]
    assert back == direct and all(isinstance(i.score, float) for i in back)


@pytest.mark.parametrize("mode", ["async", "sync"])
async def test_include_score_false_gives_each_record_once(mode: str) -> None:
    memory = await _memory()
    retriever = AgentkitRetriever(memory=memory, k=4, include_score=False)
    multi = _multi(retriever)
    docs = await multi.ainvoke("refunds?") if mode == "async" else multi.invoke("refunds?")
    assert sorted(d.id or "" for d in docs) == sorted(TEXTS)
    items = {i.id: i for i in map(from_document, docs)}
    assert {i: item.content for i, item in items.items()} == TEXTS
    # Everything but the score survives: source, ids, the caller's metadata.
    assert all(
        (item.source, item.score, dict(item.metadata)) == ("vector", None, {"kind": "faq"})
        for item in items.values()
    )
    assert all("agentkit_score" not in d.metadata for d in docs)


def test_include_score_must_be_a_bool() -> None:
    with pytest.raises(ValueError, match="include_score"):
        AgentkitRetriever(memory=VectorMemory(InMemoryVectorStore()), include_score="no")
