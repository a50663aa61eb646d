"""The where language through LangChain ports, on the real stores: stated exactly in
each store's own filter, or refused naming the operator and the store.

Each store holds the same records in two tenants; every answer is compared with the
reference evaluator, and none ever holds the other tenant's record.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from typing import Any

import chromadb
import faiss
import pytest
from agentkit_langchain import AgentkitEmbeddings, LangChainVectorPort
from langchain_chroma import Chroma
from langchain_community.docstore.in_memory import InMemoryDocstore
from langchain_community.vectorstores import FAISS
from langchain_core.vectorstores import InMemoryVectorStore
from langchain_qdrant import QdrantVectorStore
from qdrant_client import QdrantClient, models

from agentkit.kernel import Scope
from agentkit.kernel.errors import InvalidFilter, StoreError, UnsupportedOperation
from agentkit.kernel.where import parse_where
from agentkit.vector import Chunk, HashingEmbedder

DIM = 64
ACME = Scope("acme", "support")
GLOBEX = Scope("globex", "support")
RECORDS = [
    ("r1", {"team": "billing", "year": 2018, "name": "alpha"}),
    ("r2", {"team": "billing", "year": 2021, "pinned": True, "name": "mike"}),
    ("r3", {"team": "support", "year": 2020.0, "name": "zulu"}),
    ("r4", {"team": "logistics", "year": 2022, "pinned": False}),
    ("r5", {"year": 2019, "name": "nora"}),  # no team
    ("r6", {"team": "support", "pinned": True}),  # no year
]

FILTERS: dict[str, dict[str, Any]] = {
    "gte": {"year": {"$gte": 2020}},
    "or": {"$or": [{"team": "billing"}, {"year": {"$lt": 2019}}]},
    "ne": {"team": {"$ne": "billing"}},
    "nin": {"team": {"$nin": ["billing", "support"]}},
    "in-mixed": {"year": {"$in": [2018, 2020.0, 1999]}},
    "int-finds-float": {"year": {"$in": [2020, 2021.0]}, "team": {"$eq": "support"}},
    "not": {"$not": {"year": {"$gte": 2020}}},
    "not-eq": {"$not": {"$or": [{"team": "billing"}, {"pinned": True}]}},
    "exists": {"team": {"$exists": False}},
    "str-order": {"name": {"$gt": "m"}},
    "range-and": {"$and": [{"year": {"$gte": 2018}}, {"year": {"$lte": 2021}}],
                  "pinned": True},
    "and-ne": {"$and": [{"team": {"$ne": "logistics"}}, {"name": {"$ne": "zulu"}}]},
}
# What each store cannot state exactly: the operator its refusal must name.
REFUSED: dict[str, dict[str, str]] = {
    "lc-chroma": {"not": "$not", "exists": "$exists", "str-order": "$gt"},
    "lc-qdrant": {"exists": "$exists", "str-order": "$gt"},
    "lc-faiss": {},
    "lc-inmemory": {},
}
STORE_NAMES = {"lc-chroma": "Chroma", "lc-qdrant": "Qdrant"}


def _embeddings() -> AgentkitEmbeddings:
    return AgentkitEmbeddings(HashingEmbedder(dim=DIM))


def _chroma() -> tuple[Any, Callable[[], None]]:
    client, name = chromadb.EphemeralClient(), "c" + uuid.uuid4().hex
    store = Chroma(collection_name=name, client=client, embedding_function=_embeddings())
    return store, lambda: client.delete_collection(name)


def _qdrant() -> tuple[Any, Callable[[], None]]:
    client, name = QdrantClient(location=":memory:"), "c" + uuid.uuid4().hex
    client.create_collection(
        name, vectors_config=models.VectorParams(size=DIM, distance=models.Distance.COSINE)
    )
    return QdrantVectorStore(client=client, collection_name=name,
                             embedding=_embeddings()), client.close


def _faiss() -> tuple[Any, Callable[[], None]]:
    store = FAISS(embedding_function=_embeddings(), index=faiss.IndexFlatL2(DIM),
                  docstore=InMemoryDocstore(), index_to_docstore_id={})
    return store, lambda: None


def _inmemory() -> tuple[Any, Callable[[], None]]:
    return InMemoryVectorStore(_embeddings()), lambda: None


MAKERS = {"lc-chroma": _chroma, "lc-qdrant": _qdrant, "lc-faiss": _faiss,
          "lc-inmemory": _inmemory}


@pytest.fixture(params=sorted(MAKERS))
def port(request: pytest.FixtureRequest) -> Iterator[tuple[str, LangChainVectorPort]]:
    store, close = MAKERS[request.param]()
    yield request.param, LangChainVectorPort(store)
    close()


async def test_operator_filters_exact_or_refused_by_name(
    port: tuple[str, LangChainVectorPort]
) -> None:
    name, vp = port
    chunks = [Chunk(cid, f"ledger entry {cid}", meta) for cid, meta in RECORDS]
    await vp.upsert(chunks, scope=ACME)
    await vp.upsert(chunks, scope=GLOBEX)
    for label, where in FILTERS.items():
        tree = parse_where(where)
        assert tree is not None
        expected = {cid for cid, meta in RECORDS if tree.matches(meta)}
        refused = REFUSED[name].get(label)
        if refused is not None:
            with pytest.raises(UnsupportedOperation) as info:
                await vp.search("ledger entry", k=20, scope=ACME, where=where)
            assert refused in str(info.value), (label, str(info.value))
            assert STORE_NAMES[name] in str(info.value)
            continue
        hits = await vp.search("ledger entry", k=20, scope=ACME, where=where)
        assert {c.id for _, c in hits} == expected, (name, label)
        few = await vp.search("ledger entry", k=2, scope=ACME, where=where)
        assert len(few) == min(2, len(expected)), (name, label)
    await _deletes_what_it_finds(vp, {cid for cid, _ in RECORDS})


async def test_operator_spellings_never_reach_another_tenant(
    port: tuple[str, LangChainVectorPort]
) -> None:
    _, vp = port
    await vp.upsert([Chunk("m", "ledger mine", {"t": 1})], scope=ACME)
    await vp.upsert([Chunk("g", "ledger theirs", {"t": 1, "org_id": "acme"})], scope=GLOBEX)
    for where in (
        {"$or": [{"t": 1}, {"t": {"$gte": 0}}]},
        {"org_id": "acme"},
        {"t": {"$in": [1, 2]}, "$or": [{"t": 1}, {"t": 2}]},
    ):
        try:
            hits = await vp.search("ledger", k=10, scope=ACME, where=where)
        except (UnsupportedOperation, InvalidFilter):
            continue  # refused by name: never another tenant's record
        assert {c.id for _, c in hits} <= {"m"}, where
        await vp.delete_where(where, scope=ACME)
        assert await vp.search("ledger", k=10, scope=GLOBEX) != [], where
    await _stamps_refused(vp)


# The port's own tenancy stamps, spelt with operators: a where can name them, never
# widen the scope through them.
STAMP_SPOOFS: list[dict[str, Any]] = [
    {"agentkit_org_id": {"$in": ["globex", "acme"]}},
    {"$not": {"agentkit_org_id": "acme"}},
    {"agentkit_scoped": {"$exists": False}},
    {"$or": [{"agentkit_org_id": "globex"}, {"t": 1}]},
    {"agentkit_domain_id": {"$ne": "support"}},
]


async def _deletes_what_it_finds(vp: Any, ids: set[str]) -> None:
    """delete_where with an operator filter removes exactly what search with it found,
    in this scope only."""
    where = {"$and": [{"year": {"$gte": 2019}}, {"team": {"$ne": "logistics"}}]}
    found = {c.id for _, c in await vp.search("ledger entry", k=20, scope=ACME, where=where)}
    assert found == {"r2", "r3", "r5"}
    assert await vp.delete_where(where, scope=ACME) == len(found)
    assert {c.id for c in await vp.scan(scope=ACME)} == ids - found
    assert {c.id for c in await vp.scan(scope=GLOBEX)} == ids


async def _stamps_refused(vp: Any) -> None:
    """A filter naming the port's tenancy stamps is refused by name, on every path."""
    for where in STAMP_SPOOFS:
        for call in (
            lambda w: vp.search("ledger", k=10, scope=ACME, where=w),
            lambda w: vp.scan(scope=ACME, where=w),
            lambda w: vp.delete_where(w, scope=ACME),
        ):
            with pytest.raises(InvalidFilter, match="agentkit_"):
                await call(where)
    assert {c.id for _, c in await vp.search("ledger", k=10, scope=GLOBEX)} == {"g"}


