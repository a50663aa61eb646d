"""LangChainVectorPort: VectorMemory writing through the LangChain vector stores users run.

Real stores throughout: LangChain's InMemoryVectorStore, Chroma (in-process), Qdrant
(local mode) and FAISS; two small hand-written stores stand for a user's own store (a
flat-dict filter, and one that cannot filter at all).
"""

from __future__ import annotations

import dataclasses
import json
import os
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

os.environ["ANONYMIZED_TELEMETRY"] = "False"  # read when chromadb builds its settings

import chromadb
import faiss
import pytest
from agentkit_langchain import AgentkitEmbeddings, LangChainVectorPort
from langchain_chroma import Chroma
from langchain_community.docstore.in_memory import InMemoryDocstore
from langchain_community.vectorstores import FAISS, SKLearnVectorStore
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.vectorstores import InMemoryVectorStore, VectorStore
from langchain_qdrant import QdrantVectorStore
from qdrant_client import QdrantClient, models

from agentkit.interop import DIALECTS, Dialect, IdConvention
from agentkit.kernel import Ctx, Scope
from agentkit.kernel.errors import InvalidArgumentType, StoreError
from agentkit.state.memory import MemoryItem, VectorMemory
from agentkit.vector import Chunk, HashingEmbedder

pytestmark = pytest.mark.filterwarnings(
    # LangChain warns when a store's own relevance function leaves [0, 1] (Chroma's
    # and FAISS' L2 mapping for dissimilar unit vectors); the order is still right.
    "ignore:Relevance scores must be between:UserWarning",
    "ignore::DeprecationWarning",
)

DIM = 64
ACME = Ctx(Scope("acme", "sales"))
EVIL = Ctx(Scope("evil", "sales"))
STORES = ["in_memory", "chroma", "qdrant", "faiss"]


def _embeddings() -> AgentkitEmbeddings:
    return AgentkitEmbeddings(HashingEmbedder(dim=DIM))


_CLIENT: list[Any] = []


def _chroma() -> Chroma:
    if not _CLIENT:
        _CLIENT.append(chromadb.EphemeralClient())
    name = "t" + uuid.uuid4().hex
    return Chroma(collection_name=name, client=_CLIENT[0], embedding_function=_embeddings())


def _qdrant() -> QdrantVectorStore:
    client = QdrantClient(":memory:")
    client.create_collection(
        "docs", vectors_config=models.VectorParams(size=DIM, distance=models.Distance.COSINE)
    )
    return QdrantVectorStore(client=client, collection_name="docs", embedding=_embeddings())


def _faiss() -> FAISS:
    return FAISS(
        embedding_function=_embeddings(),
        index=faiss.IndexFlatL2(DIM),
        docstore=InMemoryDocstore(),
        index_to_docstore_id={},
    )


class RecordingStore(InMemoryVectorStore):
    """The real InMemoryVectorStore, noting every delete call it gets."""

    def __init__(self, embedding: Embeddings) -> None:
        super().__init__(embedding)
        self.deletes: list[Any] = []

    def delete(self, ids: Sequence[str] | None = None, **kwargs: Any) -> None:
        self.deletes.append(ids)
        super().delete(ids)


def _make(kind: str) -> VectorStore:
    if kind == "in_memory":
        return RecordingStore(_embeddings())
    return {"chroma": _chroma, "qdrant": _qdrant, "faiss": _faiss}[kind]()


@pytest.fixture(params=STORES)
def store(request: pytest.FixtureRequest) -> Iterator[VectorStore]:
    built = _make(request.param)
    yield built
    if isinstance(built, QdrantVectorStore):
        built.client.close()


def _count(store: VectorStore) -> int:
    """Records held, by the store's own API (never through the port)."""
    if isinstance(store, InMemoryVectorStore):
        return len(store.store)
    if isinstance(store, Chroma):
        return len(store.get()["ids"])
    if isinstance(store, QdrantVectorStore):
        return int(store.client.count(store.collection_name, exact=True).count)
    if isinstance(store, FAISS):
        return int(store.index.ntotal)
    return len(store.rows)  # type: ignore[attr-defined]


