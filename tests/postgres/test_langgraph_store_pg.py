"""AgentkitStore over a real PostgresVectorStore: LangGraph's store semantics on Postgres.

The same behaviours the unit suite checks on the in-memory and SQLite stores (LangGraph's
own store tests restated), here with pgvector and Postgres full-text search behind the
two halves of a ranked query; async on the test's loop, and sync through
``from_conn_string`` on a database of its own.
"""

from __future__ import annotations

import asyncio
import math
import threading
from collections.abc import Callable
from typing import Any

import pytest
from agentkit_langchain import AgentkitStore
from agentkit_langchain import langgraph_store as module
from langgraph.store.base import GetOp, Item, ListNamespacesOp, PutOp, SearchOp

from agentkit.kernel import Scope
from agentkit.vector.postgres import PostgresVectorStore

ACME = Scope("acme", "support")
GLOBEX = Scope("globex", "support")


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    made = Clock()
    monkeypatch.setattr(module, "_clock", made)
    return made


@pytest.fixture
def lg(make_store: Callable[..., PostgresVectorStore]) -> AgentkitStore:
    return AgentkitStore(make_store(), scope=ACME)


def keys(items: list[Any]) -> list[str]:
    return [i.key for i in items]


async def test_basic_ops_and_created_at_kept(lg: AgentkitStore, clock: Clock) -> None:
    ns = ("test", "documents")
    await lg.aput(ns, "doc.1/a:b", {"title": "Test", "content": "Hello"})
    first = await lg.aget(ns, "doc.1/a:b")
    assert first is not None and first.value == {"title": "Test", "content": "Hello"}
    clock.now += 5
    await lg.aput(ns, "doc.1/a:b", {"title": "Updated"})
    second = await lg.aget(ns, "doc.1/a:b")
    assert second is not None and second.value == {"title": "Updated"}
    assert second.created_at == first.created_at and second.updated_at > first.updated_at
    assert await lg.aget(("test",), "doc.1/a:b") is None
    await lg.adelete(ns, "doc.1/a:b")
    assert await lg.aget(ns, "doc.1/a:b") is None
    assert await lg.alist_namespaces() == []


async def test_batch_and_segments(lg: AgentkitStore) -> None:
    for ns in [("foo",), ("foobar",), ("user", "1"), ("user", "12"), ("a%",), ("a_",)]:
        await lg.aput(ns, "k", {"v": "/".join(ns)})
    results = await lg.abatch(
        [
            GetOp(("foo",), "k"),
            PutOp(("foo",), "k", {"v": "changed"}),
            SearchOp(("user", "1")),
            ListNamespacesOp(max_depth=1),
            GetOp(("foo",), "k"),
        ]
    )
    assert isinstance(results[0], Item) and results[0].value == {"v": "foo"}
    assert [i.namespace for i in results[2]] == [("user", "1")]
    assert results[3] == [("a%",), ("a_",), ("foo",), ("foobar",), ("user",)]
    assert results[4].value == {"v": "foo"}  # reads see the store before the writes
    assert (await lg.aget(("foo",), "k")).value == {"v": "changed"}  # type: ignore[union-attr]
    assert [i.namespace for i in await lg.asearch(("a_",))] == [("a_",)]
    assert [i.namespace for i in await lg.asearch(("a%",))] == [("a%",)]


async def test_filters(lg: AgentkitStore) -> None:
    docs = {
        "a": {"n": 1, "tags": ["x", "y"], "flag": True},
        "b": {"n": 5, "tags": ["x"]},
        "c": {"n": 10.5, "tags": ["y", "x"]},
        "d": {"n": "10"},
        "e": {"other": 1},
    }
    for key, value in docs.items():
        await lg.aput(("ops",), key, value)

    async def hits(flt: dict[str, Any]) -> list[str]:
        return sorted(keys(await lg.asearch(("ops",), filter=flt, limit=50)))

    assert await hits({"n": {"$gt": 2}}) == ["b", "c"]
    assert await hits({"n": {"$lte": 5}}) == ["a", "b"]
    assert await hits({"tags": ["x", "y"]}) == ["a"]
    assert await hits({"n": 1}) == ["a"]
    assert await hits({"flag": True}) == ["a"]
    page = await lg.asearch(("ops",), filter={"n": {"$gte": 1}}, limit=1, offset=1)
    assert keys(page) == ["b"]


async def test_ranked_pages_slice_one_ranking(lg: AgentkitStore) -> None:
    topics = ["cats", "dogs", "birds", "fish", "whales", "otters", "bees"]
    await lg.abatch(
        [
            PutOp(
                ("n", f"g{i % 4}"),
                f"k{i:03d}",
                {"text": f"note {i} on {topics[i % 7]} and {topics[(i * 3) % 7]}"},
            )
            for i in range(130)
        ]
    )
    await lg.aput(("n",), "hidden", {"text": "cats and whales"}, index=False)
    query = "cats and whales"
    whole = await lg.asearch(("n",), query=query, limit=200)
    assert len(whole) == 131 and whole[-1].key == "hidden" and whole[-1].score is None
    scores = [i.score for i in whole[:-1]]
    assert all(s is not None and math.isfinite(s) for s in scores)
    assert scores == sorted(scores, reverse=True)
    paged: list[tuple[str, float | None]] = []
    for offset in range(0, 140, 11):
        paged += [
            (i.key, i.score) for i in await lg.asearch(("n",), query=query, limit=11, offset=offset)
        ]
    assert paged == [(i.key, i.score) for i in whole]


