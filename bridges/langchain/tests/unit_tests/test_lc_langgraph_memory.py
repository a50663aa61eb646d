"""LangGraphStoreMemory: a team's LangGraph store memories as an agentkit MemorySource.

Real LangGraph stores (InMemoryStore, SqliteStore) with a deterministic fake embedding;
the PostgresStore run lives in tests/postgres/test_langgraph_memory_pg.py.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
from collections.abc import Iterable, Iterator
from typing import Any

import pysqlite3.dbapi2 as sqlite3  # the stdlib build here cannot load sqlite-vec
import pytest
from agentkit_langchain import LangGraphStoreMemory
from agentkit_langchain.langgraph_memory import NAMESPACE_KEY, SCOPE_ROOT
from langgraph.store.base import BaseStore, Op, Result
from langgraph.store.memory import InMemoryStore
from langgraph.store.sqlite import SqliteStore

from agentkit.kernel import Ctx, Scope
from agentkit.kernel.errors import InvalidArgument, InvalidArgumentType
from agentkit.state.memory import CompositeMemory, MemoryItem, VectorMemory
from agentkit.vector import HashingEmbedder, InMemoryVectorStore

DIM = 64
_HASH = HashingEmbedder(dim=DIM)


def fake_embed(texts: Iterable[str]) -> list[list[float]]:
    """Deterministic, offline: the same text always gets the same vector."""
    return [[float(x) for x in row] for row in _HASH.embed_sync(list(texts))]


INDEX: dict[str, Any] = {"dims": DIM, "embed": fake_embed, "fields": ["text"]}

FACTS = [
    ("cat-1", ("memories",), {"text": "the cat sat on the mat", "topic": "cats", "n": 1}),
    ("dog-1", ("memories",), {"text": "dogs bark at the mailman", "topic": "dogs", "n": 2}),
    ("cat-2", ("memories", "u1"), {"text": "a cat chased the mouse", "topic": "cats", "n": 3}),
    ("fish", ("memories",), {"text": "goldfish swim in circles", "topic": "fish", "n": 4}),
    ("other", ("elsewhere",), {"text": "the cat of another namespace", "topic": "cats"}),
]


class _ThreadSqliteStore(SqliteStore):
    """A SqliteStore that notes which threads ran its (sync) batches."""

    threads: list[int]

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        self.threads.append(threading.get_ident())
        return super().batch(ops)


def _sqlite(
    index: dict[str, Any] | None = INDEX, cls: type[_ThreadSqliteStore] = _ThreadSqliteStore
) -> _ThreadSqliteStore:
    conn = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
    store = cls(conn, index=index)  # type: ignore[arg-type]
    store.threads = []
    store.setup()
    return store


@pytest.fixture(params=["inmemory", "sqlite"])
def store(request: pytest.FixtureRequest) -> Iterator[BaseStore]:
    made: BaseStore = InMemoryStore(index=INDEX) if request.param == "inmemory" else _sqlite()
    for key, ns, value in FACTS:
        made.put(ns, key, value)
    yield made
    if isinstance(made, SqliteStore):
        made.conn.close()


def _count(store: BaseStore, namespace: tuple[str, ...]) -> int:
    return len(store.search(namespace, limit=1000))


# --- reading ---


async def test_query_gives_the_stores_ranking_as_items(store: BaseStore) -> None:
    mem = LangGraphStoreMemory(store, ("memories",))
    items = await mem.query("cat", k=2, ctx=Ctx())
    direct = store.search(("memories",), query="cat", limit=2)
    assert [i.id for i in items] == [hit.key for hit in direct]
    assert {i.id for i in items} == {"cat-1", "cat-2"}
    assert [i.score for i in items] == [hit.score for hit in direct]
    assert all(isinstance(i.score, float) for i in items)
    first = {i.id: i for i in items}["cat-1"]
    assert first.content == "the cat sat on the mat"
    assert first.source == "langgraph"
    assert dict(first.metadata) == {"topic": "cats", "n": 1, NAMESPACE_KEY: ("memories",)}
    deeper = {i.id: i for i in items}["cat-2"]
    assert deeper.metadata[NAMESPACE_KEY] == ("memories", "u1")


async def test_k_is_the_limit(store: BaseStore) -> None:
    mem = LangGraphStoreMemory(store, ("memories",))
    assert len(await mem.query("cat", k=1, ctx=Ctx())) == 1
    everything = await mem.query("cat", k=50, ctx=Ctx())
    # Every record under the namespace, none from ("elsewhere",).
    assert sorted(i.id for i in everything) == ["cat-1", "cat-2", "dog-1", "fish"]


async def test_where_is_the_filter_and_is_rechecked(store: BaseStore) -> None:
    mem = LangGraphStoreMemory(store, ("memories",))
    dogs = await mem.query("cat", k=5, ctx=Ctx(), where={"topic": "dogs"})
    assert [i.id for i in dogs] == ["dog-1"]
    # A list is any-of in agentkit (LangGraph would read it as one list value).
    some = await mem.query("cat", k=5, ctx=Ctx(), where={"topic": ["dogs", "fish"]})
    assert sorted(i.id for i in some) == ["dog-1", "fish"]
    # An int filter never matches a bool and vice versa (SQLite stores True as 1).
    assert await mem.query("cat", k=5, ctx=Ctx(), where={"n": True}) == []
    # A key the store cannot take as a plain key is still applied, never ignored.
    assert await mem.query("cat", k=5, ctx=Ctx(), where={"to.pic": "cats"}) == []
    assert await mem.query("cat", k=5, ctx=Ctx(), where={"missing": "x"}) == []
    # The namespace an item was found in can be filtered on too.
    deep = await mem.query("cat", k=5, ctx=Ctx(), where={NAMESPACE_KEY: [("memories", "u1")]})
    assert [i.id for i in deep] == ["cat-2"]


async def test_where_operators_are_agentkits_language(store: BaseStore) -> None:
    mem = LangGraphStoreMemory(store, ("memories",))
    ranged = await mem.query("cat", k=5, ctx=Ctx(), where={"n": {"$gte": 2, "$lt": 4}})
    assert sorted(i.id for i in ranged) == ["cat-2", "dog-1"]
    either = await mem.query(
        "cat", k=5, ctx=Ctx(), where={"$or": [{"topic": "fish"}, {"n": {"$lte": 1}}]}
    )
    assert sorted(i.id for i in either) == ["cat-1", "fish"]
    scoped = await mem.query(
        "cat", k=5, ctx=Ctx(), where={NAMESPACE_KEY: ("memories",), "topic": {"$ne": "fish"}}
    )
    assert sorted(i.id for i in scoped) == ["cat-1", "dog-1"]
    from agentkit.kernel.errors import InvalidFilter

    with pytest.raises(InvalidFilter, match=r"\$regex"):
        await mem.query("cat", k=5, ctx=Ctx(), where={"topic": {"$regex": "c"}})


async def test_a_lower_ranked_match_comes_back_under_a_local_filter(store: BaseStore) -> None:
    # Twenty records outrank the two that match an any-of filter the store cannot take.
    for i in range(20):
        store.put(("crowd",), f"noise-{i}", {"text": f"cat cat cat {i}", "topic": "noise"})
    store.put(("crowd",), "hit-1", {"text": "a dog", "topic": "a"})
    store.put(("crowd",), "hit-2", {"text": "a bird", "topic": "b"})
    mem = LangGraphStoreMemory(store, ("crowd",))
    found = await mem.query("cat", k=2, ctx=Ctx(), where={"topic": ["a", "b"]})
    assert sorted(i.id for i in found) == ["hit-1", "hit-2"]


async def test_fields_choose_the_content_and_a_value_without_them_is_shown_whole() -> None:
    store = InMemoryStore()
    store.put(("notes",), "a", {"title": "Trip", "body": "Pack the tent", "tag": "x"})
    store.put(("notes",), "b", {"unrelated": 1})
    mem = LangGraphStoreMemory(store, ("notes",), fields=["title", "body"])
    items = {i.id: i for i in await mem.query("", k=5, ctx=Ctx())}
    assert items["a"].content == "Trip\nPack the tent"
    assert dict(items["a"].metadata) == {"tag": "x", NAMESPACE_KEY: ("notes",)}
    assert items["a"].score is None  # an unindexed store does not rank
    assert items["b"].content == '{"unrelated": 1}'
    assert items["b"].metadata["unrelated"] == 1


async def test_default_content_field_without_an_index() -> None:
    store = InMemoryStore()
    mem = LangGraphStoreMemory(store, ("notes",))
    await mem.write([MemoryItem("remember the milk", "user", None, {"kind": "todo"})], ctx=Ctx())
    (hit,) = store.search(("notes",))
    assert hit.value == {"kind": "todo", "content": "remember the milk"}
    (item,) = await mem.query("milk", k=3, ctx=Ctx())
    assert item.content == "remember the milk"
    assert dict(item.metadata) == {"kind": "todo", NAMESPACE_KEY: ("notes",)}


# --- writing ---


async def test_recall_then_write_back_updates_the_same_key(store: BaseStore) -> None:
    mem = LangGraphStoreMemory(store, ("memories",))
    before = _count(store, ("memories",))
    items = await mem.query("cat", k=2, ctx=Ctx())
    edited = [
        MemoryItem(i.content + " (checked)", i.source, i.score, i.metadata, id=i.id) for i in items
    ]
    await mem.write(edited, ctx=Ctx())
    assert _count(store, ("memories",)) == before
    top = store.get(("memories",), "cat-1")
    deep = store.get(("memories", "u1"), "cat-2")
    assert top is not None and top.value == {
        "text": "the cat sat on the mat (checked)",
        "topic": "cats",
        "n": 1,
    }
    # Back in the sub-namespace it was recalled from, not copied up.
    assert deep is not None and deep.value["text"] == "a cat chased the mouse (checked)"
    assert store.get(("memories",), "cat-2") is None


async def test_ids_from_other_backends_are_not_trusted(store: BaseStore) -> None:
    mem = LangGraphStoreMemory(store, ("memories",))
    foreign = MemoryItem("an unrelated fact", "vector", 0.5, {"topic": "x"}, id="cat-1")
    named = MemoryItem("a named fact", "vector", None, {"id": "chosen", "topic": "y"})
    await mem.write([foreign, named], ctx=Ctx())
    untouched = store.get(("memories",), "cat-1")
    assert untouched is not None and untouched.value["text"] == "the cat sat on the mat"
    chosen = store.get(("memories",), "chosen")
    assert chosen is not None and chosen.value == {"topic": "y", "text": "a named fact"}
    texts = [hit.value["text"] for hit in store.search(("memories",), limit=100)]
    assert texts.count("an unrelated fact") == 1


async def test_a_bad_item_refuses_the_whole_write(store: BaseStore) -> None:
    mem = LangGraphStoreMemory(store, ("memories",))
    before = _count(store, ("memories",))
    good = MemoryItem("fine", "x")
    with pytest.raises(InvalidArgument, match="'text'"):
        await mem.write([good, MemoryItem("clash", "x", None, {"text": "other"})], ctx=Ctx())
    with pytest.raises(InvalidArgument, match="JSON"):
        await mem.write([good, MemoryItem("odd", "x", None, {"when": object()})], ctx=Ctx())
    with pytest.raises(InvalidArgumentType):
        await mem.write([good, "not an item"], ctx=Ctx())  # type: ignore[list-item]
    assert _count(store, ("memories",)) == before


async def test_sync_only_store_runs_off_the_event_loop() -> None:
    store = _sqlite()
    mem = LangGraphStoreMemory(store, ("memories",))
    await mem.write([MemoryItem("the cat sat", "x")], ctx=Ctx())
    assert [i.content for i in await mem.query("cat", k=1, ctx=Ctx())] == ["the cat sat"]
    loop_thread = threading.get_ident()
    assert store.threads and all(t != loop_thread for t in store.threads)
    store.conn.close()


class _SyncOnlyStore(InMemoryStore):
    """A third-party store with no async path: its abatch refuses, like SqliteStore's."""

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        raise NotImplementedError("sync only")


