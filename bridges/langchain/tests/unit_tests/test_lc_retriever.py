"""AgentkitRetriever: an agentkit memory stack behind LangChain's retriever API."""

from __future__ import annotations

import asyncio
import multiprocessing
import signal
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from agentkit_langchain import AgentkitRetriever
from langchain_core.documents import Document

from agentkit.kernel import Ctx, Scope
from agentkit.state.journal import MutationJournal
from agentkit.state.memory import CachedMemory, CompositeMemory, JournalMemory, MemoryItem


class Recorder:
    """A MemorySource that answers from a list and remembers how it was asked."""

    name = "rec"

    def __init__(self, n: int = 6, *, suspend: bool = False, name: str = "rec") -> None:
        self.name = name
        # Deliberately NOT sorted by score: the retriever must keep this order.
        self.items = [
            MemoryItem(f"fact {i}", "rec", float(i % 3), {"i": i}, id=f"r{i}") for i in range(n)
        ]
        self.calls: list[dict[str, Any]] = []
        self.suspend = suspend

    async def query(
        self, query: str, *, k: int, ctx: Ctx, where: dict[str, Any] | None = None
    ) -> list[MemoryItem]:
        self.calls.append(
            {
                "query": query,
                "k": k,
                "scope": ctx.scope,
                "ctx": ctx,
                "where": where,
                "loop": asyncio.get_running_loop(),
                "thread": threading.current_thread().name,
            }
        )
        if self.suspend:
            await asyncio.sleep(0.001)
        return self.items[:k]

    async def write(self, items: Any, *, ctx: Ctx) -> None:
        return None


def test_defaults_and_keyword_construction() -> None:
    mem = Recorder()
    r = AgentkitRetriever(memory=mem, k=4, where=None, scope=None, ctx=None)
    assert (r.k, r.where, r.scope, r.ctx) == (4, None, None, None)
    assert [d.page_content for d in r.invoke("q")] == ["fact 0", "fact 1", "fact 2", "fact 3"]


@pytest.mark.parametrize(
    "kwargs",
    [{"top_k": 3}, {"k": 0}, {"k": True}, {"k": "3"}, {"where": "role=user"}, {"scope": "org"}],
)
def test_bad_constructor_arguments_raise(kwargs: dict[str, Any]) -> None:
    with pytest.raises((ValueError, TypeError)):
        AgentkitRetriever(memory=Recorder(), **kwargs)


def test_memory_must_be_a_source_and_tenant_given_once() -> None:
    with pytest.raises(TypeError, match="MemorySource"):
        AgentkitRetriever(memory=object())
    with pytest.raises(ValueError, match="scope or ctx"):
        AgentkitRetriever(memory=Recorder(), scope=Scope("a", "b"), ctx=Ctx(Scope("c", "d")))


def test_keeps_the_memory_order() -> None:
    docs = AgentkitRetriever(memory=Recorder(), k=6).invoke("q")
    scores = [d.metadata["agentkit_score"] for d in docs]
    assert scores == [0.0, 1.0, 2.0, 0.0, 1.0, 2.0]  # as returned, not re-sorted


def test_per_call_k_and_where_merge_over_the_constructor() -> None:
    mem = Recorder()
    r = AgentkitRetriever(memory=mem, k=4, where={"role": "user", "lang": "en"})
    assert len(r.invoke("q", k=2)) == 2
    r.invoke("q", where={"lang": "de", "topic": "x"})
    assert mem.calls[-1]["where"] == {"role": "user", "lang": "de", "topic": "x"}
    assert mem.calls[-1]["k"] == 4
    assert r.where == {"role": "user", "lang": "en"}  # the constructor's is untouched


@pytest.mark.parametrize("kwargs", [{"k": 0}, {"k": 2.5}, {"where": [1]}, {"limit": 3}])
def test_bad_call_arguments_raise_before_the_memory_is_touched(kwargs: dict[str, Any]) -> None:
    mem = Recorder()
    with pytest.raises((ValueError, TypeError)):
        AgentkitRetriever(memory=mem).invoke("q", **kwargs)
    assert mem.calls == []


