"""AgentkitStore behaves as LangGraph's own stores do on their own test suites.

The semantics of LangGraph's store tests (libs/checkpoint/tests/test_store.py and the
SQLite and Postgres stores' test_store.py) are re-stated here against AgentkitStore
over the in-memory and the SQLite agentkit store, through the sync API (run from a
worker thread while this test's loop keeps running) and the async API. A LangGraph
agent whose tools read and write ``runtime.store`` runs on it at the end.
"""

from __future__ import annotations

import asyncio
import json
import math
import threading
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from agentkit_langchain import AgentkitStore
from agentkit_langchain import langgraph_store as module
from langchain.agents import create_agent
from langchain.tools import ToolRuntime, tool
from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langgraph.store.base import (
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    PutOp,
    SearchOp,
)
from langgraph.store.memory import InMemoryStore
from pydantic import Field

from agentkit.kernel import Scope
from agentkit.kernel.errors import InvalidArgument, InvalidArgumentType
from agentkit.vector import HashingEmbedder, InMemoryVectorStore
from agentkit.vector.sqlite import SQLiteVectorStore

ACME = Scope("acme", "support")
GLOBEX = Scope("globex", "support")


class Clock:
    """Moves the store's notion of now, so TTL rules are tested without sleeping."""

    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    made = Clock()
    monkeypatch.setattr(module, "_clock", made)
    return made


@pytest.fixture(params=["memory", "sqlite"])
async def backend(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Any]:
    if request.param == "memory":
        yield InMemoryVectorStore(HashingEmbedder(dim=128))
        return
    store = SQLiteVectorStore(tmp_path / "lg.db", embedder=HashingEmbedder(dim=128))
    yield store
    await store.close()


class Api:
    """One test body, two APIs: ``sync`` calls the sync methods from a worker thread."""

    def __init__(self, store: AgentkitStore, sync: bool) -> None:
        self.store = store
        self.sync = sync

    async def __call__(self, method: str, *args: Any, **kwargs: Any) -> Any:
        if self.sync:
            return await asyncio.to_thread(getattr(self.store, method), *args, **kwargs)
        return await getattr(self.store, "a" + method)(*args, **kwargs)

    def bind(self, scope: Scope) -> Api:
        return Api(self.store.bind(scope), self.sync)


@pytest.fixture(params=["sync", "async"])
def api(request: pytest.FixtureRequest, backend: Any) -> Api:
    return Api(AgentkitStore(backend, scope=ACME), request.param == "sync")


def keys(items: Sequence[Item]) -> list[str]:
    return [i.key for i in items]


# --- basic operations ---


async def test_put_get_update_delete(api: Api, clock: Clock) -> None:
    ns = ("test", "documents")
    await api("put", ns, "doc1", {"title": "Test Document", "content": "Hello, World!"})
    item = await api("get", ns, "doc1")
    assert item.namespace == ns and item.key == "doc1"
    assert item.value == {"title": "Test Document", "content": "Hello, World!"}
    assert item.created_at == item.updated_at

    clock.advance(5)
    await api("put", ns, "doc1", {"title": "Updated"})
    updated = await api("get", ns, "doc1")
    assert updated.value == {"title": "Updated"}
    assert updated.updated_at > item.updated_at
    assert updated.created_at == item.created_at  # kept on update, as Postgres does

    assert await api("get", ("test", "other_documents"), "doc1") is None
    await api("delete", ns, "doc1")
    assert await api("get", ns, "doc1") is None
    assert await api("search", ("test",)) == []


async def test_keys_and_namespaces_map_injectively(api: Api) -> None:
    # Keys may hold the characters other stores use as separators or patterns.
    pairs = [
        (("a",), "b/c"),
        (("a", "b"), "c"),
        (("a",), "b.c"),
        (("a",), "b:c"),
        (("a",), '["b"],"c"'),
        (("a%",), "x"),
        (("a_",), "x"),
        (("a*",), "x"),
        (("ab",), "x"),
    ]
    for i, (ns, key) in enumerate(pairs):
        await api("put", ns, key, {"i": i})
    for i, (ns, key) in enumerate(pairs):
        got = await api("get", ns, key)
        assert (got.namespace, got.key, got.value) == (ns, key, {"i": i})
    # %, _ and * are literal labels, never patterns.
    assert keys(await api("search", ("a_",))) == ["x"]
    assert [i.value["i"] for i in await api("search", ("a%",))] == [5]
    assert [i.value["i"] for i in await api("search", ("a*",))] == [7]


async def test_namespace_rules(api: Api) -> None:
    with pytest.raises(InvalidNamespaceError):
        await api("put", (), "k", {"v": 1})
    with pytest.raises(InvalidNamespaceError):
        await api("put", ("the", "thing.about"), "k", {"v": 1})
    with pytest.raises(InvalidNamespaceError):
        await api("put", ("some", ""), "k", {"v": 1})
    with pytest.raises(InvalidNamespaceError):
        await api("put", ("langgraph", "foo"), "k", {"v": 1})
    # Below the root, "langgraph" is an ordinary label; past the public API too.
    await api("put", ("foo", "langgraph"), "k", {"v": 1})
    assert (await api("get", ("foo", "langgraph"), "k")).value == {"v": 1}
    await api("batch", [PutOp(("langgraph", "foo"), "bar", {"v": 2})])
    assert (await api("get", ("langgraph", "foo"), "bar")).value == {"v": 2}
    with pytest.raises(InvalidNamespaceError):
        await api("batch", [GetOp(("a.b",), "k")])