def _user_id(store: VectorStore, name: str) -> str:
    """An id a user of this store picks for their own record (Qdrant takes UUIDs only)."""
    return str(uuid.uuid4()) if isinstance(store, QdrantVectorStore) else name


def _count_searches(store: VectorStore) -> list[int]:
    """Note the k of every search the store runs (wrapping the instance's method)."""
    calls: list[int] = []
    name = (
        "similarity_search_with_score_by_vector"
        if isinstance(store, InMemoryVectorStore)
        else "asimilarity_search_with_relevance_scores"
    )
    inner = getattr(store, name)

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(int(kwargs["k"]))
        return inner(*args, **kwargs)

    setattr(store, name, counted)
    return calls


# --- on every real store ---------------------------------------------------------------


async def test_where_is_pushed_down_and_rechecked(store: VectorStore) -> None:
    mem = VectorMemory(LangChainVectorPort(store))
    langs = ["en", "de", "en", "fr", "de"]
    items = [
        MemoryItem(f"note {i} about cats", "x", metadata={"lang": g, "a.b": i})
        for i, g in enumerate(langs)
    ]
    await mem.write(items, ctx=ACME)
    de = await mem.query("cats", k=5, ctx=ACME, where={"lang": "de"})
    assert len(de) == 2 and {h.metadata["lang"] for h in de} == {"de"}
    any_of = await mem.query("cats", k=5, ctx=ACME, where={"lang": ["de", "fr"]})
    assert len(any_of) == 3 and {h.metadata["lang"] for h in any_of} == {"de", "fr"}
    # Not every store can spell these (a dotted key, a mixed-type any-of): re-checked.
    dotted = await mem.query("cats", k=5, ctx=ACME, where={"a.b": 3})
    assert [h.metadata["lang"] for h in dotted] == ["fr"]
    mixed = await mem.query("cats", k=5, ctx=ACME, where={"lang": ["fr", 7]})
    assert [h.metadata["lang"] for h in mixed] == ["fr"]
    assert await mem.query("cats", k=5, ctx=ACME, where={"lang": []}) == []


async def test_existing_data_is_the_unscoped_bucket_under_its_own_ids(
    store: VectorStore,
) -> None:
    mine, theirs = _user_id(store, "doc-1"), _user_id(store, "doc-2")
    store.add_documents(
        [
            Document("the onboarding checklist", metadata={"source": "docs/a.md"}, id=mine),
            Document("travel expense rules", metadata={"source": "docs/b.md"}, id=theirs),
        ]
    )
    mem = VectorMemory(LangChainVectorPort(store))
    [item] = await mem.query("onboarding checklist", k=1, ctx=Ctx())
    assert (item.id, dict(item.metadata)) == (mine, {"source": "docs/a.md"})
    assert await mem.query("onboarding checklist", k=3, ctx=ACME) == []
    # A recalled record written back updates it: one record, new text, same id.
    await mem.write([dataclasses.replace(item, content="the onboarding checklist v2")], ctx=Ctx())
    assert _count(store) == 2
    assert [d.page_content for d in store.get_by_ids([mine])] == ["the onboarding checklist v2"]
    # Tenants writing many similar records do not hide the shared ones.
    port = LangChainVectorPort(store)
    for t in range(3):
        await port.upsert(
            [Chunk(f"t{i}", "onboarding checklist") for i in range(30)], scope=Scope(f"o{t}", "s")
        )
    found = await mem.query("onboarding checklist", k=2, ctx=Ctx())
    assert sorted(i.id for i in found) == sorted([mine, theirs])
    await port.delete([mine, "never-there"], scope=Scope())
    assert store.get_by_ids([mine]) == [] and len(store.get_by_ids([theirs])) == 1


async def test_an_unscoped_query_is_one_pass(store: VectorStore) -> None:
    port = LangChainVectorPort(store)
    await port.upsert([Chunk(f"c{i}", f"note number {i}") for i in range(12)], scope=Scope())
    calls = _count_searches(store)
    assert len(await port.search("note number", k=4, scope=Scope())) == 4
    assert len(calls) == 1


