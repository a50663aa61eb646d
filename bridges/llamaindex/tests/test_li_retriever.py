"""AgentkitRetriever inside real LlamaIndex machinery, sync and async."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any

import pytest
from agentkit_llamaindex import AgentkitEmbedding, AgentkitRetriever
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.retrievers import QueryFusionRetriever, RouterRetriever
from llama_index.core.retrievers.fusion_retriever import FUSION_MODES
from llama_index.core.selectors import EmbeddingSingleSelector
from llama_index.core.tools import RetrieverTool

from agentkit.kernel import Ctx, Scope
from agentkit.state.memory import CompositeMemory, MemoryItem


class TenantNotes:
    """A small multi-tenant source: each scope sees only its own notes."""

    name = "notes"

    def __init__(self, notes: dict[Scope, list[MemoryItem]], delay: float = 0.0) -> None:
        self.notes = notes
        self.delay = delay
        self.seen: list[tuple[str, int, Scope, dict[str, Any] | None]] = []

    async def query(
        self, query: str, *, k: int, ctx: Ctx, where: dict[str, Any] | None = None
    ) -> list[MemoryItem]:
        self.seen.append((query, k, ctx.scope, where))
        if self.delay:
            await asyncio.sleep(self.delay)
        hits = [
            i
            for i in self.notes.get(ctx.scope, [])
            if not where or all(i.metadata.get(k2) == v for k2, v in where.items())
        ]
        return hits[:k]

    async def write(self, items: Iterable[MemoryItem], *, ctx: Ctx) -> None:
        return None


ACME = Scope("acme", "support")
GLOBEX = Scope("globex", "support")


def _notes(delay: float = 0.0) -> TenantNotes:
    return TenantNotes(
        {
            ACME: [
                MemoryItem("acme refunds take 5 days", "notes", 0.9, {"topic": "refund"}, id="a1"),
                MemoryItem("acme ships on mondays", "notes", 0.8, {"topic": "ship"}, id="a2"),
                MemoryItem("acme has no score", "notes", None, {"topic": "misc"}, id="a3"),
            ],
            GLOBEX: [
                MemoryItem(
                    "globex refunds are instant", "notes", 0.7, {"topic": "refund"}, id="g1"
                ),
            ],
        },
        delay,
    )


def test_is_a_real_retriever_keeping_order_ids_scores_metadata() -> None:
    r = AgentkitRetriever(_notes(), k=3, ctx=Ctx(ACME))
    nodes = r.retrieve("refunds")
    assert [n.node.node_id for n in nodes] == ["a1", "a2", "a3"]
    assert [n.score for n in nodes] == [0.9, 0.8, None]
    assert nodes[0].node.metadata["topic"] == "refund"
    assert nodes[0].node.metadata["agentkit_source"] == "notes"


async def test_async_path_is_native() -> None:
    src = _notes(delay=0.1)
    r = AgentkitRetriever(src, k=2, ctx=Ctx(ACME))
    beats = 0
    done = asyncio.Event()

    async def heartbeat() -> None:
        nonlocal beats
        while not done.is_set():
            await asyncio.sleep(0.005)
            beats += 1

    async def retrieve() -> list[Any]:
        try:
            return await r.aretrieve("q")
        finally:
            done.set()

    nodes, _ = await asyncio.gather(retrieve(), heartbeat())
    assert [n.node.node_id for n in nodes] == ["a1", "a2"]
    assert beats >= 3  # the loop kept running while the memory was awaited


async def test_sync_retrieve_works_inside_a_running_loop() -> None:
    src = _notes(delay=0.01)
    r = AgentkitRetriever(src, k=1, ctx=Ctx(ACME))
    assert [n.node.node_id for n in r.retrieve("q")] == ["a1"]
    assert [n.node.node_id for n in r.retrieve("q")] == ["a1"]
    assert len(src.seen) == 2  # once per call


class CtxRecorder:
    """Remembers the Ctx objects it was handed."""

    name = "ctx-recorder"

    def __init__(self) -> None:
        self.ctxs: list[Ctx] = []

    async def query(self, query: str, *, k: int, ctx: Ctx, where: Any = None) -> list[MemoryItem]:
        self.ctxs.append(ctx)
        await asyncio.sleep(0)
        return [MemoryItem("hit", self.name, 1.0, id="h")]

    async def write(self, items: Iterable[MemoryItem], *, ctx: Ctx) -> None:
        return None


async def test_the_memory_gets_the_bound_ctx_object_sync_and_async() -> None:
    src = CtxRecorder()
    mine, theirs = Ctx(ACME), Ctx(GLOBEX)
    r = AgentkitRetriever(src, ctx=mine)
    r.retrieve("q")
    await r.aretrieve("q")
    r.bind(ctx=theirs).retrieve("q")
    await asyncio.to_thread(r.retrieve, "q")
    assert [c is mine for c in src.ctxs] == [True, True, False, True]
    assert src.ctxs[2] is theirs


def test_nodes_are_fresh_per_call() -> None:
    r = AgentkitRetriever(_notes(), k=2, ctx=Ctx(ACME))
    first = r.retrieve("q")
    first[0].score = 123.0
    second = r.retrieve("q")
    assert second[0] is not first[0] and second[0].score == 0.9


def test_ids_are_unique_within_a_result() -> None:
    class Dupes(TenantNotes):
        async def query(self, query: str, *, k: int, ctx: Ctx, where: Any = None) -> Any:
            return [MemoryItem("one", "a", id="x"), MemoryItem("two", "b", id="x")]

    nodes = AgentkitRetriever(Dupes({}), k=4).retrieve("q")
    assert len(nodes) == 2  # LlamaIndex would silently drop a repeated id
    assert [n.node.get_content() for n in nodes] == ["one", "two"]


def test_tenants_via_ctx_and_bind() -> None:
    src = _notes()
    acme = AgentkitRetriever(src, k=4, ctx=Ctx(ACME))
    globex = acme.bind(ctx=Ctx(GLOBEX))
    assert globex is not acme and acme.ctx is not None and acme.ctx.scope == ACME
    assert [n.node.node_id for n in globex.retrieve("refunds")] == ["g1"]
    assert [n.node.node_id for n in acme.retrieve("refunds")] == ["a1", "a2", "a3"]
    assert AgentkitRetriever(src).retrieve("refunds") == []  # None means an empty Ctx


def test_where_and_k_reach_the_memory() -> None:
    src = _notes()
    r = AgentkitRetriever(src, k=2, where={"topic": "ship"}, ctx=Ctx(ACME))
    assert [n.node.node_id for n in r.retrieve("q")] == ["a2"]
    assert src.seen[-1][1:] == (2, ACME, {"topic": "ship"})


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "3"])
def test_k_is_validated(bad: Any) -> None:
    with pytest.raises((ValueError, TypeError)):
        AgentkitRetriever(_notes(), k=bad)
    with pytest.raises((ValueError, TypeError)):
        AgentkitRetriever(_notes()).bind(k=bad)


def test_rejects_non_memory_and_bad_ctx() -> None:
    with pytest.raises(TypeError):
        AgentkitRetriever(object())  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        AgentkitRetriever(_notes(), ctx=ACME)  # type: ignore[arg-type]


async def test_query_engine_source_nodes_keep_ids_scores_metadata() -> None:
    stack = CompositeMemory([_notes()])
    engine = RetrieverQueryEngine.from_args(AgentkitRetriever(stack, k=2, ctx=Ctx(ACME)))
    for response in (engine.query("refunds?"), await engine.aquery("refunds?")):
        got = [(n.node.node_id, n.score, n.node.metadata["topic"]) for n in response.source_nodes]
        assert got == [("a1", 0.9, "refund"), ("a2", 0.8, "ship")]


@pytest.mark.parametrize("mode", [FUSION_MODES.SIMPLE, FUSION_MODES.RECIPROCAL_RANK])
async def test_inside_query_fusion(mode: FUSION_MODES) -> None:
    src = _notes()
    acme = AgentkitRetriever(src, k=3, ctx=Ctx(ACME))
    globex = acme.bind(ctx=Ctx(GLOBEX))
    fusion = QueryFusionRetriever(
        [acme, globex], mode=mode, num_queries=1, similarity_top_k=4, use_async=True
    )
    for nodes in (
        await asyncio.to_thread(fusion.retrieve, "refunds"),
        await fusion.aretrieve("refunds"),
    ):
        ids = {n.node.node_id for n in nodes}
        assert ids == {"a1", "a2", "a3", "g1"}
    # fusion rewrote scores on its own copies; ours are untouched next time
    assert [n.score for n in acme.retrieve("refunds")] == [0.9, 0.8, None]


async def test_inside_router_retriever_with_an_offline_selector() -> None:
    src = _notes()
    tools = [
        RetrieverTool.from_defaults(
            AgentkitRetriever(src, k=4, ctx=Ctx(ACME)),
            description="acme company refunds shipping notes",
        ),
        RetrieverTool.from_defaults(
            AgentkitRetriever(src, k=4, ctx=Ctx(GLOBEX)),
            description="globex corporation notes",
        ),
    ]
    from llama_index.core import Settings

    embed = Settings.embed_model
    assert isinstance(embed, AgentkitEmbedding)
    router = RouterRetriever(
        selector=EmbeddingSingleSelector.from_defaults(embed_model=embed),
        retriever_tools=tools,
    )
    sync_nodes = await asyncio.to_thread(router.retrieve, "globex corporation")
    async_nodes = await router.aretrieve("acme company refunds")
    assert [n.node.node_id for n in sync_nodes] == ["g1"]
    assert [n.node.node_id for n in async_nodes] == ["a1", "a2", "a3"]
