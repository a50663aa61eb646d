"""AgentkitVectorStore: agentkit's stores as a LangChain VectorStore.

LangChain's own standard suite runs over the SQLite store (a file per test), the
in-memory store, and a scoped view of a SQLite file in which another tenant already
holds documents under the very same ids. The tests below cover what the suite does
not: the one-line ``from_texts`` path, scores, vectors, MMR, filters, tenants,
persistence and refusals.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from agentkit_langchain import AgentkitEmbeddings, AgentkitVectorStore, LangChainEmbedder
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding, Embeddings
from langchain_core.vectorstores import VectorStore
from langchain_tests.integration_tests import VectorStoreIntegrationTests

from agentkit.interop import run_sync
from agentkit.kernel import Ctx, Scope
from agentkit.kernel.errors import InvalidArgument, InvalidArgumentType, InvalidFilter, StoreError
from agentkit.state.memory import HybridMemory
from agentkit.vector import HashingEmbedder, InMemoryVectorStore, SQLiteVectorStore

ACME = Scope("acme", "support")
GLOBEX = Scope("globex", "support")


class TestSQLiteStandard(VectorStoreIntegrationTests):
    @pytest.fixture
    def vectorstore(self, tmp_path: Path) -> Iterator[VectorStore]:  # type: ignore[override]
        store = AgentkitVectorStore(embedding=self.get_embeddings(), path=tmp_path / "lc.db")
        yield store
        store.close()


class TestInMemoryStandard(VectorStoreIntegrationTests):
    @pytest.fixture
    def vectorstore(self) -> Iterator[VectorStore]:  # type: ignore[override]
        yield AgentkitVectorStore(InMemoryVectorStore(LangChainEmbedder(self.get_embeddings())))


class TestScopedSQLiteStandard(VectorStoreIntegrationTests):
    """The suite from inside one tenant, while another holds "foo"/"bar" under ids 1-3."""

    @pytest.fixture
    def vectorstore(self, tmp_path: Path) -> Iterator[VectorStore]:  # type: ignore[override]
        path = tmp_path / "shared.db"
        other = AgentkitVectorStore(embedding=self.get_embeddings(), path=path, scope=GLOBEX)
        other.add_texts(["foo", "bar", "baz"], [{"id": 9}] * 3, ids=["1", "2", "3"])
        store = AgentkitVectorStore(embedding=self.get_embeddings(), path=path, scope=ACME)
        yield store
        assert [d.page_content for d in other.get_by_ids(["1", "2", "3"])] == [
            "foo",
            "bar",
            "baz",
        ], "the other tenant's records were touched"
        store.close()
        other.close()


class TestSQLiteHybridStandard(VectorStoreIntegrationTests):
    """The suite again with similarity_search as agentkit's hybrid search."""

    @pytest.fixture
    def vectorstore(self, tmp_path: Path) -> Iterator[VectorStore]:  # type: ignore[override]
        store = AgentkitVectorStore(
            embedding=self.get_embeddings(), path=tmp_path / "h.db", search_mode="hybrid"
        )
        yield store
        store.close()


# -- beyond the standard suite -----------------------------------------------------------


def _hashing(path: Path, **kwargs: object) -> AgentkitVectorStore:
    return AgentkitVectorStore(path=path, **kwargs)  # type: ignore[arg-type]


class _QueryShifted(Embeddings):
    """An asymmetric model: a query ``q`` lands where the document "doc about q" does."""

    def __init__(self) -> None:
        self.inner = DeterministicFakeEmbedding(size=16)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        return self.inner.embed_query(f"doc about {text}")


def test_from_texts_is_the_one_line_migration(tmp_path: Path) -> None:
    store = AgentkitVectorStore.from_texts(
        ["refunds take five days", "shipping takes two days"],
        DeterministicFakeEmbedding(size=8),
        metadatas=[{"source": "refunds.md"}, {"source": "shipping.md"}],
        ids=["r", "s"],
        path=tmp_path / "m.db",
    )
    assert store.similarity_search("refunds take five days", k=1) == [
        Document(id="r", page_content="refunds take five days", metadata={"source": "refunds.md"})
    ]
    assert isinstance(store.embeddings, DeterministicFakeEmbedding)
    store.close()