async def test_a_store_without_async_falls_back_to_its_sync_api() -> None:
    store = _SyncOnlyStore()
    mem = LangGraphStoreMemory(store, ("m",))
    await mem.write([MemoryItem("written through the sync api", "x")], ctx=Ctx())
    assert [i.content for i in await mem.query("", k=3, ctx=Ctx())] == [
        "written through the sync api"
    ]


async def test_queries_of_several_sync_stores_overlap() -> None:
    started = threading.Barrier(4, timeout=10)

    class _Meeting(_ThreadSqliteStore):
        def batch(self, ops: Iterable[Op]) -> list[Result]:
            started.wait()  # returns only once all four searches run at the same time
            return super().batch(ops)

    stores = [_sqlite(index=None, cls=_Meeting) for _ in range(4)]
    members = [LangGraphStoreMemory(s, ("m",), name=f"s{i}") for i, s in enumerate(stores)]
    composite = CompositeMemory(members)
    assert await asyncio.wait_for(composite.query("x", k=4, ctx=Ctx()), 20) == []
    for s in stores:
        s.conn.close()


# --- tenancy ---


async def test_tenants_never_meet(store: BaseStore) -> None:
    mem = LangGraphStoreMemory(store, ("memories",))
    acme, globex = Ctx(Scope("acme", "support")), Ctx(Scope("globex", "support"))
    await mem.write([MemoryItem("acme's cat policy", "x", None, {"id": "policy"})], ctx=acme)
    await mem.write([MemoryItem("globex's cat policy", "x", None, {"id": "policy"})], ctx=globex)
    assert [i.content for i in await mem.query("cat policy", k=10, ctx=acme)] == [
        "acme's cat policy"
    ]
    assert [i.content for i in await mem.query("cat policy", k=10, ctx=globex)] == [
        "globex's cat policy"
    ]
    # Neither tenant sees the unscoped memories, and the unscoped caller sees no tenant.
    unscoped = await mem.query("cat policy", k=50, ctx=Ctx())
    assert "policy" not in {i.id for i in unscoped}
    assert {i.id for i in await mem.query("cat", k=50, ctx=acme)} == {"policy"}
    # A recalled tenant item reports its namespace without the tenant prefix.
    (item,) = await mem.query("cat", k=1, ctx=acme)
    assert item.metadata[NAMESPACE_KEY] == ("memories",)