async def test_a_scoped_query_with_enough_matches_is_one_pass(store: VectorStore) -> None:
    port = LangChainVectorPort(store)
    await port.upsert([Chunk(f"c{i}", f"acme note {i}") for i in range(12)], scope=ACME.scope)
    await port.upsert([Chunk(f"c{i}", f"evil note {i}") for i in range(12)], scope=EVIL.scope)
    calls = _count_searches(store)
    hits = await port.search("note", k=4, scope=ACME.scope)
    assert len(hits) == 4 and all(c.text.startswith("acme") for _, c in hits)
    assert len(calls) == 1


async def test_an_unscoped_query_crowded_by_tenants_asks_again_with_the_filter(
    store: VectorStore,
) -> None:
    port = LangChainVectorPort(store)
    await port.upsert([Chunk("shared", "team lunch menu")], scope=Scope())
    await port.upsert([Chunk(f"t{i}", "lunch menu") for i in range(30)], scope=ACME.scope)
    calls = _count_searches(store)
    assert [c.id for _, c in await port.search("lunch menu", k=1, scope=Scope())] == ["shared"]
    assert 2 <= len(calls) <= 3  # unfiltered first (no luck), then with the scope filter


async def test_faiss_remembers_how_wide_a_tenant_needed() -> None:
    store = _faiss()
    port = LangChainVectorPort(store)
    for t in range(10):
        await port.upsert(
            [Chunk(f"r{i}", f"weekly report {i % 7}") for i in range(30)], scope=Scope(f"o{t}", "s")
        )
    tenant = Scope("o3", "s")
    calls = _count_searches(store)
    first = await port.search("weekly report", k=8, scope=tenant)
    assert len(first) == 8 and len(calls) > 1  # 20 candidates hold about 2 of its own
    calls.clear()
    again = await port.search("weekly report 5", k=8, scope=tenant)
    assert len(again) == 8 and len(calls) == 1
    other = await port.search("weekly report", k=8, scope=Scope("o4", "s"))
    assert len(other) == 8 and len(calls) > 2  # counts are kept per bucket


# --- one store at a time ---------------------------------------------------------------


async def test_never_asks_the_store_to_delete_everything() -> None:
    store = RecordingStore(_embeddings())
    port = LangChainVectorPort(store)
    await port.upsert([Chunk("1", "kept")], scope=ACME.scope)
    await port.delete([], scope=ACME.scope)
    await port.upsert([], scope=ACME.scope)
    await port.delete(["never-written"], scope=ACME.scope)
    assert store.deletes == [] and len(store.store) == 1


async def test_qdrant_records_read_back_without_the_stores_own_keys() -> None:
    store = _qdrant()
    port = LangChainVectorPort(store)
    await port.upsert([Chunk("1", "alpha", {"k": "v"})], scope=ACME.scope)
    [(_, chunk)] = await port.search("alpha", k=3, scope=ACME.scope)
    assert (chunk.id, dict(chunk.metadata)) == ("1", {"k": "v"})  # no _id/_collection_name
    raw = store.client.scroll("docs")[0][0]
    assert uuid.UUID(str(raw.id)).version == 8  # a scoped point id, never a user's uuid4


async def test_chroma_short_filtered_answers_are_checked_exactly() -> None:
    """Chroma's filtered HNSW walk can miss records among many near-identical vectors
    (seen here, on some runs, with 200 identical tenant records): a short answer is
    checked against an exact metadata read, then ranked among exactly those ids."""
    store = _chroma()
    port = LangChainVectorPort(store)
    query = "the same text again"
    for t in range(4):
        await port.upsert([Chunk(f"r{i}", query) for i in range(50)], scope=Scope(f"o{t}", "s"))
    await port.upsert([Chunk("mine", "the text, once"), Chunk("m2", "text")], scope=ACME.scope)
    assert sorted(c.id for _, c in await port.search(query, k=3, scope=ACME.scope)) == [
        "m2",
        "mine",
    ]
    # The miss itself, injected (Chroma's is not deterministic): the filtered walk
    # returns one of the two, the exact pass finds both.
    walk = store.asimilarity_search_with_relevance_scores

    async def lossy(query: str, k: int = 4, **kwargs: Any) -> Any:
        found = await walk(query, k=k, **kwargs)
        return found[:1] if "filter" in kwargs else found

    store.asimilarity_search_with_relevance_scores = lossy  # type: ignore[method-assign]
    assert sorted(c.id for _, c in await port.search(query, k=3, scope=ACME.scope)) == [
        "m2",
        "mine",
    ]