def test_from_documents_keeps_ids_and_records_persist(tmp_path: Path) -> None:
    path = tmp_path / "p.db"
    docs = [
        Document(id="a", page_content="apples grow on trees", metadata={"n": 1}),
        Document(id="b", page_content="cars drive on roads", metadata={"n": 2}),
    ]
    first = AgentkitVectorStore.from_documents(docs, None, path=path)  # type: ignore[arg-type]
    first.close()
    again = AgentkitVectorStore(path=path)
    assert again.get_by_ids(["b", "a"]) == [docs[1], docs[0]]
    assert again.similarity_search("apples", k=1)[0].id == "a"
    again.close()


def test_reopening_with_another_embedding_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "e.db"
    store = AgentkitVectorStore.from_texts(["x"], DeterministicFakeEmbedding(size=8), path=path)
    store.close()
    other = AgentkitVectorStore(path=path)  # HashingEmbedder: another model
    with pytest.raises(StoreError, match="refusing to mix"):
        other.similarity_search("x", k=1)
    other.close()


def test_add_with_known_id_updates_in_place(tmp_path: Path) -> None:
    store = _hashing(tmp_path / "u.db")
    store.add_texts(["old text about cats"], [{"v": 1}], ids=["n1"])
    store.add_documents([Document(id="n1", page_content="new text about dogs", metadata={"v": 2})])
    assert store.get_by_ids(["n1"]) == [
        Document(id="n1", page_content="new text about dogs", metadata={"v": 2})
    ]
    assert [d.id for d in store.similarity_search("dogs", k=5)] == ["n1"]
    store.close()


def test_scores_are_cosine_and_relevance_is_within_0_1(tmp_path: Path) -> None:
    store = _hashing(tmp_path / "s.db")
    store.add_texts(["red apples", "green apples", "blue cars"], ids=["1", "2", "3"])
    scored = store.similarity_search_with_score("red apples", k=3)
    assert scored[0][0].id == "1"
    assert scored[0][1] == pytest.approx(1.0, abs=1e-5)
    assert [s for _, s in scored] == sorted((s for _, s in scored), reverse=True)
    relevance = store.similarity_search_with_relevance_scores("red apples", k=3)
    assert all(0.0 <= s <= 1.0 for _, s in relevance)
    kept = store.similarity_search_with_relevance_scores("red apples", k=3, score_threshold=0.3)
    assert {d.id for d, _ in kept} == {"1", "2"}
    store.close()


def test_query_is_embedded_with_embed_query(tmp_path: Path) -> None:
    store = AgentkitVectorStore(embedding=_QueryShifted(), path=tmp_path / "q.db")
    store.add_texts(["cats", "doc about cats", "dogs"], ids=["plain", "about", "dogs"])
    assert store.similarity_search("cats", k=1)[0].id == "about"
    store.close()


def test_search_by_vector(tmp_path: Path) -> None:
    embedding = DeterministicFakeEmbedding(size=8)
    store = AgentkitVectorStore(embedding=embedding, path=tmp_path / "v.db")
    store.add_texts(["one", "two", "three"], [{"n": 1}, {"n": 2}, {"n": 3}], ids=["1", "2", "3"])
    vector = embedding.embed_query("two")
    assert [d.id for d in store.similarity_search_by_vector(vector, k=1)] == ["2"]
    filtered = store.similarity_search_by_vector(vector, k=3, filter={"n": [1, 3]})
    assert {d.id for d in filtered} == {"1", "3"}
    store.close()


