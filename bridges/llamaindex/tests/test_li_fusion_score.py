"""AgentkitRetriever under QueryFusionRetriever with generated queries: the score opt-out.

QueryFusionRetriever fuses the copies of a node that several queries returned by a
hash of its text and metadata. Each query scores a record differently, so with the
score stamped into metadata the copies never meet: reciprocal-rank fusion never adds
up a record's ranks. ``include_score=False`` is the documented way out; the default
stays lossless.
"""

from __future__ import annotations

from typing import Any

import pytest
from agentkit_llamaindex import AgentkitRetriever, from_node
from llama_index.core.llms import CompletionResponse, CustomLLM, LLMMetadata
from llama_index.core.llms.callbacks import llm_completion_callback
from llama_index.core.retrievers import QueryFusionRetriever

from agentkit.kernel import Ctx
from agentkit.state.memory import MemoryItem, VectorMemory
from agentkit.vector import InMemoryVectorStore

TEXTS = {
    "r1": "refunds are paid within 30 days",
    "r2": "a refund needs the original receipt",
    "s1": "shipping to europe takes a week",
}
RRF_K = 60.0  # LlamaIndex's reciprocal-rank constant


class ThreeQueries(CustomLLM):
    """Stands in for the LLM that writes the extra queries."""

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata()

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        return CompletionResponse(
            text="refund receipt rules\nwhen are refunds paid\nhow long do refunds take"
        )

    @llm_completion_callback()
    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> Any:
        raise NotImplementedError


async def _memory() -> VectorMemory:
    memory = VectorMemory(InMemoryVectorStore())
    await memory.write(
        [MemoryItem(t, "caller", metadata={"id": i}) for i, t in TEXTS.items()], ctx=Ctx()
    )
    return memory


def _fusion(retriever: AgentkitRetriever) -> QueryFusionRetriever:
    return QueryFusionRetriever(
        [retriever],
        llm=ThreeQueries(),
        num_queries=4,  # the question plus three generated ones
        mode="reciprocal_rerank",
        similarity_top_k=10,
        use_async=True,
    )


async def test_include_score_false_lets_fusion_add_up_a_records_ranks() -> None:
    retriever = AgentkitRetriever(await _memory(), k=3, include_score=False)
    nodes = await _fusion(retriever).aretrieve("refunds?")
    assert sorted(n.node.node_id for n in nodes) == sorted(TEXTS)
    # Every record came back from all four queries, so its fused score is a sum of
    # four reciprocal ranks; unfused copies would each hold a single 1/(60+rank).
    assert all((n.score or 0.0) > 3 / (RRF_K + 3) for n in nodes)
    assert all("agentkit_score" not in n.node.metadata for n in nodes)
    back = from_node(nodes[0])
    assert (back.source, back.id) == ("vector", nodes[0].node.node_id)


async def test_by_default_copies_stay_apart_and_the_score_round_trips() -> None:
    memory = await _memory()
    retriever = AgentkitRetriever(memory, k=3)
    nodes = await _fusion(retriever).aretrieve("refunds?")
    # What include_score=False exists for: no record's ranks were added up.
    assert all((n.score or 0.0) <= 1 / RRF_K for n in nodes)
    direct = await memory.query("refund receipt rules", k=3, ctx=Ctx())
    assert [from_node(n) for n in await retriever.aretrieve("refund receipt rules")] == direct


def test_include_score_must_be_a_bool() -> None:
    with pytest.raises(TypeError, match="include_score"):
        AgentkitRetriever(VectorMemory(InMemoryVectorStore()), include_score="no")  # type: ignore[arg-type]
