"""AgentkitRetriever: an agentkit memory stack behind LangChain's retriever API."""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from agentkit_langchain import AgentkitRetriever
from langchain_core.documents import Document

from agentkit.kernel import Ctx, Scope
from agentkit.state.journal import MutationJournal
from agentkit.state.memory import CompositeMemory, JournalMemory, MemoryItem


class Recorder:
    """A MemorySource that answers from a list and remembers how it was asked."""

    name = "rec"

    def __init__(self, n: int = 6, *, suspend: bool = False) -> None:
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
                "loop": asyncio._get_running_loop(),
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
    # The whole context wins over the ids (the memory may see a scratch copy of it
    # whose observations are replayed onto ``mine``: same tenant, same run id).
    seen = mem.calls[-1]["ctx"]
    assert (seen.scope, seen.run_id) == (mine.scope, mine.run_id)
    with pytest.raises(TypeError, match="agentkit_ctx"):
        r.invoke("q", config={"configurable": {"agentkit_ctx": "acme"}})


async def test_tenant_from_config_async() -> None:
    mem = Recorder()
    r = AgentkitRetriever(memory=mem)
    await r.ainvoke("q", config={"configurable": {"org_id": "o1", "domain_id": "d1"}})
    assert mem.calls[-1]["scope"] == Scope("o1", "d1")
    docs = await r.ainvoke("q", k=1)
    assert len(docs) == 1 and mem.calls[-1]["scope"] == Scope()


def test_constructor_ctx_receives_observations_once() -> None:
    """A composite member failure is reported on the caller's ctx exactly once,
    even though the sync path may first try the query inline and then on a loop."""

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


def test_in_process_memory_completes_without_any_event_loop() -> None:
    mem = Recorder()
    AgentkitRetriever(memory=mem).invoke("q")
    assert mem.calls[-1]["loop"] is None


def test_suspending_memory_runs_on_one_long_lived_loop() -> None:
    mem = Recorder(suspend=True)
    r = AgentkitRetriever(memory=mem, k=2)
    for _ in range(3):
        assert len(r.invoke("q")) == 2
    loops = {id(c["loop"]) for c in mem.calls if c["loop"] is not None}
    assert len(loops) == 1  # never a fresh asyncio.run per call
    assert mem.calls[-1]["thread"] == "agentkit-langchain-loop"


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
        docs = AgentkitRetriever(memory=mem, k=2).invoke("q")
        assert [d.page_content for d in docs] == ["fact 0", "fact 1"]


def test_abandoned_inline_attempt_leaves_no_unawaited_coroutines() -> None:
    """A composite builds its members' coroutines before it reaches for the loop;
    the sync path must not leave them to warn "never awaited"."""
    import gc
    import warnings

    mem = CompositeMemory([Recorder(2), Recorder(3, suspend=True)], dedupe=None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        docs = AgentkitRetriever(memory=mem, k=5).invoke("q")
        gc.collect()
    assert len(docs) == 5
    assert not [w for w in caught if "never awaited" in str(w.message)]


def test_inline_attempt_schedules_nothing_on_the_threads_idle_loop() -> None:
    """gather() outside a running loop falls back to the thread's set-but-idle loop;
    an abandoned inline attempt must not leave queued tasks there."""
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
            box.append((len(docs), len(asyncio.all_tasks(idle)), len(idle._ready)))  # type: ignore[attr-defined]
        finally:
            asyncio.set_event_loop(None)
            idle.close()

    thread = threading.Thread(target=work)
    thread.start()
    thread.join()
    assert box == [(2, 0, 0)]


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