async def test_a_store_that_cannot_filter_is_refused_before_anything_is_written() -> None:
    store = NoFilterStore(_embeddings())
    port = LangChainVectorPort(store)
    assert port.dialect is None
    with pytest.raises(StoreError, match="NoFilterStore cannot filter"):
        await port.upsert([Chunk("1", "t")], scope=ACME.scope)
    with pytest.raises(StoreError, match="cannot filter"):
        await port.search("t", k=1, scope=ACME.scope)
    assert store.rows == {}
    await port.upsert([Chunk("1", "t"), Chunk("2", "u")], scope=Scope())  # unscoped: fine
    assert [c.id for _, c in await port.search("t", k=1, scope=Scope())] == ["1"]
    await port.delete(["1", "nope"], scope=Scope())
    assert list(store.rows) == ["2"]


async def test_the_dialect_can_be_named_or_given() -> None:
    chroma = _chroma()
    assert LangChainVectorPort(chroma).dialect is DIALECTS["chroma"]
    with pytest.raises(StoreError):
        await LangChainVectorPort(chroma, filter_style="none").upsert(
            [Chunk("1", "t")], scope=ACME.scope
        )
    assert _count(chroma) == 0
    with pytest.raises(ValueError, match="unknown filter_style 'sql'"):
        LangChainVectorPort(chroma, filter_style="sql")
    # A user's own store, in a flat-dict dialect, named or given as a Dialect.
    for style in ("dict", Dialect("mine", DIALECTS["dict"].build)):
        store = DictStore(_embeddings())
        mem = VectorMemory(LangChainVectorPort(store, filter_style=style))
        await mem.write([MemoryItem("acme plan", "x", metadata={"id": "1", "t": 1})], ctx=ACME)
        await mem.write([MemoryItem("acme plan v2", "x", metadata={"id": "1", "t": 1})], ctx=ACME)
        await mem.write([MemoryItem("evil plan", "x", metadata={"id": "1"})], ctx=EVIL)
        assert [i.content for i in await mem.query("plan", k=3, ctx=ACME)] == ["acme plan v2"]
        assert [i.content for i in await mem.query("plan", k=3, ctx=ACME, where={"t": 1})] == [
            "acme plan v2"
        ]
        assert len(store.rows) == 2


async def test_a_filter_building_function_receives_the_equality_conditions() -> None:
    seen: list[dict[str, Any]] = []

    def build(equality: dict[str, Any]) -> dict[str, Any]:
        seen.append(equality)
        return equality

    store = DictStore(_embeddings())
    port = LangChainVectorPort(store, filter_style=build)
    await port.upsert([Chunk("1", "alpha", {"lang": "en"})], scope=ACME.scope)
    hits = await port.search("alpha", k=1, scope=ACME.scope, where={"lang": "en"})
    assert [c.id for _, c in hits] == ["1"]
    assert seen[-1] == {"agentkit_org_id": "acme", "agentkit_domain_id": "sales", "lang": "en"}


async def test_without_get_by_ids_unknown_ids_are_skipped_one_by_one() -> None:
    class NoLookup(DictStore):
        def get_by_ids(self, ids: Sequence[str], /) -> list[Document]:
            raise NotImplementedError

    store = NoLookup(_embeddings())
    port = LangChainVectorPort(store, filter_style="dict")
    await port.upsert([Chunk(i, f"record {i}") for i in "abc"], scope=ACME.scope)
    await port.delete(["a", "nope", "c"], scope=ACME.scope)  # the batch alone would raise
    assert [c.id for _, c in await port.search("record", k=5, scope=ACME.scope)] == ["b"]
    await port.delete(["nope"], scope=ACME.scope)
    assert len(store.rows) == 1


async def test_reserved_metadata_is_refused_before_writing() -> None:
    store = RecordingStore(_embeddings())
    mem = VectorMemory(LangChainVectorPort(store))
    with pytest.raises(ValueError, match="agentkit_org_id"):
        await mem.write([MemoryItem("t", "x", metadata={"agentkit_org_id": "evil"})], ctx=ACME)
    assert store.store == {}