def test_mmr_trades_a_near_duplicate_for_variety(tmp_path: Path) -> None:
    store = _hashing(tmp_path / "mmr.db")
    store.add_texts(
        ["apple pie recipe", "apple pie recipe", "apple crumble recipe"], ids=["a", "a2", "b"]
    )
    plain = [d.id for d in store.similarity_search("apple pie recipe", k=2)]
    assert sorted(plain) == ["a", "a2"]
    found = store.max_marginal_relevance_search("apple pie recipe", k=2, fetch_k=3)
    diverse = [d.id for d in found]
    assert diverse[1] == "b" and diverse[0] in {"a", "a2"}
    retriever = store.as_retriever(search_type="mmr", search_kwargs={"k": 2, "fetch_k": 3})
    assert [d.id for d in retriever.invoke("apple pie recipe")] == diverse
    store.close()


def test_filter_dict_and_retriever(tmp_path: Path) -> None:
    store = _hashing(tmp_path / "f.db")
    store.add_texts(
        ["refund policy", "refund exceptions", "shipping policy"],
        [{"team": "billing"}, {"team": "support"}, {"team": "logistics"}],
        ids=["1", "2", "3"],
    )
    hits = store.similarity_search("refund", k=3, filter={"team": "support"})
    assert [d.id for d in hits] == ["2"]
    anyof = store.similarity_search("policy", k=3, filter={"team": ["billing", "logistics"]})
    assert {d.id for d in anyof} == {"1", "3"}
    retriever = store.as_retriever(search_kwargs={"k": 1, "filter": {"team": "logistics"}})
    assert [d.id for d in retriever.invoke("refund")] == ["3"]
    store.close()


def test_hybrid_search_mode_is_agentkits_one_hybrid_search(tmp_path: Path) -> None:
    twin = "reset a password from the login page"
    texts = [f"note {i} on refunds and shipping, case {i % 3}" for i in range(12)]
    store = _hashing(tmp_path / "h.db", scope=ACME, search_mode="hybrid")
    store.add_texts([*texts, twin, twin], ids=[*(f"n{i}" for i in range(12)), "a", "b"])
    for k in (1, 3, 14):
        assert len({d.id for d in store.similarity_search("refunds case 2", k=k)}) == k
    # Two records with one text are two results, as the CLI and AgentkitStore find them.
    assert {d.id for d in store.similarity_search(twin, k=2)} == {"a", "b"}
    got = store.similarity_search_with_score("refunds shipping case 1", k=5)
    want = run_sync(
        lambda: HybridMemory(store.store).query("refunds shipping case 1", k=5, ctx=Ctx(ACME))
    )
    assert [(d.id, s) for d, s in got] == [(i.id, i.score) for i in want]
    retriever = store.as_retriever(search_kwargs={"k": 2})
    assert [d.id for d in retriever.invoke("refunds shipping case 1")] == [i.id for i in want[:2]]
    relevance = store.similarity_search_with_relevance_scores("refunds shipping case 1", k=5)
    assert all(0.0 <= r <= 1.0 for _, r in relevance) and relevance[0][1] > relevance[-1][1]
    lexical = AgentkitVectorStore(store.store, scope=ACME, search_mode="lexical")
    assert {d.id for d in lexical.similarity_search(twin, k=2)} == {"a", "b"}
    with pytest.raises(NotImplementedError, match="BM25"):
        lexical.similarity_search_with_relevance_scores(twin, k=2)
    with pytest.raises(InvalidArgument, match="search_mode"):
        AgentkitVectorStore(store.store, search_mode="sparse")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentType, match="lexical_search"):
        AgentkitVectorStore(InMemoryVectorStore(HashingEmbedder()), search_mode="hybrid")
    store.close()


def test_unknown_keywords_and_callable_filters_are_refused(tmp_path: Path) -> None:
    store = _hashing(tmp_path / "r.db")
    store.add_texts(["a"], ids=["1"])
    with pytest.raises(InvalidArgument, match="fetch"):
        store.similarity_search("a", k=1, fetch=3)
    with pytest.raises(InvalidArgumentType, match="filter must be a dict"):
        store.similarity_search("a", k=1, filter=lambda doc: True)
    with pytest.raises(InvalidArgument, match="ids=None"):
        store.delete()
    assert [d.id for d in store.similarity_search("a", k=1)] == ["1"]
    store.close()