def test_tenant_from_config_with_stated_precedence() -> None:
    mem = Recorder()
    r = AgentkitRetriever(memory=mem, scope=Scope("default-org", "default-dom"))
    r.invoke("q")
    assert mem.calls[-1]["scope"] == Scope("default-org", "default-dom")
    r.invoke("q", config={"configurable": {"org_id": "acme", "domain_id": "sales"}})
    assert mem.calls[-1]["scope"] == Scope("acme", "sales")
    mine = Ctx(Scope("ctx-org", "ctx-dom"))
    r.invoke(
        "q", config={"configurable": {"agentkit_ctx": mine, "org_id": "acme", "domain_id": "x"}}
    )
    # The whole context wins over the ids, and the memory gets that very object.
    assert mem.calls[-1]["ctx"] is mine
    with pytest.raises(TypeError, match="agentkit_ctx"):
        r.invoke("q", config={"configurable": {"agentkit_ctx": "acme"}})


async def test_tenant_from_config_async() -> None:
    mem = Recorder()
    r = AgentkitRetriever(memory=mem)
    await r.ainvoke("q", config={"configurable": {"org_id": "o1", "domain_id": "d1"}})
    assert mem.calls[-1]["scope"] == Scope("o1", "d1")
    docs = await r.ainvoke("q", k=1)
    assert len(docs) == 1 and mem.calls[-1]["scope"] == Scope()
    mine = Ctx(Scope("o2", "d2"))
    await r.ainvoke("q", config={"configurable": {"agentkit_ctx": mine}})
    assert mem.calls[-1]["ctx"] is mine


def test_constructor_ctx_is_handed_over_as_is() -> None:
    mem = Recorder(suspend=True)
    ctx = Ctx(Scope("o", "d"))
    r = AgentkitRetriever(memory=mem, ctx=ctx)
    r.invoke("q")
    assert mem.calls[-1]["ctx"] is ctx


def test_constructor_ctx_receives_observations_once() -> None:
    """A composite member failure is reported on the caller's ctx exactly once per call."""

    class Broken(Recorder):
        name = "broken"

        async def query(self, query: str, **kw: Any) -> list[MemoryItem]:
            raise RuntimeError("down")

    ctx = Ctx(Scope("o", "d"))
    journal: MutationJournal[str] = MutationJournal()
    journal.record("the deploy failed")
    mem = CompositeMemory([Broken(), JournalMemory(journal, render=str)], on_error="skip")
    r = AgentkitRetriever(memory=mem, ctx=ctx)
    docs = r.invoke("deploy")
    assert [d.page_content for d in docs] == ["the deploy failed"]
    assert len(ctx.timeline.of("memory.source_failed")) == 1
    docs = r.invoke("deploy")
    assert len(ctx.timeline.of("memory.source_failed")) == 2


def test_each_sync_call_runs_the_query_exactly_once() -> None:
    quick, slow = Recorder(2, name="quick"), Recorder(2, suspend=True, name="slow")
    r = AgentkitRetriever(memory=CompositeMemory([quick, slow], dedupe=None), k=4)
    for n in range(1, 6):
        assert len(r.invoke("q")) == 4
        assert (len(quick.calls), len(slow.calls)) == (n, n)


def test_a_cache_in_the_stack_keeps_the_full_answer() -> None:
    """The cache stores what the one real run returned: nothing degraded to serve later."""
    quick, slow = Recorder(2, name="quick"), Recorder(2, suspend=True, name="slow")
    stack = CompositeMemory([quick, slow], dedupe=None, on_error="skip")
    r = AgentkitRetriever(memory=CachedMemory(stack, ttl_seconds=300), k=4)
    first = [d.page_content for d in r.invoke("q")]
    assert sorted(first) == ["fact 0", "fact 0", "fact 1", "fact 1"]
    assert [d.page_content for d in r.invoke("q")] == first  # served from the cache
    assert (len(quick.calls), len(slow.calls)) == (1, 1)


def test_suspending_memory_runs_on_one_long_lived_loop() -> None:
    mem = Recorder(suspend=True)
    r = AgentkitRetriever(memory=mem, k=2)
    for _ in range(3):
        assert len(r.invoke("q")) == 2
    assert len({id(c["loop"]) for c in mem.calls}) == 1  # never a fresh asyncio.run per call


def test_loop_bound_resources_survive_calls_from_many_threads() -> None:
    class Locked(Recorder):
        def __init__(self) -> None:
            super().__init__(suspend=True)
            self.lock = asyncio.Lock()  # binds to the first loop that waits on it

        async def query(self, query: str, **kw: Any) -> list[MemoryItem]:
            async with self.lock:
                return await super().query(query, **kw)

    r = AgentkitRetriever(memory=Locked(), k=1)
    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(lambda _: r.invoke("q"), range(16)))
    assert all(len(docs) == 1 for docs in results)