@pytest.mark.parametrize(
    ("one", "two"),
    [
        (Scope("acme", "support"), Scope("acme", "sales")),
        (Scope("acme", "support"), Scope("acme", None)),
        (Scope("Acme", "d"), Scope("acme", "d")),
        (Scope("a.b", "c"), Scope("a", "b.c")),
        (Scope("a", None), Scope(None, "a")),
        (Scope("*", "d"), Scope("x", "d")),
        (Scope("%", "d"), Scope("x", "d")),
        (Scope("~2E", "d"), Scope(".", "d")),
        (Scope("~", "d"), Scope(None, "d")),
        (Scope("a_c", "d"), Scope("abc", "d")),
    ],
)
async def test_scope_ids_are_spelled_injectively(one: Scope, two: Scope) -> None:
    store = InMemoryStore(index=INDEX)
    mem = LangGraphStoreMemory(store, ("m",))
    await mem.write([MemoryItem("first tenant's note", "x")], ctx=Ctx(one))
    await mem.write([MemoryItem("second tenant's note", "x")], ctx=Ctx(two))
    assert [i.content for i in await mem.query("note", k=5, ctx=Ctx(one))] == [
        "first tenant's note"
    ]
    assert [i.content for i in await mem.query("note", k=5, ctx=Ctx(two))] == [
        "second tenant's note"
    ]


