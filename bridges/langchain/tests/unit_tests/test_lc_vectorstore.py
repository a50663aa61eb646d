"""LangChainVectorPort: VectorMemory writing through a LangChain vector store."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Sequence
from typing import Any

import pytest
from agentkit_langchain import AgentkitEmbeddings, LangChainVectorPort
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.vectorstores import InMemoryVectorStore, VectorStore

from agentkit.kernel import Ctx, Scope
from agentkit.state.memory import MemoryItem, VectorMemory
from agentkit.vector import Chunk, HashingEmbedder

ACME = Ctx(Scope("acme", "sales"))
EVIL = Ctx(Scope("evil", "sales"))


def _embeddings() -> AgentkitEmbeddings:
    return AgentkitEmbeddings(HashingEmbedder())


class RecordingStore(InMemoryVectorStore):
    """The real InMemoryVectorStore, noting every delete call it gets."""

    def __init__(self, embedding: Embeddings) -> None:
        super().__init__(embedding)
        self.deletes: list[Any] = []

    def delete(self, ids: Sequence[str] | None = None, **kwargs: Any) -> None:
        self.deletes.append(ids)
        super().delete(ids)


class DictStore(VectorStore):
    """A small store in the common dict-filter dialect that, like FAISS, refuses to
    add an id it already holds (no upsert), and scores by cosine mapped to [0, 1]."""

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
            self.rows.pop(i)
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

    def _select_relevance_score_fn(self) -> Any:
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


@pytest.fixture(params=["in_memory", "dict_store"])
def store(request: pytest.FixtureRequest) -> VectorStore:
    if request.param == "in_memory":
        return RecordingStore(_embeddings())
    return DictStore(_embeddings())


async def test_update_in_place_by_id(store: VectorStore) -> None:
    mem = VectorMemory(LangChainVectorPort(store))
    await mem.write([MemoryItem("the cat sat on the mat", "x", metadata={"id": "c1"})], ctx=ACME)
    await mem.write([MemoryItem("dogs bark at night", "x", metadata={"id": "c2"})], ctx=ACME)
    [hit] = await mem.query("cat mat", k=1, ctx=ACME)
    assert (hit.id, hit.source) == ("c1", "vector")
    await mem.write([dataclasses.replace(hit, content="the cat sat on the sofa")], ctx=ACME)
    hits = await mem.query("cat", k=5, ctx=ACME)
    assert sorted(h.content for h in hits) == ["dogs bark at night", "the cat sat on the sofa"]
    assert len(_records(store)) == 2  # replaced, not duplicated


async def test_relevance_scores_are_higher_for_better_matches(store: VectorStore) -> None:
    mem = VectorMemory(LangChainVectorPort(store))
    texts = ["alpha beta gamma", "alpha beta", "delta epsilon", "zeta eta theta"]
    await mem.write([MemoryItem(t, "x") for t in texts], ctx=ACME)
    hits = await mem.query("alpha beta gamma", k=4, ctx=ACME)
    assert hits[0].content == "alpha beta gamma"
    scores = [h.score for h in hits]
    assert all(type(s) is float and math.isfinite(s) for s in scores)
    assert scores == sorted(scores, reverse=True) and scores[0] > scores[-1]


async def test_two_tenants_share_a_store_and_an_id_without_touching(store: VectorStore) -> None:
    mem = VectorMemory(LangChainVectorPort(store))
    await mem.write(
        [MemoryItem("acme pricing plan", "x", metadata={"tier": "gold", "id": "1"})], ctx=ACME
    )
    await mem.write(
        [MemoryItem("evil pricing plan", "x", metadata={"tier": "gold", "id": "1"})], ctx=EVIL
    )
    acme = await mem.query("pricing plan", k=5, ctx=ACME)
    evil = await mem.query("pricing plan", k=5, ctx=EVIL)
    assert [(h.content, h.id) for h in acme] == [("acme pricing plan", "1")]
    assert [(h.content, h.id) for h in evil] == [("evil pricing plan", "1")]
    assert dict(acme[0].metadata) == {"tier": "gold"}  # scope keys never read back
    assert await mem.query("pricing plan", k=5, ctx=Ctx()) == []
    await mem.write([dataclasses.replace(acme[0], content="acme new plan")], ctx=ACME)
    assert [h.content for h in await mem.query("plan", k=5, ctx=EVIL)] == ["evil pricing plan"]
    port = LangChainVectorPort(store)
    await port.delete(["1"], scope=ACME.scope)
    assert await mem.query("plan", k=5, ctx=ACME) == []
    assert len(await mem.query("plan", k=5, ctx=EVIL)) == 1


async def test_where_is_pushed_down_and_rechecked(store: VectorStore) -> None:
    mem = VectorMemory(LangChainVectorPort(store))
    langs = ["en", "de", "en", "fr", "de"]
    items = [
        MemoryItem(f"note {i} about cats", "x", metadata={"lang": g}) for i, g in enumerate(langs)
    ]
    await mem.write(items, ctx=ACME)
    de = await mem.query("cats", k=5, ctx=ACME, where={"lang": "de"})
    assert len(de) == 2 and {h.metadata["lang"] for h in de} == {"de"}
    any_of = await mem.query("cats", k=5, ctx=ACME, where={"lang": ["de", "fr"]})
    assert len(any_of) == 3 and {h.metadata["lang"] for h in any_of} == {"de", "fr"}


async def test_never_asks_the_store_to_delete_everything() -> None:
    store = RecordingStore(_embeddings())
    port = LangChainVectorPort(store)
    await port.upsert([Chunk("1", "kept")], scope=ACME.scope)
    await port.delete([], scope=ACME.scope)
    await port.upsert([], scope=ACME.scope)
    assert store.deletes == [] and len(store.store) == 1


def test_a_store_that_cannot_filter_is_refused_for_scoped_use() -> None:
    import asyncio

    port = LangChainVectorPort(NoFilterStore(_embeddings()))
    for call in (
        port.upsert([Chunk("1", "t")], scope=ACME.scope),
        port.search("t", k=1, scope=ACME.scope),
    ):
        with pytest.raises(RuntimeError, match="cannot filter"):
            asyncio.run(call)
    asyncio.run(port.upsert([Chunk("1", "t")], scope=Scope()))  # unscoped: one bucket, fine
    assert len(asyncio.run(port.search("t", k=1, scope=Scope()))) == 1


async def test_reserved_metadata_is_refused_before_writing() -> None:
    store = RecordingStore(_embeddings())
    mem = VectorMemory(LangChainVectorPort(store))
    with pytest.raises(ValueError, match="agentkit_org_id"):
        await mem.write([MemoryItem("t", "x", metadata={"agentkit_org_id": "evil"})], ctx=ACME)
    assert store.store == {}


async def test_documents_already_in_the_store_are_the_unscoped_bucket() -> None:
    store = InMemoryVectorStore(_embeddings())
    store.add_documents([Document(page_content="legacy cat note", id="old-1")])
    mem = VectorMemory(LangChainVectorPort(store))
    assert [(h.content, h.id) for h in await mem.query("cat", k=3, ctx=Ctx())] == [
        ("legacy cat note", "old-1")
    ]
    assert await mem.query("cat", k=3, ctx=ACME) == []


def _records(store: VectorStore) -> dict[str, Any]:
    return store.store if isinstance(store, InMemoryVectorStore) else store.rows  # type: ignore[attr-defined,no-any-return]


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
    port = LangChainVectorPort(RawOnly(_embeddings()), relevance_score_fn=lambda s: 1 - abs(1 - s))
    await port.upsert([Chunk("1", "alpha beta"), Chunk("2", "gamma")], scope=ACME.scope)
    hits = await port.search("alpha beta", k=2, scope=ACME.scope)
    assert [c.id for _, c in hits] == ["1", "2"] and hits[0][0] > hits[1][0]


async def test_unstamped_records_are_unscoped_in_a_dict_filter_store_too() -> None:
    store = DictStore(_embeddings())
    store.add_texts(["legacy onboarding guide"], metadatas=[{"team": "hr"}], ids=["old"])
    mem = VectorMemory(LangChainVectorPort(store))
    await mem.write([MemoryItem("acme onboarding guide", "x")], ctx=ACME)
    await mem.write([MemoryItem("shared onboarding notes", "x")], ctx=Ctx())
    unscoped = await mem.query("onboarding guide", k=5, ctx=Ctx())
    assert sorted(i.content for i in unscoped) == [
        "legacy onboarding guide",
        "shared onboarding notes",
    ]
    assert [i.id for i in await mem.query("guide", k=5, ctx=Ctx(), where={"team": "hr"})] == ["old"]
    assert [i.content for i in await mem.query("onboarding", k=5, ctx=ACME)] == [
        "acme onboarding guide"
    ]


async def test_a_query_with_no_features_finds_nothing_instead_of_crashing() -> None:
    mem = VectorMemory(LangChainVectorPort(InMemoryVectorStore(_embeddings())))
    await mem.write([MemoryItem("alpha", "x")], ctx=ACME)
    for query in ("", "?!*()"):
        assert await mem.query(query, k=3, ctx=ACME) == []