# --- the same through LlamaIndex ports ------------------------------------------------


def _li_embedding() -> Any:
    from agentkit_llamaindex import AgentkitEmbedding

    return AgentkitEmbedding(HashingEmbedder(dim=DIM))


def _li_simple() -> tuple[Any, Callable[[], None]]:
    from agentkit_llamaindex import LlamaIndexVectorPort
    from llama_index.core import VectorStoreIndex

    return LlamaIndexVectorPort(VectorStoreIndex(nodes=[], embed_model=_li_embedding())), \
        lambda: None


def _li_chroma() -> tuple[Any, Callable[[], None]]:
    from agentkit_llamaindex import LlamaIndexVectorPort
    from llama_index.vector_stores.chroma import ChromaVectorStore

    client, name = chromadb.EphemeralClient(), "c" + uuid.uuid4().hex
    store = ChromaVectorStore(chroma_collection=client.create_collection(name))
    port = LlamaIndexVectorPort.from_vector_store(store, embed_model=_li_embedding())
    return port, lambda: client.delete_collection(name)


def _li_qdrant() -> tuple[Any, Callable[[], None]]:
    from agentkit_llamaindex import LlamaIndexVectorPort
    from llama_index.vector_stores.qdrant import QdrantVectorStore as LiQdrant

    client = QdrantClient(location=":memory:")
    store = LiQdrant(client=client, collection_name="c" + uuid.uuid4().hex)
    port = LlamaIndexVectorPort.from_vector_store(store, embed_model=_li_embedding())
    return port, client.close