def test_namespaces_that_would_cross_tenants_are_refused() -> None:
    store = InMemoryStore()
    with pytest.raises(InvalidArgument, match="at least one label"):
        LangGraphStoreMemory(store, ())
    with pytest.raises(InvalidArgument, match="reserved"):
        LangGraphStoreMemory(store, (SCOPE_ROOT, "acme"))
    with pytest.raises(InvalidArgument, match=r"'a\.b'"):
        LangGraphStoreMemory(store, ("a.b",))
    with pytest.raises(InvalidArgumentType, match="namespace"):
        LangGraphStoreMemory(store, "memories")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentType, match="BaseStore"):
        LangGraphStoreMemory({}, ("m",))  # type: ignore[arg-type]
    with pytest.raises(InvalidArgument, match=r"'\$'"):
        LangGraphStoreMemory(store, ("m",), fields=["$"])


# --- beside everything else ---


async def test_joins_a_composite_beside_a_vector_memory(store: BaseStore) -> None:
    lg = LangGraphStoreMemory(store, ("memories",))
    vector = VectorMemory(InMemoryVectorStore(HashingEmbedder(dim=DIM)))
    ctx = Ctx(Scope("acme", "support"))
    await vector.write(
        [MemoryItem("the cat prefers the sofa", "vector", None, {"topic": "cats"})], ctx=ctx
    )
    await lg.write(
        [MemoryItem("the cat hides under the bed", "seed", None, {"topic": "cats"})], ctx=ctx
    )
    composite = CompositeMemory([lg, vector])
    items = await composite.query("cat", k=5, ctx=ctx)
    assert {(i.source, i.content) for i in items} == {
        ("langgraph", "the cat hides under the bed"),
        ("vector", "the cat prefers the sofa"),
    }
    scores = [i.score for i in items]
    assert scores == sorted(scores, reverse=True)  # type: ignore[type-var]
    # where reaches both members.
    assert await composite.query("cat", k=5, ctx=ctx, where={"topic": "dogs"}) == []
    # A composite write lands in the LangGraph store too, in the caller's tenant only.
    await composite.write([MemoryItem("the cat sleeps all day", "agent")], ctx=ctx)
    mine = [i.content for i in await lg.query("sleeps", k=10, ctx=ctx)]
    assert "the cat sleeps all day" in mine
    assert "the cat sleeps all day" not in [
        i.content for i in await lg.query("sleeps", k=10, ctx=Ctx())
    ]