def test_unstorable_metadata_is_refused_and_nothing_lands(tmp_path: Path) -> None:
    store = _hashing(tmp_path / "bad.db")
    with pytest.raises(InvalidArgument, match="not JSON"):
        store.add_texts(["good", "bad"], [{}, {"when": object()}], ids=["g", "b"])
    assert store.get_by_ids(["g", "b"]) == []
    store.close()


def test_delete_and_missing_ids(tmp_path: Path) -> None:
    store = _hashing(tmp_path / "d.db")
    store.add_texts(["one", "two"], ids=["1", "2"])
    assert store.delete(["1", "nope"]) is True
    assert store.get_by_ids(["1", "2", "nope"]) == [Document(id="2", page_content="two")]
    store.close()


def test_tenants_on_one_file_never_meet(tmp_path: Path) -> None:
    path = tmp_path / "t.db"
    acme = AgentkitVectorStore(path=path, scope=ACME)
    globex = AgentkitVectorStore(path=path, scope=GLOBEX)
    acme.add_texts(["acme refunds go to store credit"], ids=["fact"])
    globex.add_texts(["globex refunds go back to the card"], ids=["fact"])
    assert [d.page_content for d in acme.similarity_search("refunds", k=5)] == [
        "acme refunds go to store credit"
    ]
    assert [d.page_content for d in globex.get_by_ids(["fact"])] == [
        "globex refunds go back to the card"
    ]
    acme.delete(["fact"])
    assert acme.get_by_ids(["fact"]) == []
    assert len(globex.similarity_search("refunds", k=5)) == 1
    unscoped = AgentkitVectorStore(path=path)
    assert unscoped.similarity_search("refunds", k=5) == []
    for store in (acme, globex, unscoped):
        store.close()


def test_bind_is_a_view_of_another_tenant(tmp_path: Path) -> None:
    base = _hashing(tmp_path / "b.db", scope=ACME)
    other = base.bind(GLOBEX)
    base.add_texts(["acme note"], ids=["n"])
    other.add_texts(["globex note"], ids=["n"])
    assert base.scope == ACME and other.scope == GLOBEX
    assert [d.page_content for d in base.get_by_ids(["n"])] == ["acme note"]
    assert [d.page_content for d in other.similarity_search("note", k=5)] == ["globex note"]
    other.close()  # a view does not own the store: the original keeps working
    assert [d.page_content for d in base.similarity_search("note", k=5)] == ["acme note"]
    base.close()


def test_store_and_embedding_together_are_refused() -> None:
    with pytest.raises(InvalidArgument, match="own embedder"):
        AgentkitVectorStore(InMemoryVectorStore(), embedding=DeterministicFakeEmbedding(size=4))
    with pytest.raises(InvalidArgumentType, match="VectorPort"):
        AgentkitVectorStore(object())  # type: ignore[arg-type]


def test_batch_size_from_the_indexing_api(tmp_path: Path) -> None:
    store = _hashing(tmp_path / "i.db")
    ids = store.add_documents(
        [Document(page_content=f"text {i}") for i in range(5)], ids=None, batch_size=2
    )
    assert len(set(ids)) == 5
    assert len(store.get_by_ids(ids)) == 5
    store.close()


def test_sync_calls_work_inside_a_running_loop(tmp_path: Path) -> None:
    """A notebook cell: a loop is running in this thread, the sync API still works."""
    import asyncio

    async def cell() -> list[str | None]:
        store = _hashing(tmp_path / "nb.db")
        store.add_texts(["inside a loop"], ids=["x"])
        found = [d.id for d in store.similarity_search("loop", k=1)]
        await store.aclose()
        return found

    assert asyncio.run(cell()) == ["x"]


# -- async twins -------------------------------------------------------------------------