async def test_bad_input_is_refused_and_nothing_lost(api: Api) -> None:
    await api("put", ("t",), "keep", {"v": 1})
    with pytest.raises(InvalidArgument):
        await api("put", ("t",), "bad", {"v": float("nan")})
    with pytest.raises(InvalidArgument):
        await api("put", ("t",), "bad", {"v": object()})
    with pytest.raises(InvalidArgument):
        await api("put", ("t",), "bad", {"v": 1}, ttl=-1)
    with pytest.raises(InvalidArgument):
        await api("search", ("t",), filter={"v": {"$regex": "x"}})
    with pytest.raises(InvalidArgument):
        await api("search", ("t",), limit=-1)
    # A batch with one bad put lands nothing.
    with pytest.raises(InvalidArgument):
        await api(
            "batch",
            [PutOp(("t",), "fine", {"v": 2}), PutOp(("t",), "bad", {"v": float("inf")})],
        )
    assert keys(await api("search", ("t",))) == ["keep"]


# --- batches ---


async def test_batch_reads_see_the_store_before_its_writes(api: Api) -> None:
    await api("put", ("test", "foo"), "key1", {"data": "value1"})
    await api("put", ("test", "bar"), "key2", {"data": "value2"})
    results = await api(
        "batch",
        [
            GetOp(("test", "foo"), "key1"),
            PutOp(("test", "bar"), "key2", {"data": "changed"}),
            SearchOp(("test",), filter={"data": "value1"}, limit=10, offset=0),
            ListNamespacesOp(match_conditions=None, max_depth=None, limit=10, offset=0),
            GetOp(("test",), "key3"),
            PutOp(("test",), "key3", {"data": "first"}),
            PutOp(("test",), "key3", {"data": "last"}),
            GetOp(("test", "bar"), "key2"),
        ],
    )
    assert len(results) == 8
    assert isinstance(results[0], Item) and results[0].value == {"data": "value1"}
    assert results[1] is None and results[5] is None
    assert keys(results[2]) == ["key1"]
    assert results[3] == [("test", "bar"), ("test", "foo")]
    assert results[4] is None
    assert results[7].value == {"data": "value2"}  # read before the batch's put
    assert (await api("get", ("test",), "key3")).value == {"data": "last"}
    assert (await api("get", ("test", "bar"), "key2")).value == {"data": "changed"}
    # A delete is a put of None.
    await api("batch", [PutOp(("test",), "key3", None)])
    assert await api("get", ("test",), "key3") is None


# --- search without a query ---


async def test_prefix_matches_whole_segments(api: Api) -> None:
    for ns in [("foo",), ("foobar",), ("user", "1"), ("user", "12"), ("user", "1", "x")]:
        await api("put", ns, "k", {"ns": "/".join(ns)})
    await api("put", ("nl", "alice"), "k", {"v": 1})
    await api("put", ("nl", "alice\n"), "k", {"v": 2})
    assert [i.value for i in await api("search", ("nl", "alice"))] == [{"v": 1}]
    assert (await api("get", ("nl", "alice\n"), "k")).value == {"v": 2}
    await api("delete", ("nl", "alice"), "k")
    await api("delete", ("nl", "alice\n"), "k")
    assert [i.namespace for i in await api("search", ("foo",))] == [("foo",)]
    assert [i.namespace for i in await api("search", ("user", "1"))] == [
        ("user", "1"),
        ("user", "1", "x"),
    ]
    assert [i.namespace for i in await api("search", ("User",))] == []  # case-sensitive
    assert len(await api("search", ())) == 5  # the empty prefix is everything


async def test_enumeration_is_sorted_and_pages_slice_it(api: Api) -> None:
    for i in reversed(range(23)):
        await api("put", ("docs", f"s{i % 3}"), f"k{i:02d}", {"i": i})
    everything = await api("search", ("docs",), limit=100)
    order = [(i.namespace, i.key) for i in everything]
    assert order == sorted(order) and len(order) == 23
    paged: list[tuple[tuple[str, ...], str]] = []
    for offset in range(0, 30, 5):
        paged += [
            (i.namespace, i.key) for i in await api("search", ("docs",), limit=5, offset=offset)
        ]
    assert paged == order
    assert all(i.score is None for i in everything)


async def test_filters_apply_before_limit_and_offset(api: Api) -> None:
    for i in range(30):
        await api("put", ("f",), f"k{i:02d}", {"even": i % 2 == 0, "i": i})
    page1 = await api("search", ("f",), filter={"even": False}, limit=4)
    page2 = await api("search", ("f",), filter={"even": False}, limit=4, offset=4)
    assert [i.value["i"] for i in page1] == [1, 3, 5, 7]
    assert [i.value["i"] for i in page2] == [9, 11, 13, 15]


async def test_filter_operators(api: Api) -> None:
    docs = {
        "a": {"n": 1, "s": "apple", "tags": ["x", "y"], "flag": True, "meta": {"k": 1}},
        "b": {"n": 5, "s": "banana", "tags": ["x"], "flag": False},
        "c": {"n": 10.5, "s": "cherry", "tags": ["y", "x"]},
        "d": {"n": "10", "s": "date"},  # a numeral in a string is not a number
        "e": {"s": "elder"},  # no n at all
        "f": {"n": True},  # a bool is not a number
    }
    for key, value in docs.items():
        await api("put", ("ops",), key, value)

    async def hits(flt: dict[str, Any]) -> list[str]:
        return sorted(keys(await api("search", ("ops",), filter=flt, limit=50)))

    assert await hits({"n": {"$gt": 2}}) == ["b", "c"]
    assert await hits({"n": {"$gte": 5}}) == ["b", "c"]
    assert await hits({"n": {"$lt": 5}}) == ["a"]
    assert await hits({"n": {"$lte": 5, "$gt": 1}}) == ["b"]
    assert await hits({"n": {"$gt": 9}}) == ["c"]  # 10.5 > 9 as numbers, "10" skipped
    assert await hits({"n": {"$eq": 5}}) == ["b"]
    assert await hits({"s": {"$ne": "apple"}}) == ["b", "c", "d", "e"]
    assert await hits({"s": {"$gt": "c"}}) == ["c", "d", "e"]
    assert await hits({"s": "banana"}) == ["b"]
    # A plain list is one value: exact, ordered equality, not any-of.
    assert await hits({"tags": ["x", "y"]}) == ["a"]
    assert await hits({"tags": ["x"]}) == ["b"]
    assert await hits({"flag": True}) == ["a"]
    assert await hits({"n": 1}) == ["a"]  # True is not 1
    assert await hits({"meta": {"k": 1}}) == ["a"]
    assert await hits({"n": {"$gt": 1}, "s": "cherry"}) == ["c"]


