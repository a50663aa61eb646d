"""InMemoryVectorStore: a real VectorPort with tenant buckets, filters and upserts."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

import agentkit.vector.in_memory as in_memory
from agentkit.kernel import InvalidArgument, Scope
from agentkit.vector import Chunk, HashingEmbedder, InMemoryVectorStore, VectorPort

A = Scope("acme", "support")
B = Scope("globex", "support")

DOCS = [
    Chunk("1", "refunds are issued within 30 days", {"lang": "en", "topic": "billing"}),
    Chunk("2", "shipping takes five business days", {"lang": "en", "topic": "shipping"}),
    Chunk("3", "les remboursements prennent 30 jours", {"lang": "fr", "topic": "billing"}),
    Chunk("4", "our office cat is called refund", {"lang": "en"}),
]


async def store_with_docs(scope: Scope = A) -> InMemoryVectorStore:
    store = InMemoryVectorStore()
    await store.upsert(DOCS, scope=scope)
    return store


def test_is_a_vector_port_with_hashing_default() -> None:
    store = InMemoryVectorStore()
    assert isinstance(store, VectorPort)
    assert isinstance(store.embedder, HashingEmbedder)


async def test_k_larger_than_the_bucket_returns_everything() -> None:
    store = await store_with_docs()
    assert len(await store.search("x", k=10**9, scope=A)) == len(DOCS)


async def test_delete_keeps_every_other_record_findable() -> None:
    store = InMemoryVectorStore()
    chunks = [Chunk(str(i), f"document {i} word{i}") for i in range(20)]
    await store.upsert(chunks, scope=A)
    await store.delete(["0", "7", "missing"], scope=A)
    assert await store.count(scope=A) == 18
    for i in range(20):
        hits = await store.search(f"word{i}", k=1, scope=A)
        if i in (0, 7):
            assert all(c.id != str(i) for _, c in hits)
        else:
            assert hits[0][1].id == str(i)
            assert hits[0][1].text == f"document {i} word{i}"


async def test_caller_mutation_never_reaches_the_store() -> None:
    meta: dict[str, Any] = {"tags": ["a"], "lang": "en"}
    store = InMemoryVectorStore()
    await store.upsert([Chunk("1", "hello world", meta)], scope=A)
    meta["lang"] = "fr"
    meta["tags"].append("b")
    ((_, got),) = await store.search("hello", k=1, scope=A)
    assert got.metadata == {"tags": ["a"], "lang": "en"}
    got.metadata["tags"].append("c")  # type: ignore[index]
    ((_, again),) = await store.search("hello", k=1, scope=A)
    assert again.metadata == {"tags": ["a"], "lang": "en"}


class _BrokenEmbedder:
    dim = 4

    async def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        return np.full((len(texts), 3), np.nan, dtype=np.float32)


async def test_a_misbehaving_embedder_is_caught_before_storage() -> None:
    store = InMemoryVectorStore(_BrokenEmbedder())
    with pytest.raises(InvalidArgument, match="shape"):
        await store.upsert([Chunk("1", "x")], scope=A)
    assert await store.count() == 0


async def test_upsert_vectors_takes_precomputed_rows_and_normalises_them() -> None:
    store = InMemoryVectorStore(HashingEmbedder(dim=4))
    vectors = np.array([[3.0, 0, 0, 0], [0, 2.0, 0, 0]], dtype=np.float64)
    await store.upsert_vectors([Chunk("x", "x"), Chunk("y", "y")], vectors, scope=A)
    bucket = store._buckets[A]
    assert np.allclose(bucket.snap.vectors[:2], [[1, 0, 0, 0], [0, 1, 0, 0]])
    with pytest.raises(InvalidArgument, match="shape"):
        await store.upsert_vectors([Chunk("z", "z")], np.ones((1, 5)), scope=A)
    with pytest.raises(InvalidArgument, match="NaN"):
        await store.upsert_vectors([Chunk("z", "z")], [[np.nan, 0, 0, 0]], scope=A)
    assert await store.count(scope=A) == 2


async def test_adding_one_at_a_time_grows_capacity_geometrically() -> None:
    # The promise: adding vectors does not copy the whole matrix each time.
    store = InMemoryVectorStore(HashingEmbedder(dim=8))
    capacities = set()
    reallocations = 0
    previous = None
    for i in range(1000):
        await store.upsert_vectors([Chunk(str(i), "t")], np.ones((1, 8)), scope=A)
        matrix = store._buckets[A].snap.vectors
        capacities.add(matrix.shape[0])
        reallocations += matrix is not previous
        previous = matrix
    assert len(capacities) <= 7  # 16, 32, ..., 1024
    assert reallocations == len(capacities)  # a new buffer only when capacity grows
    assert await store.count(scope=A) == 1000


async def test_big_buckets_are_searched_off_the_event_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    threads: list[int] = []
    real = in_memory.top_k

    def spy(*args: Any) -> Any:
        threads.append(threading.get_ident())
        return real(*args)

    monkeypatch.setattr(in_memory, "top_k", spy)
    monkeypatch.setattr(in_memory, "_THREAD_ROWS", 50)
    store = InMemoryVectorStore(HashingEmbedder(dim=8))
    await store.upsert([Chunk(str(i), f"t{i}") for i in range(10)], scope=A)
    await store.search("t1", k=1, scope=A)
    await store.upsert([Chunk(str(i), f"t{i}") for i in range(100)], scope=A)
    await store.search("t1", k=1, scope=A)
    loop_thread = threading.get_ident()
    assert threads[0] == loop_thread
    assert threads[1] != loop_thread


async def test_a_pinned_search_keeps_its_snapshot_while_rows_change() -> None:
    # A search computing in a worker thread must not see a half-applied delete.
    store = InMemoryVectorStore(HashingEmbedder(dim=8))
    await store.upsert([Chunk(str(i), f"word{i}") for i in range(5)], scope=A)
    bucket = store._buckets[A]
    pinned = bucket.snap
    pinned.readers += 1  # what an in-flight search holds
    before = pinned.vectors[:5].copy()
    await store.delete(["0"], scope=A)
    await store.upsert([Chunk("1", "changed")], scope=A)
    assert np.array_equal(pinned.vectors[:5], before)
    assert [c.id for c in pinned.payloads] == ["0", "1", "2", "3", "4"]
    pinned.readers -= 1
    assert await store.count(scope=A) == 4


async def test_concurrent_searches_and_writes_stay_consistent() -> None:
    store = InMemoryVectorStore(HashingEmbedder(dim=32))
    await store.upsert([Chunk(str(i), f"doc {i} token{i}") for i in range(200)], scope=A)

    async def reader() -> None:
        for i in range(50):
            hits = await store.search(f"token{i}", k=3, scope=A)
            for _, chunk in hits:
                assert chunk.text.startswith("doc") or chunk.text.startswith("new")

    async def writer() -> None:
        for i in range(50):
            await store.upsert([Chunk(str(i), f"new {i}")], scope=A)
            await store.delete([str(199 - i)], scope=A)
            await asyncio.sleep(0)

    await asyncio.gather(reader(), writer(), reader())
    assert await store.count(scope=A) == 150


VALUES: list[Any] = [1, True, 1.0, "1", 0, False, None, "en", [1, 2], {"a": 1}, (1, 2)]
SCALAR_VALUES: list[Any] = [v for v in VALUES if not isinstance(v, (list, dict, tuple))]


async def test_filtered_search_agrees_with_matches_where_for_every_value_shape() -> None:
    import random

    from agentkit.vector import matches_where

    rng = random.Random(5)
    store = InMemoryVectorStore(HashingEmbedder(dim=16))
    chunks = []
    for i in range(120):
        meta = {key: rng.choice(VALUES) for key in ("a", "b") if rng.random() < 0.8}
        chunks.append(Chunk(str(i), f"text {i}", meta))
    await store.upsert(chunks, scope=A)
    for _ in range(60):
        where: dict[str, Any] = {}
        for key in rng.sample(["a", "b"], rng.randint(1, 2)):
            # a where value is a scalar or an any-of of scalars (a dict is an operator dict)
            where[key] = rng.choice([*SCALAR_VALUES, [1, "en"], ("x", None), {True, "1"}])
        hits = await store.search("text", k=1000, scope=A, where=where)
        expected = {c.id for c in chunks if matches_where(c.metadata, where)}
        assert {c.id for _, c in hits} == expected, where


async def test_filters_see_writes_made_after_an_earlier_filtered_search() -> None:
    store = InMemoryVectorStore(HashingEmbedder(dim=16))
    await store.upsert([Chunk("1", "a", {"t": "x"}), Chunk("2", "b", {"t": "y"})], scope=A)
    assert [c.id for _, c in await store.search("a", k=5, scope=A, where={"t": "x"})] == ["1"]
    await store.upsert([Chunk("2", "b", {"t": "x"})], scope=A)
    await store.upsert([Chunk("3", "c", {"t": "x"})], scope=A)
    await store.delete(["1"], scope=A)
    hits = await store.search("a", k=5, scope=A, where={"t": "x"})
    assert sorted(c.id for _, c in hits) == ["2", "3"]


async def test_usable_as_an_async_context_manager_like_the_durable_stores() -> None:
    async with InMemoryVectorStore() as store:
        await store.upsert([Chunk("1", "x")], scope=A)
        assert await store.count(scope=A) == 1


# Text that is not valid Unicode (a lone surrogate) cannot be stored by any store; every
# store refuses it through the one shared batch check, naming the chunk, before anything
# lands. The id names the chunk, so when the id is the bad part the index does.
LONE_SURROGATES = [
    pytest.param(Chunk("t", "lone \ud800 surrogate"), r"chunk 't'.*text", id="text"),
    pytest.param(Chunk("x\udfff", "fine"), r"chunks\[1\].*id", id="id"),
    pytest.param(Chunk("mk", "fine", {"k\ud800": 1}), r"chunk 'mk'.*metadata", id="meta-key"),
    pytest.param(
        Chunk("mv", "fine", {"outer": {"list": ["ok", ("bad \udc80",)]}}),
        r"chunk 'mv'.*metadata",
        id="meta-nested-value",
    ),
    pytest.param(
        Chunk("mn", "fine", {"outer": [{"k\udbff": "v"}]}), r"chunk 'mn'.*metadata", id="meta-nk"
    ),
]


@pytest.mark.parametrize(("bad", "names"), LONE_SURROGATES)
async def test_lone_surrogates_are_refused_naming_the_chunk(bad: Chunk, names: str) -> None:
    store = await store_with_docs()
    with pytest.raises(InvalidArgument, match=names):
        await store.upsert([Chunk("new", "fresh row"), bad], scope=A)
    assert await store.count(scope=A) == len(DOCS)
    assert "new" not in {c.id for _, c in await store.search("fresh row", k=10, scope=A)}


async def test_queries_and_filters_with_lone_surrogates_are_refused() -> None:
    store = await store_with_docs()
    with pytest.raises(InvalidArgument, match="query"):
        await store.search("refund \ud800", k=2, scope=A)
    with pytest.raises(InvalidArgument, match="where"):
        await store.search("refund", k=2, scope=A, where={"lang": "e\udc00n"})
    with pytest.raises(InvalidArgument, match=r"ids\[0\]"):
        await store.delete(["\ud800"], scope=A)
    assert await store.count(scope=A) == len(DOCS)


async def test_exact_is_accepted_and_changes_nothing_the_in_memory_store_is_exact() -> None:
    """Code written for the durable stores' ``exact=`` runs unchanged here."""
    store = InMemoryVectorStore(HashingEmbedder(dim=64))
    await store.upsert(DOCS, scope=A)
    default = await store.search("shipping time", k=3, scope=A)
    assert await store.search("shipping time", k=3, scope=A, exact=True) == default
    with pytest.raises(TypeError, match="exact"):
        await store.search("shipping", k=3, scope=A, exact="yes")  # type: ignore[arg-type]