async def test_tenants_apart(make_store: Callable[..., PostgresVectorStore]) -> None:
    acme = AgentkitStore(make_store(), scope=ACME)
    globex = acme.bind(GLOBEX)
    await acme.aput(("shared",), "k", {"text": "acme plans"})
    await globex.aput(("shared",), "k", {"text": "globex plans"})
    await globex.aput(("globex",), "g", {"text": "globex only"})
    assert [i.value["text"] for i in await acme.asearch((), query="globex plans")] == ["acme plans"]
    assert await acme.alist_namespaces() == [("shared",)]
    await acme.adelete(("globex",), "g")
    await acme.adelete(("shared",), "k")
    assert (await globex.aget(("globex",), "g")) is not None
    assert (await globex.aget(("shared",), "k")).value == {"text": "globex plans"}  # type: ignore[union-attr]


async def test_ttl_on_postgres(lg: AgentkitStore, clock: Clock) -> None:
    await lg.aput(("t", "gone"), "e", {"text": "short lived"}, ttl=1)
    await lg.aput(("t", "kept"), "r", {"text": "refreshed"}, ttl=1)
    await lg.aput(("t", "kept"), "p", {"text": "permanent"})
    clock.now += 50
    assert await lg.aget(("t", "kept"), "r") is not None  # refreshes
    clock.now += 50
    assert await lg.aget(("t", "gone"), "e") is None
    assert keys(await lg.asearch(("t",), query="short lived refreshed")) == ["r", "p"]
    assert await lg.alist_namespaces(prefix=("t",)) == [("t", "kept")]


def test_sync_from_conn_string_and_threads(db_url: str) -> None:
    with AgentkitStore.from_conn_string(db_url, scope=ACME) as store:
        assert isinstance(store.store, PostgresVectorStore)
        errors: list[BaseException] = []

        def worker(i: int) -> None:
            try:
                store.put(("mem", f"u{i}"), "fact", {"text": f"user {i} likes tea"})
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=worker, args=(i,)) for i in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []
        assert store.list_namespaces(prefix=("mem",)) == [("mem", f"u{i}") for i in range(6)]
        assert keys(store.search(("mem", "u3"), query="tea")) == ["fact"]
    with AgentkitStore.from_conn_string(db_url, scope=GLOBEX) as store:
        assert store.search(("mem",)) == []


async def test_sweep_on_postgres_deletes_only_this_scopes_expired_items(
    make_store: Callable[..., PostgresVectorStore], clock: Clock
) -> None:
    backend = make_store()
    acme = AgentkitStore(backend, scope=ACME)
    globex = acme.bind(GLOBEX)
    await acme.aput(("t",), "gone", {"text": "x"}, ttl=1)
    await acme.aput(("t",), "read", {"text": "x"}, ttl=1)
    await acme.aput(("t",), "forever", {"text": "x"})
    await globex.aput(("t",), "gone", {"text": "x"}, ttl=1)
    clock.now += 50
    assert await acme.aget(("t",), "read") is not None  # refreshes
    clock.now += 20
    assert await acme.asweep_ttl() == 1  # the expiry matched exactly through jsonb
    assert sorted(c.metadata["lg_key"] for c in await backend.scan(scope=ACME)) == [
        "forever",
        "read",
    ]
    assert [c.metadata["lg_key"] for c in await backend.scan(scope=GLOBEX)] == ["gone"]
    # The task sweeper on this loop: started, sweeping the other tenant, stopped clean.
    swept = threading.Event()

    class Watched(AgentkitStore):
        async def asweep_ttl(self) -> int:
            count = await super().asweep_ttl()
            if count:
                swept.set()
            return count

    watched = Watched(backend, scope=GLOBEX)
    task = await watched.astart_ttl_sweeper(sweep_interval_minutes=1e-5)
    assert await asyncio.to_thread(swept.wait, 30)
    assert await watched.astop_ttl_sweeper() is True and task.done()
    assert await backend.scan(scope=GLOBEX) == []


def test_sync_sweep_and_sweeper_thread_on_postgres(db_url: str, clock: Clock) -> None:
    with AgentkitStore.from_conn_string(db_url, scope=ACME, ttl={"default_ttl": 1}) as store:
        store.put(("t",), "gone", {"text": "x"})
        store.put(("t",), "forever", {"text": "x"}, ttl=None)
        clock.now += 61
        assert store.sweep_ttl() == 1
        assert keys(store.search(("t",))) == ["forever"]
        store.start_ttl_sweeper()
    assert not [t for t in threading.enumerate() if t.name == "agentkit-ttl-sweeper"]