async def test_filters_run_inside_the_stores_search(backend: Any) -> None:
    """The filter reaches the agentkit store as a where on the value's fields (so a
    filtered page does not mean reading every item), and records written before the
    fields were kept (no ``lg_fields`` mark) are still judged on their value."""
    seen: list[Any] = []
    for name in ("scan", "search", "lexical_search"):
        inner = getattr(backend, name, None)
        if inner is None:
            continue

        def spy(*args: Any, _inner: Any = inner, **kwargs: Any) -> Any:
            seen.append(kwargs.get("where"))
            return _inner(*args, **kwargs)

        setattr(backend, name, spy)
    store = AgentkitStore(backend, scope=ACME)
    for i in range(30):
        await store.aput(("p",), f"k{i}", {"text": f"note {i}", "n": i, "even": i % 2 == 0})
    # an item as an older version wrote it: no field copies, no mark
    [old] = await backend.get([json.dumps([["p"], "k3"], separators=(",", ":"))], scope=ACME)
    bare = {k: v for k, v in old.metadata.items() if not k.startswith(("lg_f:", "lg_fields"))}
    await backend.upsert([type(old)(old.id, old.text, bare)], scope=ACME)
    flt = {"n": {"$gte": 3, "$lt": 6}, "even": False}
    found = sorted(i.key for i in await store.asearch(("p",), filter=flt, limit=10))
    assert found == ["k3", "k5"]
    ranked = sorted(i.key for i in await store.asearch(("p",), query="note", filter=flt))
    assert ranked == ["k3", "k5"]
    pushed = [w for w in seen if w and "$or" in w]
    assert pushed, seen
    assert any("lg_f:n" in json.dumps(w) for w in pushed)


async def test_filter_keys_and_values_are_data(api: Api) -> None:
    hostile = "x'); DELETE FROM chunks; --"
    await api("put", ("q",), "k1", {hostile: hostile, "a-b": 1, "1x": 2, "$": 3})
    await api("put", ("q",), "k2", {"other": 1})
    assert keys(await api("search", ("q",), filter={hostile: hostile})) == ["k1"]
    assert keys(await api("search", ("q",), filter={"a-b": 1, "1x": 2})) == ["k1"]
    assert await api("search", ("q",), filter={"other": hostile}) == []
    assert len(await api("search", ("q",))) == 2


# --- search with a query ---


async def test_query_ranks_by_relevance_with_finite_descending_scores(api: Api) -> None:
    docs = {
        "doc1": "zany zebra xerxes",
        "doc2": "something about dogs",
        "doc3": "text about birds",
    }
    for key, text in docs.items():
        await api("put", ("test",), key, {"text": text})
    found = await api("search", ("test",), query="zany xerxes")
    assert found[0].key == "doc1" and len(found) == 3
    scores = [i.score for i in found]
    assert all(s is not None and math.isfinite(s) for s in scores)
    assert scores == sorted(scores, reverse=True)
    await api("put", ("test",), "doc1", {"text": "new text about dogs"})
    after = await api("search", ("test",), query="zany xerxes")
    assert after[0].key != "doc1" or after[0].score < found[0].score
    top = await api("search", ("test",), query="new text about dogs", limit=1)
    assert keys(top) == ["doc1"]


async def test_query_pages_slice_one_stable_ranking(api: Api) -> None:
    topics = ["cats", "dogs", "birds", "fish", "whales", "otters", "bees"]
    for i in range(150):
        text = f"note {i} on {topics[i % 7]} and {topics[(i * 3) % 7]} number {i % 11}"
        await api("put", ("n", f"g{i % 4}"), f"k{i:03d}", {"text": text})
    whole = await api("search", ("n",), query="cats and whales number 3", limit=150)
    assert len(whole) == 150  # every indexed item under the prefix is ranked
    scores = [i.score for i in whole]
    assert all(s is not None and math.isfinite(s) for s in scores)
    assert scores == sorted(scores, reverse=True)  # the head and the tail alike
    paged: list[SearchItemKey] = []
    for offset in range(0, 150, 13):
        page = await api(
            "search", ("n",), query="cats and whales number 3", limit=13, offset=offset
        )
        paged += [(i.namespace, i.key, i.score) for i in page]
    assert paged == [(i.namespace, i.key, i.score) for i in whole]
    top3 = await api("search", ("n",), query="cats and whales number 3", limit=3)
    assert keys(top3) == keys(whole[:3])


SearchItemKey = tuple[tuple[str, ...], str, float | None]