LI_MAKERS = {"li-simple": _li_simple, "li-chroma": _li_chroma, "li-qdrant": _li_qdrant}
LI_RECORDS = [(cid, {k: v for k, v in meta.items() if k != "pinned"}) for cid, meta in RECORDS]
LI_FILTERS: dict[str, dict[str, Any]] = {
    label: where for label, where in FILTERS.items() if "pinned" not in repr(where)
}
LI_REFUSED: dict[str, dict[str, str]] = {
    # SimpleVectorStore (llama-index-core 0.14): one flat list of EQ NE GT GTE LT LTE
    # IN NIN, compared with Python's operators; no nested groups beside the scope's
    # tests (so no $or, no $not of an ordering), and IS_EMPTY also counts "" and [].
    "li-simple": {"or": "$or", "not": "$not", "exists": "$exists"},
    "li-chroma": {"not": "$not", "exists": "$exists", "str-order": "$gt"},
    "li-qdrant": {"exists": "$exists", "str-order": "$gt"},
}


@pytest.fixture(params=sorted(LI_MAKERS))
def li_port(request: pytest.FixtureRequest) -> Iterator[tuple[str, Any]]:
    port, close = LI_MAKERS[request.param]()
    yield request.param, port
    close()


async def test_llamaindex_ports_state_operators_exactly_or_refuse(
    li_port: tuple[str, Any]
) -> None:
    name, vp = li_port
    chunks = [Chunk(cid, f"ledger entry {cid}", meta) for cid, meta in LI_RECORDS]
    await vp.upsert(chunks, scope=ACME)
    await vp.upsert(chunks, scope=GLOBEX)
    store = name.split("-")[1]
    for label, where in LI_FILTERS.items():
        tree = parse_where(where)
        assert tree is not None
        expected = {cid for cid, meta in LI_RECORDS if tree.matches(meta)}
        refused = LI_REFUSED[name].get(label)
        if refused is not None:
            with pytest.raises(UnsupportedOperation) as info:
                await vp.search("ledger entry", k=20, scope=ACME, where=where)
            assert refused in str(info.value), (label, str(info.value))
            assert store in str(info.value).lower()
            continue
        hits = await vp.search("ledger entry", k=20, scope=ACME, where=where)
        assert {c.id for _, c in hits} == expected, (name, label)
    await _deletes_what_it_finds(vp, {cid for cid, _ in LI_RECORDS})