async def test_async_twins(tmp_path: Path) -> None:
    embedding = DeterministicFakeEmbedding(size=8)
    store = await AgentkitVectorStore.afrom_texts(
        ["alpha", "beta", "gamma"],
        embedding,
        metadatas=[{"g": 1}, {"g": 2}, {"g": 2}],
        ids=["a", "b", "c"],
        path=tmp_path / "async.db",
    )
    assert [d.id for d in await store.asimilarity_search("beta", k=1)] == ["b"]
    scored = await store.asimilarity_search_with_relevance_scores("beta", k=1)
    assert scored[0][0].id == "b" and scored[0][1] == pytest.approx(1.0, abs=1e-5)
    vector = await embedding.aembed_query("gamma")
    assert [d.id for d in await store.asimilarity_search_by_vector(vector, k=1)] == ["c"]
    mmr = await store.amax_marginal_relevance_search("beta", k=2, fetch_k=3, filter={"g": 2})
    assert {d.id for d in mmr} == {"b", "c"}
    await store.aadd_documents([Document(id="a", page_content="alpha two", metadata={"g": 1})])
    assert [d.page_content for d in await store.aget_by_ids(["a"])] == ["alpha two"]
    assert await store.adelete(["a", "zz"]) is True
    assert await store.aget_by_ids(["a"]) == []
    retriever = store.as_retriever(search_kwargs={"k": 1, "filter": {"g": 2}})
    assert [d.id for d in await retriever.ainvoke("gamma")] == ["c"]
    await store.aclose()


async def test_async_tenants_in_memory_store() -> None:
    shared = InMemoryVectorStore(HashingEmbedder())
    acme = AgentkitVectorStore(shared, scope=ACME)
    globex = acme.bind(GLOBEX)
    await acme.aadd_texts(["acme secret plan"], ids=["1"])
    await globex.aadd_texts(["globex secret plan"], ids=["1"])
    assert [d.page_content for d in await acme.asimilarity_search("secret", k=5)] == [
        "acme secret plan"
    ]
    assert [d.page_content for d in await globex.aget_by_ids(["1"])] == ["globex secret plan"]
    assert await shared.count(scope=ACME) == 1 and await shared.count(scope=GLOBEX) == 1


def test_sqlite_store_passed_in(tmp_path: Path) -> None:
    inner = SQLiteVectorStore(tmp_path / "own.db", embedder=HashingEmbedder())
    store = AgentkitVectorStore(inner, scope=ACME)
    store.add_texts(["kept in my own store"], ids=["k"])
    store.close()  # not ours to close: still usable
    assert [d.id for d in store.similarity_search("store", k=1)] == ["k"]
    AgentkitVectorStore(inner).close()


def test_positional_embeddings_and_agentkit_embedder_unwrapped(tmp_path: Path) -> None:
    """`InMemoryVectorStore(embeddings)` renamed works, and an AgentkitEmbeddings is
    recorded as its agentkit embedder, so agentkit's own store opens the file as is."""
    path = tmp_path / "u.db"
    store = AgentkitVectorStore(AgentkitEmbeddings(HashingEmbedder()), path=path)
    store.add_texts(["shared with the CLI"], ids=["c"])
    store.close()

    async def read() -> list[str]:
        async with SQLiteVectorStore(path, embedder=HashingEmbedder()) as raw:
            return [c.id for _, c in await raw.search("CLI", k=1, scope=Scope())]

    import asyncio

    assert asyncio.run(read()) == ["c"]


async def test_afrom_texts_unwraps_agentkit_embeddings_too(tmp_path: Path) -> None:
    path = tmp_path / "au.db"
    store = await AgentkitVectorStore.afrom_texts(
        ["async and shared"], AgentkitEmbeddings(HashingEmbedder()), ids=["s"], path=path
    )
    await store.aclose()
    async with SQLiteVectorStore(path, embedder=HashingEmbedder()) as raw:
        assert [c.id for _, c in await raw.search("shared", k=1, scope=Scope())] == ["s"]