async def test_query_with_filter_and_prefix(api: Api) -> None:
    docs = [
        ("doc1", {"text": "red apple", "color": "red", "score": 4.5}),
        ("doc2", {"text": "red car", "color": "red", "score": 3.0}),
        ("doc3", {"text": "green apple", "color": "green", "score": 4.0}),
        ("doc4", {"text": "blue car", "color": "blue", "score": 3.5}),
    ]
    for key, value in docs:
        await api("put", ("test",), key, value)
    await api("put", ("testing",), "doc5", {"text": "red apple", "color": "red"})
    found = await api("search", ("test",), query="apple", filter={"color": "red"})
    assert keys(found) == ["doc1", "doc2"]
    found = await api("search", ("test",), query="car", filter={"color": "red"})
    assert keys(found) == ["doc2", "doc1"]
    found = await api("search", ("test",), query="blue", filter={"score": {"$gt": 3.2}})
    assert keys(found)[0] == "doc4" and sorted(keys(found)) == ["doc1", "doc3", "doc4"]
    found = await api(
        "search", ("test",), query="apple", filter={"score": {"$gte": 4.0}, "color": "green"}
    )
    assert keys(found) == ["doc3"]


async def test_unindexed_items_are_never_ranked(api: Api) -> None:
    await api("put", ("t",), "ranked", {"text": "gentle rain on the roof"})
    await api("put", ("t",), "hidden", {"text": "zebra zebra zebra"}, index=False)
    # The exact words of the unindexed item: neither half may rank it.
    found = await api("search", ("t",), query="zebra zebra zebra")
    assert keys(found) == ["ranked", "hidden"]
    assert found[0].score is not None and found[1].score is None
    assert keys(await api("search", ("t",), query="zebra", limit=1)) == ["ranked"]
    # ... but it is stored, listed and filterable.
    assert (await api("get", ("t",), "hidden")).value == {"text": "zebra zebra zebra"}
    assert keys(await api("search", ("t",), filter={"text": "zebra zebra zebra"})) == ["hidden"]
    assert await api("list_namespaces") == [("t",)]


async def test_items_sharing_their_text_are_all_found_as_langgraphs_own_store_finds_them(
    api: Api,
) -> None:
    # One fact stored for three users, and three times on purpose: six items.
    fact = {"text": "prefers replies in French"}
    puts = [(("users",), key) for key in ("a", "b", "c")]
    puts += [(("team", user), "lang") for user in ("u1", "u2", "u3")]
    reference = InMemoryStore(index={"dims": 26, "embed": Letters(), "fields": ["text"]})
    for namespace, key in [*puts, (("users",), "other"), (("team", "u1"), "other")]:
        value = fact if key != "other" else {"text": "likes long walks"}
        await api("put", namespace, key, value)
        await reference.aput(namespace, key, value)
    for prefix in (("users",), ("team",)):
        stored = {p for p in puts if p[0][0] == prefix[0]}
        ours = await api("search", prefix, query="replies in French")
        theirs = await reference.asearch(prefix, query="replies in French")
        assert len(ours) == len(theirs) == 4
        assert {(i.namespace, i.key) for i in theirs[:3]} == stored
        assert {(i.namespace, i.key) for i in ours[:3]} == stored
        assert ours[3].key == theirs[3].key == "other"
    everything = await api("search", (), query="replies in French", limit=10)
    assert len(everything) == 8
    assert {(i.namespace, i.key) for i in everything} >= set(puts)
    assert len(await api("search", (), query="replies in French", limit=5)) == 5


async def test_fields_decide_the_indexed_text(backend: Any) -> None:
    store = AgentkitStore(backend, index={"fields": ["title"]})
    await store.aput(("d",), "by-title", {"title": "quokka habits", "body": "nothing here"})
    await store.aput(("d",), "by-body", {"title": "other things", "body": "quokka quokka"})
    await store.aput(("d",), "per-put", {"title": "x", "body": "quokka"}, index=["body"])
    found = await store.asearch(("d",), query="quokka")
    assert keys(found)[:2] in (["by-title", "per-put"], ["per-put", "by-title"])
    assert keys(found)[2] == "by-body"  # its body was never indexed
    assert found[2].score is not None and found[2].score < found[1].score