async def test_llamaindex_operator_spellings_never_reach_another_tenant(
    li_port: tuple[str, Any]
) -> None:
    _, vp = li_port
    await vp.upsert([Chunk("m", "ledger mine", {"t": 1})], scope=ACME)
    await vp.upsert([Chunk("g", "ledger theirs", {"t": 1, "org_id": "acme"})], scope=GLOBEX)
    for where in (
        {"t": {"$gte": 0}},
        {"org_id": "acme"},
        {"t": {"$in": [1, 2]}},
        {"$or": [{"t": 1}, {"t": 2}]},
    ):
        try:
            hits = await vp.search("ledger", k=10, scope=ACME, where=where)
        except (UnsupportedOperation, InvalidFilter):
            continue  # refused by name, never widened (the simple store's $or)
        assert {c.id for _, c in hits} <= {"m"}, where
        await vp.delete_where(where, scope=ACME)
        assert await vp.search("ledger", k=10, scope=GLOBEX) != [], where
    await _stamps_refused(vp)


async def test_the_simple_store_answers_orderings_whatever_another_tenant_stores() -> None:
    """Its filter compares with Python's ``<``, on every node, so another tenant's
    string where a number is wanted raises inside the store: the port then asks again
    with the orderings left to its re-check, the same answer, and no error that
    depends on what another scope stores. A bool twin of 1 is never taken for 1."""
    vp, _ = _li_simple()
    await vp.upsert([Chunk("m1", "ledger a", {"year": 2021}),
                     Chunk("m2", "ledger b", {"year": True}),
                     Chunk("m3", "ledger c", {"year": 2010})], scope=ACME)
    for where, expected in (({"year": {"$gte": 2020}}, {"m1"}),
                            ({"year": {"$gte": 1, "$lte": 2015}}, {"m3"}),
                            ({"year": {"$in": [1, 2021.0]}}, {"m1"})):
        alone = {c.id for _, c in await vp.search("ledger", k=5, scope=ACME, where=where)}
        assert alone == expected, where
    await vp.upsert([Chunk("g", "ledger d", {"year": "2021"})], scope=GLOBEX)
    for where, expected in (({"year": {"$gte": 2020}}, {"m1"}),
                            ({"year": {"$gte": 1, "$lte": 2015}}, {"m3"})):
        hits = await vp.search("ledger", k=5, scope=ACME, where=where)
        assert {c.id for _, c in hits} == expected, where
        assert len(await vp.search("ledger", k=1, scope=ACME, where=where)) == 1


def _li_faiss() -> Any:
    from agentkit_llamaindex import LlamaIndexVectorPort
    from llama_index.vector_stores.faiss import FaissVectorStore

    store = FaissVectorStore(faiss_index=faiss.IndexFlatL2(DIM))
    return LlamaIndexVectorPort.from_vector_store(store, embed_model=_li_embedding())


async def test_a_store_that_cannot_filter_answers_every_filter_exactly_or_not_at_all() -> None:
    """LlamaIndex's FaissVectorStore takes no filters: scoped use is refused outright,
    and unscoped, every where -- plain or with operators -- is applied by the port
    while it reads the ranking to the end, so search finds exactly what the reference
    evaluator admits and delete_where deletes exactly what that search found."""
    vp = _li_faiss()
    with pytest.raises(StoreError, match="FaissVectorStore"):
        await vp.search("ledger", k=5, scope=ACME, where={"year": {"$gte": 2020}})
    unscoped = Scope()
    chunks = [Chunk(cid, f"ledger entry {cid}", meta) for cid, meta in RECORDS]
    await vp.upsert(chunks, scope=unscoped)
    for label, where in {**FILTERS, "eq-op": {"team": {"$eq": "billing"}},
                         "plain": {"team": "billing"}}.items():
        tree = parse_where(where)
        assert tree is not None
        expected = {cid for cid, meta in RECORDS if tree.matches(meta)}
        hits = await vp.search("ledger entry", k=20, scope=unscoped, where=where)
        assert {c.id for _, c in hits} == expected, label
        few = await vp.search("ledger entry", k=1, scope=unscoped, where=where)
        assert len(few) == min(1, len(expected)), label
    where = {"$or": [{"year": {"$lt": 2019}}, {"team": {"$exists": False}}]}
    found = {c.id for _, c in await vp.search("ledger", k=20, scope=unscoped, where=where)}
    assert found == {"r1", "r5"}
    assert await vp.delete_where(where, scope=unscoped) == len(found)
    left = {c.id for c in await vp.scan(scope=unscoped)}
    assert left == {cid for cid, _ in RECORDS} - found