def test_why_in_memory_vector_store_is_special_cased() -> None:
    """LangChain's InMemoryVectorStore has no relevance-score function (langchain
    issue #40502); its similarity_search_with_score is cosine, higher is better."""
    store = InMemoryVectorStore(_embeddings())
    store.add_texts(["alpha beta", "gamma delta"])
    with pytest.raises(NotImplementedError):
        store.similarity_search_with_relevance_scores("alpha", k=1)
    scores = [s for _, s in store.similarity_search_with_score("alpha beta", k=2)]
    assert scores[0] == pytest.approx(1.0, abs=1e-6) and scores[0] > scores[1]


async def test_store_without_relevance_scores_needs_a_conversion() -> None:
    class RawOnly(DictStore):
        def _select_relevance_score_fn(self) -> Any:
            raise NotImplementedError

    with pytest.raises(RuntimeError, match="relevance_score_fn"):
        await LangChainVectorPort(RawOnly(_embeddings())).search("x", k=1, scope=Scope())
    port = LangChainVectorPort(
        RawOnly(_embeddings()), filter_style="dict", relevance_score_fn=lambda s: 1 - abs(1 - s)
    )
    await port.upsert([Chunk("1", "alpha beta"), Chunk("2", "gamma")], scope=ACME.scope)
    hits = await port.search("alpha beta", k=2, scope=ACME.scope)
    assert [c.id for _, c in hits] == ["1", "2"] and hits[0][0] > hits[1][0]


async def test_a_query_with_no_features_finds_nothing_instead_of_crashing() -> None:
    mem = VectorMemory(LangChainVectorPort(InMemoryVectorStore(_embeddings())))
    await mem.write([MemoryItem("alpha", "x")], ctx=ACME)
    for query in ("", "?!*()"):
        assert await mem.query(query, k=3, ctx=ACME) == []


# --- a user's own stores -----------------------------------------------------------------


class DictStore(VectorStore):
    """A user's store in a flat dict-filter dialect that, like FAISS, refuses to add
    an id it already holds (no upsert), and scores by cosine mapped to [0, 1]."""

    def __init__(self, embedding: Embeddings) -> None:
        self.embedding = embedding
        self.rows: dict[str, tuple[list[float], Document]] = {}

    @property
    def embeddings(self) -> Embeddings:
        return self.embedding

    def add_texts(
        self, texts: Iterable[str], metadatas: list[dict[str, Any]] | None = None, **kw: Any
    ) -> list[str]:
        texts = list(texts)
        ids = kw.get("ids") or [str(i) for i in range(len(self.rows), len(self.rows) + len(texts))]
        if any(i in self.rows for i in ids):
            raise ValueError("Tried to add ids that already exist")
        vectors = self.embedding.embed_documents(texts)
        for i, text, meta, vec in zip(
            ids, texts, metadatas or [{}] * len(texts), vectors, strict=True
        ):
            self.rows[i] = (vec, Document(page_content=text, metadata=dict(meta), id=i))
        return ids

    def get_by_ids(self, ids: Sequence[str], /) -> list[Document]:
        return [self.rows[i][1] for i in ids if i in self.rows]

    def delete(self, ids: list[str] | None = None, **kwargs: Any) -> bool:
        assert ids, "never delete everything"
        for i in ids:
            self.rows.pop(i)  # an unknown id raises, as FAISS does
        return True

    def similarity_search_with_score(
        self, query: str, k: int = 4, filter: dict[str, Any] | None = None, **kw: Any
    ) -> list[tuple[Document, float]]:
        q = self.embedding.embed_query(query)
        hits = []
        for vec, doc in self.rows.values():
            if filter and any(doc.metadata.get(key) != v for key, v in filter.items()):
                continue
            hits.append((doc, sum(a * b for a, b in zip(q, vec, strict=True))))
        return sorted(hits, key=lambda h: -h[1])[:k]

    def similarity_search(self, query: str, k: int = 4, **kw: Any) -> list[Document]:
        return [d for d, _ in self.similarity_search_with_score(query, k, **kw)]

    def _select_relevance_score_fn(self) -> Callable[[float], float]:
        return lambda cosine: (cosine + 1) / 2

    @classmethod
    def from_texts(cls, texts: list[str], embedding: Embeddings, **kw: Any) -> DictStore:
        store = cls(embedding)
        store.add_texts(texts, **kw)
        return store


