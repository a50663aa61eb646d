"""Sync entry points: once per call, on one loop, cancellable, fork-safe."""

from __future__ import annotations

import asyncio
import multiprocessing
import signal
import threading
import warnings
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import pytest
from agentkit_llamaindex import AgentkitEmbedding, AgentkitRetriever, LlamaIndexMemory
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.retrievers import BaseRetriever, QueryFusionRetriever, RouterRetriever
from llama_index.core.retrievers.fusion_retriever import FUSION_MODES
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
from llama_index.core.selectors import EmbeddingSingleSelector
from llama_index.core.tools import RetrieverTool

from agentkit.kernel import Ctx
from agentkit.state.memory import CachedMemory, CompositeMemory, MemoryItem
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


def _stack(log: list[str] | None = None) -> CompositeMemory:
    class Topic:
        def __init__(self, name: str, texts: list[str]) -> None:
            self.name = name
            self.texts = texts

        async def query(
            self, query: str, *, k: int, ctx: Ctx, where: Any = None
        ) -> list[MemoryItem]:
            if log is not None:
                log.append(self.name)
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


def test_each_sync_retrieve_runs_the_query_exactly_once() -> None:
    src = Flaky()
    r = AgentkitRetriever(src, k=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # no "never awaited" leftovers
        got = [r.retrieve("q")[0].node.get_content() for _ in range(6)]
    # whether or not the query suspends (from call 4 on), it runs once per call
    assert got == [f"q #{i}" for i in range(1, 7)]
    assert src.calls == 6


def test_a_cache_in_the_stack_keeps_the_full_answer() -> None:
    log: list[str] = []
    r = AgentkitRetriever(CachedMemory(_stack(log), ttl_seconds=300), k=3)
    first = [n.node.node_id for n in r.retrieve("refunds")]
    assert first == ["billing-0", "shipping-0", "billing-1"]
    assert [n.node.node_id for n in r.retrieve("refunds")] == first
    assert sorted(log) == ["billing", "shipping"]  # one real run, then the cache


def test_loop_bound_resources_keep_working_across_many_sync_calls() -> None:
    class Locked(Flaky):
        def __init__(self) -> None:
            super().__init__()
            self.lock: asyncio.Lock | None = None
            self.loop: asyncio.AbstractEventLoop | None = None

        async def query(self, query: str, **kw: Any) -> list[MemoryItem]:
            if self.loop is None:
                self.loop, self.lock = asyncio.get_running_loop(), asyncio.Lock()
            assert asyncio.get_running_loop() is self.loop, "moved to another loop"
            assert self.lock is not None
            async with self.lock:
                await asyncio.sleep(0.001)
                return await super().query(query, **kw)

    src = Locked()
    r = AgentkitRetriever(src, k=1)
    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(lambda _: r.retrieve("q"), range(24)))
    assert all(len(nodes) == 1 for nodes in results) and src.calls == 24


class Hanging(Flaky):
    def __init__(self) -> None:
        super().__init__()
        self.started = threading.Event()
        self.cancelled = False

    async def query(self, query: str, **kw: Any) -> list[MemoryItem]:
        self.started.set()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            self.cancelled = True
            raise
        return []


def test_ctrl_c_during_retrieve_cancels_the_query() -> None:
    src = Hanging()
    main = threading.main_thread().ident
    assert main is not None and threading.current_thread().ident == main

    def press_ctrl_c() -> None:
        src.started.wait(10)
        signal.pthread_kill(main, signal.SIGINT)

    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    presser = threading.Thread(target=press_ctrl_c)
    presser.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            AgentkitRetriever(src).retrieve("q")
    finally:
        presser.join()
        signal.signal(signal.SIGINT, previous)
    assert src.cancelled


def _retrieve_in_child(conn: Any) -> None:
    try:
        nodes = AgentkitRetriever(_stack(), k=2).retrieve("refunds")
        conn.send([n.node.node_id for n in nodes])
    except BaseException as exc:
        conn.send(repr(exc))
    finally:
        conn.close()


def test_sync_retrieve_works_in_a_forked_child() -> None:
    assert len(AgentkitRetriever(_stack(), k=1).retrieve("q")) == 1  # loop up before fork
    fork = multiprocessing.get_context("fork")
    parent_end, child_end = fork.Pipe()
    child = fork.Process(target=_retrieve_in_child, args=(child_end,))
    child.start()
    try:
        assert parent_end.poll(30), "the child never answered"
        assert parent_end.recv() == ["billing-0", "shipping-0"]
    finally:
        child.join(30)
        if child.is_alive():
            child.kill()
            child.join()
    assert child.exitcode == 0


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