BAD_FILTERS: list[tuple[dict[str, Any], str, str]] = [
    ({"year": {"$bogus": 1}}, "year", "$bogus"),
    ({"year": {"$in": 2020}}, "year", "$in"),
    ({"year": {"$gt": {"a": 1}}}, "year", "$gt"),
    ({"$or": [{"team": "x"}, {"year": {"$gte": [2020]}}]}, "year", "$gte"),
    ({"team": [["billing"]]}, "team", "any-of"),
    ({"team": {"billing": 1}}, "team", "'billing'"),
]


def _spied(store: Any) -> list[str]:
    """Record every call of the store's reading and deleting methods."""
    calls: list[str] = []
    for name in dir(type(store)):
        if name.startswith("_") or not any(
            word in name for word in ("search", "query", "get", "delete")
        ):
            continue
        method = getattr(store, name, None)
        if not callable(method):
            continue

        def spy(*args: Any, _method: Any = method, _name: str = name, **kw: Any) -> Any:
            calls.append(_name)
            return _method(*args, **kw)

        try:
            object.__setattr__(store, name, spy)
        except (AttributeError, TypeError, ValueError):
            continue
    return calls


@pytest.mark.parametrize("maker", sorted(MAKERS) + sorted(LI_MAKERS))
async def test_a_bad_filter_is_refused_by_every_port_before_its_store_is_asked(
    maker: str,
) -> None:
    """Unknown operators and wrong operands are refused naming the key and the
    operator, by search, scan and delete_where alike, before the store is asked
    anything; nothing stored is lost."""
    if maker in MAKERS:
        store, close = MAKERS[maker]()
        vp: Any = LangChainVectorPort(store)
    else:
        vp, close = LI_MAKERS[maker]()
        store = vp.vector_store
    try:
        await vp.upsert([Chunk(cid, f"ledger {cid}", meta) for cid, meta in RECORDS],
                        scope=ACME)
        calls = _spied(store)
        for where, key, op in BAD_FILTERS:
            for call in (
                lambda w: vp.search("ledger", k=3, scope=ACME, where=w),
                lambda w: vp.scan(scope=ACME, where=w),
                lambda w: vp.delete_where(w, scope=ACME),
            ):
                with pytest.raises(InvalidFilter) as info:
                    await call(where)
                assert repr(key) in str(info.value) or key in str(info.value), where
                assert op in str(info.value), (where, str(info.value))
        assert calls == []
        assert {c.id for c in await vp.scan(scope=ACME)} == {cid for cid, _ in RECORDS}
    finally:
        close()


async def test_a_dialect_that_states_equality_only_refuses_operators_naming_the_store() -> None:
    """``filter_style="dict"`` (or a function from an equality dict) states equality
    only: an operator is refused naming it and the store, and plain equality works."""
    for style in ("dict", lambda flat: (lambda doc: all(doc.metadata.get(k) == v
                                                        for k, v in flat.items()))):
        vp = LangChainVectorPort(InMemoryVectorStore(_embeddings()), filter_style=style)
        await vp.upsert([Chunk("a", "ledger a", {"y": 2})], scope=ACME)
        with pytest.raises(UnsupportedOperation) as info:
            await vp.search("ledger", k=2, scope=ACME, where={"y": {"$gt": 1}})
        assert "$gt" in str(info.value) and "InMemoryVectorStore" in str(info.value)
        if style == "dict":
            continue  # InMemoryVectorStore itself takes a callable, not a dict
        hits = await vp.search("ledger", k=2, scope=ACME, where={"y": 2})
        assert [c.id for _, c in hits] == ["a"]