class NoFilterStore(DictStore):
    """Searches take no filter: the store cannot keep tenants apart."""

    def similarity_search_with_score(  # type: ignore[override]
        self, query: str, k: int = 4, **kw: Any
    ) -> list[tuple[Document, float]]:
        return super().similarity_search_with_score(query, k)

    def similarity_search(self, query: str, k: int = 4, **kw: Any) -> list[Document]:
        return [d for d, _ in self.similarity_search_with_score(query, k)]


# --- ids on stores the port has no filter dialect for, or another filter for ------------


def _qdrant_equality(equality: dict[str, Any]) -> models.Filter:
    """A user's own filter function for langchain-qdrant (equality on payload paths)."""
    return models.Filter(
        must=[
            models.FieldCondition(key=f"metadata.{key}", match=models.MatchValue(value=value))
            for key, value in equality.items()
        ]
    )


async def test_a_filter_function_on_qdrant_keeps_the_stores_id_handling() -> None:
    """Overriding the filter says nothing about ids: Qdrant still takes UUIDs only and
    still returns the id in ``_id``, so scoped writes, updates and deletes by id work."""
    store = _qdrant()
    port = LangChainVectorPort(store, filter_style=_qdrant_equality)
    assert port.dialect is not None and port.dialect.name == "custom" and port.ids.uuid
    mem = VectorMemory(port)
    await mem.write([MemoryItem("acme plan", "x", metadata={"id": "p1", "k": "v"})], ctx=ACME)
    [item] = await mem.query("acme plan", k=3, ctx=ACME)
    assert (item.id, dict(item.metadata)) == ("p1", {"k": "v"})  # no _id/_collection_name
    await mem.write([dataclasses.replace(item, content="acme plan v2")], ctx=ACME)
    await mem.write([MemoryItem("evil plan", "x", metadata={"id": "p1"})], ctx=EVIL)
    assert _count(store) == 2
    assert [i.content for i in await mem.query("plan", k=3, ctx=ACME)] == ["acme plan v2"]
    # A user's own point, by its own (uuid4) id: updated in place, then deleted.
    mine = str(uuid.uuid4())
    store.add_documents([Document("the office wifi password", metadata={"s": "a"}, id=mine)])
    await port.upsert([Chunk(mine, "the office wifi password, rotated")], scope=Scope())
    assert [d.page_content for d in store.get_by_ids([mine])] == [
        "the office wifi password, rotated"
    ]
    assert await port.delete([mine], scope=Scope()) == 1
    assert await mem.delete(["p1"], ctx=ACME) == 1
    assert _count(store) == 1
    assert [i.content for i in await mem.query("plan", k=3, ctx=EVIL)] == ["evil plan"]


def _sklearn(path: str) -> SKLearnVectorStore:
    return SKLearnVectorStore(_embeddings(), persist_path=path)


def _persisted_ids(store: SKLearnVectorStore, path: str) -> list[str]:
    """The ids SKLearnVectorStore holds, by its own API: persist, then read its file."""
    store.persist()
    with open(path, encoding="utf-8") as fh:
        return list(json.load(fh)["ids"])