async def test_sync_invoke_works_inside_a_running_loop() -> None:
    for mem in (Recorder(), Recorder(suspend=True)):
        ctx = Ctx(Scope("o", "d"))
        docs = AgentkitRetriever(memory=mem, k=2, ctx=ctx).invoke("q")
        assert [d.page_content for d in docs] == ["fact 0", "fact 1"]
        assert len(mem.calls) == 1 and mem.calls[0]["ctx"] is ctx


def test_sync_invoke_leaves_no_unawaited_coroutines() -> None:
    import gc
    import warnings

    mem = CompositeMemory([Recorder(2), Recorder(3, suspend=True)], dedupe=None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        docs = AgentkitRetriever(memory=mem, k=5).invoke("q")
        gc.collect()
    assert len(docs) == 5
    assert not [w for w in caught if "never awaited" in str(w.message)]


def test_sync_invoke_schedules_nothing_on_the_threads_idle_loop() -> None:
    """A thread may have a loop set that nobody runs: the query must not land there."""
    from agentkit.state.files import InMemoryFiles
    from agentkit.state.memory import FileMemory

    box: list[Any] = []

    def work() -> None:
        idle = asyncio.new_event_loop()
        files = InMemoryFiles()
        idle.run_until_complete(files.create("/a.md", "refunds are fast"))
        idle.run_until_complete(files.create("/b.md", "refunds are slow"))
        asyncio.set_event_loop(idle)  # set, never run: what gather() would fall back to
        try:
            docs = AgentkitRetriever(memory=FileMemory(files), k=3).invoke("refunds")
            box.append((len(docs), len(asyncio.all_tasks(idle))))
        finally:
            asyncio.set_event_loop(None)
            idle.close()

    thread = threading.Thread(target=work)
    thread.start()
    thread.join()
    assert box == [(2, 0)]


def test_errors_from_the_memory_reach_the_caller() -> None:
    class Failing(Recorder):
        async def query(self, query: str, **kw: Any) -> list[MemoryItem]:
            raise LookupError("backend said no")

    with pytest.raises(LookupError, match="backend said no"):
        AgentkitRetriever(memory=Failing()).invoke("q")


def test_returns_documents_for_batch_and_stream() -> None:
    r = AgentkitRetriever(memory=Recorder(), k=1)
    batches = r.batch(["a", "b"], config={"configurable": {"org_id": "o", "domain_id": "d"}})
    assert all(isinstance(b[0], Document) for b in batches)


class Hanging(Recorder):
    """Waits on I/O that never answers; notes its cancellation."""

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


def test_ctrl_c_during_invoke_cancels_the_query() -> None:
    mem = Hanging()
    main = threading.main_thread().ident
    assert main is not None and threading.current_thread().ident == main

    def press_ctrl_c() -> None:
        mem.started.wait(10)
        signal.pthread_kill(main, signal.SIGINT)

    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    presser = threading.Thread(target=press_ctrl_c)
    presser.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            AgentkitRetriever(memory=mem).invoke("q")
    finally:
        presser.join()
        signal.signal(signal.SIGINT, previous)
    assert mem.cancelled


def _invoke_in_child(conn: Any) -> None:
    try:
        docs = AgentkitRetriever(memory=Recorder(suspend=True), k=2).invoke("q")
        conn.send([d.page_content for d in docs])
    except BaseException as exc:
        conn.send(repr(exc))
    finally:
        conn.close()


def test_sync_invoke_works_in_a_forked_child() -> None:
    r = AgentkitRetriever(memory=Recorder(suspend=True), k=1)
    assert len(r.invoke("q")) == 1  # the parent's loop thread is up before the fork
    fork = multiprocessing.get_context("fork")
    parent_end, child_end = fork.Pipe()
    child = fork.Process(target=_invoke_in_child, args=(child_end,))
    child.start()
    try:
        assert parent_end.poll(30), "the child never answered"
        assert parent_end.recv() == ["fact 0", "fact 1"]
    finally:
        child.join(30)
        if child.is_alive():
            child.kill()
            child.join()
    assert child.exitcode == 0