# The filters a LangChain user already writes for Chroma: the same dicts, the same answers.
CHROMA_FILTERS = [
    {"year": {"$gte": 2020}},
    {"$and": [{"team": "billing"}, {"year": {"$gte": 2019}}]},
    {"$or": [{"team": "billing"}, {"team": "logistics"}]},
    {"team": {"$in": ["support", "logistics"]}},
    {"team": {"$nin": ["support"]}},
    {"team": {"$ne": "billing"}},
    {"$and": [{"year": {"$lt": 2020}}, {"year": {"$gt": 2017}}]},
    {"$and": [{"year": {"$lte": 2021}}, {"$or": [{"team": "support"}, {"pinned": True}]}]},
]
RECORDS = [
    ("refund policy 2018", {"team": "billing", "year": 2018}),
    ("refund policy 2021", {"team": "billing", "year": 2021, "pinned": True}),
    ("refund exceptions", {"team": "support", "year": 2020}),
    ("shipping policy", {"team": "logistics", "year": 2022}),
    ("policy draft", {"year": 2019}),  # no team: $ne and $nin still see it
    ("policy memo", {"team": "support", "pinned": False}),  # no year
]


@pytest.mark.parametrize("flt", CHROMA_FILTERS)
def test_chroma_spelled_filters_answer_as_chroma_does(
    tmp_path: Path, flt: dict[str, object]
) -> None:
    import chromadb
    from langchain_chroma import Chroma

    texts = [t for t, _ in RECORDS]
    metas = [m for _, m in RECORDS]
    ids = [str(i) for i in range(len(RECORDS))]
    ours = _hashing(tmp_path / "f.db")
    ours.add_texts(texts, metas, ids=ids)
    chroma = Chroma(
        collection_name=f"c{uuid.uuid4().hex[:8]}",
        embedding_function=DeterministicFakeEmbedding(size=16),
        client=chromadb.EphemeralClient(),
        collection_metadata={"hnsw:space": "cosine"},
    )
    chroma.add_texts(texts, metas, ids=ids)
    try:
        expected = {d.id for d in chroma.similarity_search("policy", k=10, filter=flt)}
        got = {d.id for d in ours.similarity_search("policy", k=10, filter=flt)}
        assert got == expected, flt
        assert expected  # every filter here has an answer
        retriever = ours.as_retriever(search_kwargs={"k": 10, "filter": flt})
        assert {d.id for d in retriever.invoke("policy")} == expected
    finally:
        chroma.delete_collection()
        ours.close()


def test_pgvector_between_and_unknown_operators(tmp_path: Path) -> None:
    store = _hashing(tmp_path / "b.db")
    store.add_texts([t for t, _ in RECORDS], [m for _, m in RECORDS],
                    ids=[str(i) for i in range(len(RECORDS))])
    hits = store.similarity_search("policy", k=10, filter={"year": {"$between": [2019, 2021]}})
    assert {d.id for d in hits} == {"1", "2", "4"}
    for op in ("$like", "$ilike", "$contains"):
        with pytest.raises(InvalidFilter, match=r"AgentkitVectorStore\.similarity_search") as info:
            store.similarity_search("policy", k=3, filter={"team": {op: "bill%"}})
        assert op in str(info.value) and "'team'" in str(info.value)
    store.close()


def test_no_filter_spelling_reaches_another_tenant(tmp_path: Path) -> None:
    """Operators, negations and keys named like the scope: a tenant's filtered search,
    with any of them, never shows another tenant's record on the same file."""
    path = tmp_path / "spoof.db"
    acme = AgentkitVectorStore(path=path, scope=ACME)
    globex = AgentkitVectorStore(path=path, scope=GLOBEX)
    acme.add_texts(["acme refunds"], [{"t": 1}], ids=["a"])
    globex.add_texts(["globex refunds"], [{"t": 1, "org_id": "acme"}], ids=["g"])
    for flt in (
        {"$or": [{"t": 1}, {"t": {"$exists": False}}]},
        {"$not": {"org_id": "acme"}},
        {"org_id": {"$in": ["acme", "globex"]}},
        {"org_id": {"$ne": "x"}, "t": {"$gte": 0}},
        {"$or": [{"scope": {"$exists": False}}, {"domain_id": {"$nin": ["support"]}}]},
    ):
        found = [d.page_content for d in acme.similarity_search("refunds", k=5, filter=flt)]
        assert "globex refunds" not in found, flt
    assert [d.page_content for d in globex.similarity_search("refunds", k=5)] == [
        "globex refunds"
    ]
    acme.close()
    globex.close()
