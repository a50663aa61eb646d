"""Sync entry points with no event loop anywhere, and the runner's fallbacks."""

from __future__ import annotations

import asyncio
import warnings
from collections.abc import Iterable
from typing import Any

import numpy as np
from agentkit_llamaindex import AgentkitEmbedding, AgentkitRetriever, LlamaIndexMemory
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.retrievers import BaseRetriever, QueryFusionRetriever, RouterRetriever
from llama_index.core.retrievers.fusion_retriever import FUSION_MODES
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
from llama_index.core.selectors import EmbeddingSingleSelector
from llama_index.core.tools import RetrieverTool

from agentkit.kernel import Ctx
from agentkit.state.memory import CompositeMemory, MemoryItem
from agentkit.vector import HashingEmbedder


class Flaky:
    """Answers from memory at first, then starts awaiting real I/O (a cache gone cold)."""

    name = "flaky"

    def __init__(self) -> None:
        self.calls = 0

    async def query(self, query: str, *, k: int, ctx: Ctx, where: Any = None) -> list[MemoryItem]:
        self.calls += 1
        if self.calls > 3:
            await asyncio.sleep(0.01)
        return [MemoryItem(f"{query} #{self.calls}", "flaky", 1.0, id=f"f{self.calls}")]

    async def write(self, items: Iterable[MemoryItem], *, ctx: Ctx) -> None:
        return None


def _stack() -> CompositeMemory:
    class Topic:
        def __init__(self, name: str, texts: list[str]) -> None:
            self.name = name
            self.texts = texts

        async def query(
            self, query: str, *, k: int, ctx: Ctx, where: Any = None
        ) -> list[MemoryItem]:
            await asyncio.sleep(0)
            return [
                MemoryItem(t, self.name, 1.0 - i / 10, id=f"{self.name}-{i}")
                for i, t in enumerate(self.texts)
            ][:k]

        async def write(self, items: Iterable[MemoryItem], *, ctx: Ctx) -> None:
            return None

    return CompositeMemory(
        [
            Topic("billing", ["refunds take 5 days", "invoices are monthly"]),
            Topic("shipping", ["ships on mondays"]),
        ]
    )


def test_plain_sync_query_engine_fusion_and_router() -> None:
    stack = _stack()
    engine = RetrieverQueryEngine.from_args(AgentkitRetriever(stack, k=3))
    ids = [n.node.node_id for n in engine.query("refunds").source_nodes]
    assert ids == ["billing-0", "shipping-0", "billing-1"]

    r = AgentkitRetriever(stack, k=3)
    for mode in (FUSION_MODES.SIMPLE, FUSION_MODES.RECIPROCAL_RANK):
        fusion = QueryFusionRetriever(
            [r, r.bind(k=1)],
            mode=mode,
            num_queries=1,
            similarity_top_k=5,
        )
        assert {n.node.node_id for n in fusion.retrieve("q")} == {
            "billing-0",
            "shipping-0",
            "billing-1",
        }

    embed = AgentkitEmbedding(HashingEmbedder(dim=256))
    router = RouterRetriever(
        selector=EmbeddingSingleSelector.from_defaults(embed_model=embed),
        retriever_tools=[
            RetrieverTool.from_defaults(
                AgentkitRetriever(_stack(), k=1), description="billing invoices refunds"
            ),
            RetrieverTool.from_defaults(
                AgentkitRetriever(Flaky(), k=1), description="weather forecast"
            ),
        ],
    )
    assert [n.node.node_id for n in router.retrieve("billing invoices")] == ["billing-0"]


def test_a_memory_that_starts_suspending_falls_back_to_the_loop() -> None:
    src = Flaky()
    r = AgentkitRetriever(src, k=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # no "never awaited" leftovers
        got = [r.retrieve("q")[0].node.get_content() for _ in range(6)]
    # call 4 began inline, reached for the loop, and was re-run on the bridge's loop
    assert got == ["q #1", "q #2", "q #3", "q #5", "q #6", "q #7"]


async def test_native_async_retrievers_are_awaited_not_threaded() -> None:
    class AsyncOnly(BaseRetriever):
        def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
            raise AssertionError("the sync path must not be used")

        async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
            await asyncio.sleep(0.01)
            return [NodeWithScore(node=TextNode(id_="a", text="async hit"), score=0.5)]

    items = await LlamaIndexMemory(AsyncOnly()).query("q", k=3, ctx=Ctx())
    assert [(i.id, i.source, i.score) for i in items] == [("a", "llamaindex", 0.5)]


async def test_embedding_adapter_matches_the_agentkit_embedder() -> None:
    embedder = HashingEmbedder(dim=64)
    adapter = AgentkitEmbedding(embedder)
    want = (await embedder.embed(["alpha beta", "gamma"])).tolist()
    assert adapter.get_text_embedding_batch(["alpha beta", "gamma"]) == want
    assert await adapter.aget_query_embedding("gamma") == want[1]
    assert np.allclose(adapter.get_query_embedding("alpha beta"), want[0])