def test_the_core_bridge_imports_without_the_langgraph_extra() -> None:
    # A fresh interpreter where langgraph and langchain (v1) cannot be imported.
    code = """
import importlib.abc, sys
class Missing(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("langgraph", "langchain"):
            raise ImportError(f"No module named {name!r}")
        return None
sys.meta_path.insert(0, Missing())
import agentkit_langchain
from agentkit_langchain import AgentkitRetriever, LangChainMemory
from agentkit_langchain import *
for name in ("LangGraphStoreMemory", "AgentkitMemoryMiddleware"):
    try:
        getattr(agentkit_langchain, name)
    except ImportError as exc:
        assert "agentkit-langchain[langgraph]" in str(exc), exc
    else:
        raise AssertionError(name + " imported without langgraph")
print("ok")
"""
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


async def test_an_async_store_is_used_through_its_async_api() -> None:
    from langgraph.store.sqlite.aio import AsyncSqliteStore

    async with AsyncSqliteStore.from_conn_string(":memory:") as store:
        await store.setup()
        mem = LangGraphStoreMemory(store, ("m",))
        acme = Ctx(Scope("acme", "support"))
        await mem.write([MemoryItem("hello from acme", "x", None, {"t": 1})], ctx=acme)
        (item,) = await mem.query("hello", k=3, ctx=acme)
        assert (item.content, dict(item.metadata)) == (
            "hello from acme",
            {
                "t": 1,
                NAMESPACE_KEY: ("m",),
            },
        )
        assert await mem.query("hello", k=3, ctx=Ctx()) == []
        await mem.write(
            [MemoryItem("hello again", item.source, None, item.metadata, id=item.id)], ctx=acme
        )
        assert [i.content for i in await mem.query("hello", k=3, ctx=acme)] == ["hello again"]