class Letters(Embeddings):
    """Letter counts: a deterministic embedding that is not agentkit's own."""

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self.embed_query(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        row = [0.0] * 26
        for ch in text.lower():
            if "a" <= ch <= "z":
                row[ord(ch) - 97] += 1.0
        return row


async def test_index_embed_is_used(tmp_path: Path) -> None:
    index: Any = {"dims": 26, "embed": Letters(), "fields": ["text"]}
    store = AgentkitStore(None, index=index)
    assert store.store.dim == 26
    await store.aput(("t",), "a", {"text": "aaaa"})
    await store.aput(("t",), "z", {"text": "zzzz"})
    assert keys(await store.asearch(("t",), query="zz")) == ["z", "a"]
    with AgentkitStore.from_conn_string(str(tmp_path / "e.db"), index=index) as opened:
        opened.put(("t",), "b", {"text": "bbb"})
        opened.put(("t",), "y", {"text": "yyy"})
        assert keys(opened.search(("t",), query="yy"))[0] == "y"
    with pytest.raises(InvalidArgument, match="ready store"):
        AgentkitStore(InMemoryVectorStore(), index=index)
    with pytest.raises(InvalidArgument, match="dims"):
        AgentkitStore(InMemoryVectorStore(HashingEmbedder(dim=8)), index={"dims": 9})


# --- list_namespaces ---


async def test_list_namespaces(api: Api) -> None:
    namespaces = [
        ("a", "b", "c"),
        ("a", "b", "d", "e"),
        ("a", "b", "d", "i"),
        ("a", "b", "f"),
        ("a", "c", "f"),
        ("b", "a", "f"),
        ("users", "123"),
        ("users", "456", "settings"),
        ("admin", "users", "789"),
    ]
    for i, ns in enumerate(namespaces):
        await api("put", ns, f"id_{i}", {"data": i})
    ab = [("a", "b", "c"), ("a", "b", "d", "e"), ("a", "b", "d", "i"), ("a", "b", "f")]
    assert await api("list_namespaces", prefix=("a", "b")) == ab
    assert await api("list_namespaces", suffix=("f",)) == [
        ("a", "b", "f"),
        ("a", "c", "f"),
        ("b", "a", "f"),
    ]
    assert await api("list_namespaces", prefix=("a",), suffix=("f",)) == [
        ("a", "b", "f"),
        ("a", "c", "f"),
    ]
    assert await api("list_namespaces", prefix=("a", "b"), max_depth=3) == [
        ("a", "b", "c"),
        ("a", "b", "d"),
        ("a", "b", "f"),
    ]
    assert await api("list_namespaces", prefix=("a", "b"), limit=2) == ab[:2]
    assert await api("list_namespaces", prefix=("a", "b"), offset=2) == ab[2:]
    assert await api("list_namespaces", prefix=("a", "*", "f")) == [
        ("a", "b", "f"),
        ("a", "c", "f"),
    ]
    assert await api("list_namespaces", suffix=("*", "f")) == [
        ("a", "b", "f"),
        ("a", "c", "f"),
        ("b", "a", "f"),
    ]
    assert await api("list_namespaces", prefix=("nonexistent",)) == []
    assert await api("list_namespaces", prefix=("users", "123")) == [("users", "123")]
    assert await api("list_namespaces", prefix=("users", "12")) == []  # whole segments
    assert await api("list_namespaces", max_depth=1) == [("a",), ("admin",), ("b",), ("users",)]
    assert await api("list_namespaces") == sorted(namespaces)
    # A namespace whose items are all gone is not listed.
    await api("delete", ("users", "123"), "id_6")
    assert await api("list_namespaces", prefix=("users",)) == [("users", "456", "settings")]


async def test_list_namespaces_paging_and_literal_labels(api: Api) -> None:
    for i in reversed(range(20)):
        await api("put", ("namespace", f"sub_{i:02d}"), f"id_{i}", {"i": i})
    for label in ("a%b", "a_b", "axb", "a*b"):
        await api("put", ("lit", label), "k", {})
    pages = [
        await api("list_namespaces", prefix=("namespace",), limit=5, offset=o) for o in (0, 5, 15)
    ]
    assert pages == [
        [("namespace", f"sub_{i:02d}") for i in range(0, 5)],
        [("namespace", f"sub_{i:02d}") for i in range(5, 10)],
        [("namespace", f"sub_{i:02d}") for i in range(15, 20)],
    ]
    assert await api("list_namespaces", prefix=("lit", "a_b")) == [("lit", "a_b")]
    assert await api("list_namespaces", prefix=("lit", "a%b")) == [("lit", "a%b")]
    assert await api("list_namespaces", prefix=("lit", "*")) == [
        ("lit", "a%b"),
        ("lit", "a*b"),
        ("lit", "a_b"),
        ("lit", "axb"),
    ]
    assert await api("list_namespaces", prefix=("*", "users"), suffix=("*", "settings")) == []
    ops = [ListNamespacesOp(match_conditions=(MatchCondition("prefix", ("lit", "axb")),))]
    assert await api("batch", ops) == [[("lit", "axb")]]


# --- TTL ---


async def test_ttl_expired_items_are_never_returned(api: Api, clock: Clock) -> None:
    await api("put", ("ttl", "gone"), "e", {"text": "short lived"}, ttl=1)
    await api("put", ("ttl", "kept"), "c", {"text": "short lived too"})
    await api("put", ("ttl", "kept"), "a", {"text": "a"}, ttl=10)
    await api("put", ("ttl", "kept"), "b", {"text": "b"}, ttl=1)
    clock.advance(61)
    assert await api("get", ("ttl", "gone"), "e") is None
    assert await api("search", ("ttl", "gone")) == []
    assert keys(await api("search", ("ttl",), query="short lived")) == ["c", "a"]
    assert keys(await api("search", ("ttl",), limit=1, offset=1)) == ["c"]  # before paging
    assert await api("list_namespaces", prefix=("ttl",)) == [("ttl", "kept")]


async def test_reads_refresh_ttl_unless_told_not_to(api: Api, clock: Clock) -> None:
    ns = ("ttl",)
    await api("put", ns, "got", {"text": "x"}, ttl=1)
    await api("put", ns, "found", {"text": "findable words"}, ttl=1)
    await api("put", ns, "peeked", {"text": "y"}, ttl=1)
    clock.advance(50)
    assert await api("get", ns, "got") is not None
    assert keys(await api("search", ns, query="findable words", limit=1)) == ["found"]
    assert await api("get", ns, "peeked", refresh_ttl=False) is not None
    clock.advance(50)  # 100 s after the put, 50 s after the reads
    assert await api("get", ns, "got", refresh_ttl=False) is not None
    assert await api("get", ns, "found", refresh_ttl=False) is not None
    assert await api("get", ns, "peeked") is None
    # An expired item is not brought back by a put elsewhere or by a refreshing read.
    clock.advance(61)
    assert await api("get", ns, "got") is None
    assert await api("search", ns) == []


async def test_a_put_after_expiry_starts_a_new_item(api: Api, clock: Clock) -> None:
    await api("put", ("t",), "k", {"v": 1}, ttl=1)
    first = await api("get", ("t",), "k")
    clock.advance(120)
    await api("put", ("t",), "k", {"v": 2})
    second = await api("get", ("t",), "k")
    assert second.value == {"v": 2} and second.created_at > first.created_at
    clock.advance(10_000)
    assert (await api("get", ("t",), "k")).value == {"v": 2}  # no TTL any more


async def test_ttl_config_defaults(backend: Any, clock: Clock) -> None:
    store = AgentkitStore(backend, ttl={"default_ttl": 1, "refresh_on_read": False})
    await store.aput(("t",), "default", {"v": 1})  # takes default_ttl
    await store.aput(("t",), "forever", {"v": 2}, ttl=None)  # None: never expires
    clock.advance(50)
    assert await store.aget(("t",), "default") is not None  # read, but no refresh
    clock.advance(20)
    assert await store.aget(("t",), "default") is None
    assert await store.aget(("t",), "default", refresh_ttl=True) is None
    assert keys(await store.asearch(("t",))) == ["forever"]
    assert store.bind(GLOBEX).ttl_config == store.ttl_config
    with pytest.raises(InvalidArgument):
        AgentkitStore(backend, ttl={"default_ttl": -1})
    with pytest.raises(InvalidArgument):
        AgentkitStore(backend, ttl={"default_tll": 1})  # type: ignore[typeddict-unknown-key]


class Racing:
    """An agentkit store whose next ``get`` or ``scan`` lets another caller's put land
    after it has read (``race`` is that put; it runs once)."""

    def __init__(self) -> None:
        self.inner = InMemoryVectorStore(HashingEmbedder(dim=64))
        self.race: Callable[[], Any] | None = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def _raced(self, found: Any) -> Any:
        race, self.race = self.race, None
        if race is not None:
            await race()
        return found

    async def get(self, ids: Sequence[str], *, scope: Scope) -> Any:
        return await self._raced(await self.inner.get(ids, scope=scope))

    async def scan(self, **kwargs: Any) -> Any:
        return await self._raced(await self.inner.scan(**kwargs))


async def test_a_refresh_never_writes_back_an_older_value(clock: Clock) -> None:
    """A put landing between a read and its TTL refresh survives the refresh."""
    racing = Racing()
    store = AgentkitStore(racing)
    await store.aput(("t",), "k", {"v": "old"}, ttl=5)
    clock.advance(1)
    racing.race = lambda: store.aput(("t",), "k", {"v": "new"}, ttl=5)
    seen = await store.aget(("t",), "k")  # reads "old", then refreshes
    assert seen is not None and seen.value == {"v": "old"}
    now = await store.aget(("t",), "k", refresh_ttl=False)
    assert now is not None and now.value == {"v": "new"}


# --- TTL sweeping ---


async def test_sweep_deletes_only_this_scopes_expired_items(
    api: Api, backend: Any, clock: Clock
) -> None:
    from agentkit.vector import Chunk

    other = api.bind(GLOBEX)
    await api("put", ("s", "a"), "gone", {"text": "x"}, ttl=1)
    await api("put", ("s", "b"), "gone too", {"text": "x"}, ttl=2)
    await api("put", ("s", "a"), "kept", {"text": "x"}, ttl=10)
    await api("put", ("s", "a"), "forever", {"text": "x"})
    await other("put", ("s", "a"), "gone", {"text": "globex"}, ttl=1)
    # A record of the bucket that is not an item, carrying an item's expiry key.
    await backend.upsert([Chunk("plain", "text", {"lg_expires": 0.0})], scope=ACME)
    assert await api("sweep_ttl") == 0  # nothing expired yet
    clock.advance(121)
    assert await api("sweep_ttl") == 2
    assert await api("sweep_ttl") == 0
    left = await backend.scan(scope=ACME)
    assert sorted(c.metadata.get("lg_key", c.id) for c in left) == ["forever", "kept", "plain"]
    assert await api("list_namespaces") == [("s", "a")]  # ("s", "b") went with its item
    # The other tenant's expired item is untouched until that tenant sweeps.
    assert [c.metadata["lg_key"] for c in await backend.scan(scope=GLOBEX)] == ["gone"]
    assert await other("sweep_ttl") == 1
    assert await backend.scan(scope=GLOBEX) == []


async def test_sweep_spares_refreshed_and_rewritten_items(api: Api, clock: Clock) -> None:
    ns = ("s",)
    await api("put", ns, "read", {"text": "x"}, ttl=1)
    await api("put", ns, "rewritten", {"text": "x"}, ttl=1)
    await api("put", ns, "unread", {"text": "x"}, ttl=1)
    clock.advance(50)
    assert await api("get", ns, "read") is not None  # refreshes
    await api("put", ns, "rewritten", {"text": "y"})  # no TTL any more
    clock.advance(20)
    assert await api("sweep_ttl") == 1
    assert keys(await api("search", ns)) == ["read", "rewritten"]


async def test_sweep_never_deletes_a_put_landing_after_its_scan(clock: Clock) -> None:
    """The sweep deletes by the expiry it saw: a value put since then survives."""
    racing = Racing()
    store = AgentkitStore(racing)
    await store.aput(("t",), "k", {"v": "old"}, ttl=1)
    await store.aput(("t",), "j", {"v": "old"}, ttl=1)
    clock.advance(61)
    racing.race = lambda: store.aput(("t",), "k", {"v": "new"}, ttl=1)
    assert await store.asweep_ttl() == 1  # "j"; the new "k" stays
    kept = await store.aget(("t",), "k", refresh_ttl=False)
    assert kept is not None and kept.value == {"v": "new"}
    assert await store.aget(("t",), "j") is None


class Watched(AgentkitStore):
    """Signals each sweep (and can fail the first ones), so tests wait for an event."""

    def __init__(self, *args: Any, failures: int = 0, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.counts: list[int] = []
        self.swept = threading.Event()
        self.failures = failures

    async def asweep_ttl(self) -> int:
        if self.failures:
            self.failures -= 1
            self.swept.set()
            raise RuntimeError("injected sweep failure")
        count = await super().asweep_ttl()
        self.counts.append(count)
        self.swept.set()
        return count

    async def next_sweep(self) -> None:
        self.swept.clear()
        assert await asyncio.to_thread(self.swept.wait, 30)


def sweepers() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name == "agentkit-ttl-sweeper"]


def sweeper_tasks() -> list[asyncio.Task[Any]]:
    return [t for t in asyncio.all_tasks() if t.get_name() == "agentkit-ttl-sweeper"]


async def test_thread_sweeper_sweeps_until_stopped(backend: Any, clock: Clock) -> None:
    store = Watched(backend, scope=ACME, failures=1, ttl={"sweep_interval_minutes": 1e-5})
    await store.aput(("t",), "k", {"v": 1}, ttl=1)
    await store.aput(("t",), "forever", {"v": 1})
    clock.advance(61)
    future = store.start_ttl_sweeper()
    assert store.start_ttl_sweeper() is future  # one thread per store
    await store.next_sweep()  # the injected failure: logged, the thread sweeps on
    while 1 not in store.counts:
        await store.next_sweep()
    assert await backend.scan(scope=ACME, where={"lg_key": "k"}) == []
    assert await asyncio.to_thread(store.stop_ttl_sweeper) is True
    assert future.done() and not future.cancelled() and sweepers() == []
    assert keys(await store.asearch(("t",))) == ["forever"]


async def test_thread_sweeper_stops_mid_wait_by_cancel_or_exit(backend: Any) -> None:
    store = AgentkitStore(backend)  # default interval: 5 minutes, never reached here
    future = store.start_ttl_sweeper()
    assert sweepers() == ["agentkit-ttl-sweeper"]
    assert future.cancel()  # LangGraph's way to stop a sync sweeper
    assert await asyncio.to_thread(store.stop_ttl_sweeper, 30) is True
    assert sweepers() == []
    with AgentkitStore(backend) as store:
        store.start_ttl_sweeper(sweep_interval_minutes=60)
    assert sweepers() == []
    assert store.stop_ttl_sweeper() is True  # nothing left to stop


async def test_task_sweeper_sweeps_until_stopped(backend: Any, clock: Clock) -> None:
    store = Watched(backend, scope=ACME, failures=1)
    await store.aput(("t",), "k", {"v": 1}, ttl=1)
    clock.advance(61)
    task = await store.astart_ttl_sweeper(sweep_interval_minutes=1e-5)
    assert await store.astart_ttl_sweeper() is task
    while 1 not in store.counts:
        await store.next_sweep()
    assert await store.astop_ttl_sweeper() is True
    assert task.done() and not task.cancelled() and sweeper_tasks() == []
    assert await backend.scan(scope=ACME) == []


async def test_task_sweeper_cancellation_leaves_no_task(backend: Any) -> None:
    store = AgentkitStore(backend)
    task = await store.astart_ttl_sweeper()
    task.cancel()
    await asyncio.wait({task})
    assert task.cancelled() and sweeper_tasks() == []
    again = await store.astart_ttl_sweeper()  # a stopped sweeper can be started again
    assert again is not task and not again.done()
    async with store:  # leaving the block stops it
        pass
    assert again.done() and sweeper_tasks() == []

    class Stuck(AgentkitStore):
        """A sweep that never ends: stopping must cancel it, not wait forever."""

        started = asyncio.Event()

        async def asweep_ttl(self) -> int:
            self.started.set()
            await asyncio.Event().wait()
            return 0

    stuck = Stuck(backend)
    task = await stuck.astart_ttl_sweeper(sweep_interval_minutes=1e-5)
    await stuck.started.wait()
    assert await stuck.astop_ttl_sweeper(timeout=0) is True
    assert task.cancelled() and sweeper_tasks() == []


def test_from_conn_string_exit_stops_the_sweeper(tmp_path: Path) -> None:
    with AgentkitStore.from_conn_string(str(tmp_path / "s.db"), ttl={"default_ttl": 1}) as store:
        store.start_ttl_sweeper()
        assert sweepers() == ["agentkit-ttl-sweeper"]
    assert sweepers() == []


async def test_afrom_conn_string_exit_stops_the_sweeper(tmp_path: Path) -> None:
    async with AgentkitStore.afrom_conn_string(str(tmp_path / "s.db")) as store:
        task = await store.astart_ttl_sweeper()
        store.start_ttl_sweeper()
    assert task.done() and sweeper_tasks() == [] and sweepers() == []


def test_sweep_interval_is_checked() -> None:
    for bad in (0, -1, float("inf"), True, "5"):
        with pytest.raises(InvalidArgument):
            AgentkitStore(ttl={"sweep_interval_minutes": bad})  # type: ignore[typeddict-item]
        with pytest.raises(InvalidArgument):
            AgentkitStore().start_ttl_sweeper(sweep_interval_minutes=bad)  # type: ignore[arg-type]
    assert sweepers() == []


# --- tenants ---


async def test_a_scope_never_sees_or_touches_another(api: Api) -> None:
    other = api.bind(GLOBEX)
    await api("put", ("shared", "ns"), "k", {"text": "acme secret plans"})
    await other("put", ("shared", "ns"), "k", {"text": "globex secret plans"})
    await other("put", ("globex", "only"), "g", {"text": "globex"})
    assert (await api("get", ("shared", "ns"), "k")).value["text"] == "acme secret plans"
    assert (await other("get", ("shared", "ns"), "k")).value["text"] == "globex secret plans"
    assert keys(await api("search", ("shared",), query="globex secret")) == ["k"]
    assert [i.value["text"] for i in await api("search", ())] == ["acme secret plans"]
    assert await api("list_namespaces") == [("shared", "ns")]
    assert await api("get", ("globex", "only"), "g") is None
    await api("delete", ("globex", "only"), "g")
    await api("delete", ("shared", "ns"), "k")
    assert (await other("get", ("globex", "only"), "g")) is not None
    assert (await other("get", ("shared", "ns"), "k")).value["text"] == "globex secret plans"
    assert await other("list_namespaces") == [("globex", "only"), ("shared", "ns")]


async def test_other_records_in_the_scope_are_not_items(backend: Any) -> None:
    from agentkit.vector import Chunk

    await backend.upsert([Chunk("plain-doc", "quokka notes", {"source": "x"})], scope=ACME)
    store = AgentkitStore(backend, scope=ACME)
    await store.aput(("n",), "k", {"text": "quokka"})
    assert keys(await store.asearch((), query="quokka notes")) == ["k"]
    assert await store.alist_namespaces() == [("n",)]
    assert await backend.get(["plain-doc"], scope=ACME)


# --- opening, threads, loops ---


def test_from_conn_string_persists_and_closes(tmp_path: Path) -> None:
    path = str(tmp_path / "store.db")
    with AgentkitStore.from_conn_string(path, scope=ACME) as store:
        store.put(("memories", "u1"), "likes", {"text": "likes green tea"})
    with AgentkitStore.from_conn_string(path, scope=ACME) as store:
        assert store.get(("memories", "u1"), "likes").value == {"text": "likes green tea"}  # type: ignore[union-attr]
        assert keys(store.search(("memories",), query="green tea")) == ["likes"]
    with AgentkitStore.from_conn_string(path, scope=GLOBEX) as store:
        assert store.search(("memories",)) == []
    with AgentkitStore.from_conn_string(":memory:") as store:
        assert isinstance(store.store, InMemoryVectorStore)


async def test_afrom_conn_string(tmp_path: Path) -> None:
    async with AgentkitStore.afrom_conn_string(str(tmp_path / "a.db")) as store:
        await store.aput(("n",), "k", {"text": "hello"})
        assert (await store.aget(("n",), "k")).value == {"text": "hello"}  # type: ignore[union-attr]


async def test_sync_calls_beside_a_running_loop_and_from_threads(backend: Any) -> None:
    store = AgentkitStore(backend, scope=ACME)
    store.put(("t",), "on-loop", {"text": "called on the loop's own thread"})
    errors: list[BaseException] = []

    def worker(i: int) -> None:
        try:
            store.put(("t",), f"w{i}", {"text": f"thread {i}"})
            assert store.get(("t",), f"w{i}") is not None
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(await store.asearch(("t",), limit=100)) == 9


def test_constructor_checks() -> None:
    with pytest.raises(InvalidArgumentType):
        AgentkitStore(object())
    with pytest.raises(InvalidArgumentType):
        AgentkitStore(index={"fields": "text"})  # type: ignore[typeddict-item]
    store = AgentkitStore(scope=ACME)
    assert store.bind(GLOBEX).scope == GLOBEX and store.bind(GLOBEX).store is store.store


# --- a real client: a LangGraph agent whose tools use runtime.store ---


class ScriptedModel(BaseChatModel):
    """Replies from a script (a str is a final answer, a dict a tool call)."""

    script: list[str | dict[str, Any]] = Field(default_factory=list)
    seen: list[list[BaseMessage]] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        self.seen.append(list(messages))
        step = self.script.pop(0) if self.script else "done"
        if isinstance(step, dict):
            reply = AIMessage("", tool_calls=[{**step, "id": f"call-{len(self.seen)}"}])
        else:
            reply = AIMessage(step)
        return ChatResult(generations=[ChatGeneration(message=reply)])

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedModel:  # type: ignore[override]
        return self


@dataclass
class User:
    user_id: str


@tool
def remember(fact: str, runtime: ToolRuntime[User]) -> str:
    """Remember a fact about the user."""
    assert runtime.store is not None
    ns = ("memories", runtime.context.user_id)
    key = f"fact-{len(runtime.store.search(ns, limit=100))}"
    runtime.store.put(ns, key, {"text": fact})
    return f"stored {key}"


@tool
def recall(query: str, runtime: ToolRuntime[User]) -> str:
    """Recall what is known about the user."""
    assert runtime.store is not None
    hits = runtime.store.search(("memories", runtime.context.user_id), query=query, limit=1)
    return json.dumps([h.value["text"] for h in hits])


@pytest.mark.parametrize("sync", [True, False])
async def test_agent_tools_read_and_write_runtime_store(backend: Any, sync: bool) -> None:
    store = AgentkitStore(backend, scope=ACME)
    model = ScriptedModel(
        script=[
            {"name": "remember", "args": {"fact": "prefers oat milk in coffee"}},
            {"name": "remember", "args": {"fact": "has a dog called Rex"}},
            "Noted both.",
            {"name": "recall", "args": {"query": "what milk in coffee"}},
            "You like oat milk.",
        ]
    )
    agent = create_agent(model, tools=[remember, recall], store=store, context_schema=User)

    def run(text: str, user: str) -> dict[str, Any]:
        return agent.invoke({"messages": [("user", text)]}, context=User(user))

    async def arun(text: str, user: str) -> dict[str, Any]:
        return await agent.ainvoke({"messages": [("user", text)]}, context=User(user))

    call: Callable[[str, str], Any] = (lambda t, u: asyncio.to_thread(run, t, u)) if sync else arun
    await call("remember my coffee and my dog", "u1")
    stored = await store.asearch(("memories", "u1"))
    assert sorted(i.value["text"] for i in stored) == [
        "has a dog called Rex",
        "prefers oat milk in coffee",
    ]
    result = await call("what do I take in coffee?", "u1")
    tool_messages = [m for m in result["messages"] if isinstance(m, ToolMessage)]
    assert json.loads(tool_messages[-1].text) == ["prefers oat milk in coffee"]
    # Another tenant's agent, same store object, sees none of it.
    assert await store.bind(GLOBEX).asearch(("memories",)) == []