async def test_sklearn_records_read_back_under_their_own_ids(tmp_path: Any) -> None:
    """SKLearnVectorStore has no filter dialect; its ids are still known: its search puts
    the record id into the metadata it returns, as ``id``, and never sets Document.id."""
    path = str(tmp_path / "sk.json")
    store = _sklearn(path)
    store.add_texts(
        ["the refund policy", "the travel policy"],
        metadatas=[{"source": "a.md"}, {"source": "b.md"}],
        ids=["r1", "r2"],
    )
    # Cosine distance (0..2) to relevance (1..0).
    port = LangChainVectorPort(store, relevance_score_fn=lambda d: 1 - d / 2)
    [(_, chunk)] = await port.search("refund policy", k=1, scope=Scope())
    assert (chunk.id, dict(chunk.metadata)) == ("r1", {"source": "a.md"})  # no store "id"
    mem = VectorMemory(port)
    [item] = await mem.query("refund policy", k=1, ctx=Ctx())
    assert (item.id, dict(item.metadata)) == ("r1", {"source": "a.md"})
    # It can neither delete nor look records up, so it cannot replace one: a write
    # back (or any write) is refused rather than leaving a second "r1"; deletes too.
    with pytest.raises(StoreError, match="SKLearnVectorStore cannot delete records"):
        await mem.write([dataclasses.replace(item, content="the refund policy v2")], ctx=Ctx())
    with pytest.raises(StoreError, match="cannot replace"):
        await port.upsert([Chunk("r3", "a new record")], scope=Scope())
    with pytest.raises(StoreError, match="cannot delete"):
        await mem.delete(["r1"], ctx=Ctx())
    with pytest.raises(StoreError, match="cannot filter"):
        await port.upsert([Chunk("t1", "a tenant's record")], scope=ACME.scope)
    assert _persisted_ids(store, path) == ["r1", "r2"]


class EchoStore(DictStore):
    """A user's store like SKLearnVectorStore in its reads - no Document.id, the id in
    metadata ``id``, a key of its own added, no get_by_ids - but one that deletes."""

    def get_by_ids(self, ids: Sequence[str], /) -> list[Document]:
        raise NotImplementedError

    def similarity_search_with_score(
        self, query: str, k: int = 4, filter: dict[str, Any] | None = None, **kw: Any
    ) -> list[tuple[Document, float]]:
        return [
            (
                Document(doc.page_content, metadata={"id": doc.id, "rank": n, **doc.metadata}),
                score,
            )
            for n, (doc, score) in enumerate(super().similarity_search_with_score(query, k))
        ]


async def test_a_store_nobody_knows_reads_back_ids_and_metadata_as_written() -> None:
    store = EchoStore(_embeddings())
    port = LangChainVectorPort(store)
    assert port.dialect is None and port.ids.self_describing
    mem = VectorMemory(port)
    meta = {"source": "a.md", "ref": "r1"}  # "ref" holds the id too: the user's own key
    await mem.write(
        [MemoryItem("the refund policy", "x", metadata={"id": "r1", **meta})], ctx=Ctx()
    )
    await mem.write([MemoryItem("the travel policy", "x", metadata={"id": "r2"})], ctx=Ctx())
    [item] = await mem.query("refund policy", k=1, ctx=Ctx())
    assert (item.id, dict(item.metadata)) == ("r1", meta)  # no "id", no "rank", no stamps
    await mem.write([dataclasses.replace(item, content="the refund policy v2")], ctx=Ctx())
    assert len(store.rows) == 2  # replaced, not a second copy
    await port.upsert([Chunk("r1", "the refund policy v3", meta)], scope=Scope())
    (_, best), _ = await port.search("refund policy", k=2, scope=Scope())
    assert (best.id, best.text, dict(best.metadata)) == ("r1", "the refund policy v3", meta)
    assert len(store.rows) == 2
    assert await mem.delete(["r1", "never-written"], ctx=Ctx()) == 2  # no count: ids named
    assert [c.id for _, c in await port.search("policy", k=2, scope=Scope())] == ["r2"]


async def test_the_stores_retriever_reads_port_records_as_written_too() -> None:
    from agentkit_langchain import LangChainMemory

    store = EchoStore(_embeddings())
    await VectorMemory(LangChainVectorPort(store)).write(
        [MemoryItem("the refund policy", "x", metadata={"id": "r1", "source": "a.md"})],
        ctx=Ctx(),
    )
    [item] = await LangChainMemory(store.as_retriever()).query("refund", k=1, ctx=Ctx())
    assert (item.id, dict(item.metadata)) == ("r1", {"source": "a.md"})


def test_store_ids_must_be_an_id_convention() -> None:
    with pytest.raises(InvalidArgumentType, match="IdConvention"):
        LangChainVectorPort(_faiss(), store_ids="uuid")  # type: ignore[arg-type]
    told = IdConvention("mine", replaces=False)
    assert LangChainVectorPort(DictStore(_embeddings()), store_ids=told).ids is told
