"""One contract for both VectorPorts, on every store a user of either framework runs.

The VectorPort contract itself is ``agentkit.testing.VectorPortTests``, run at the end
of this file on every pair (``Test*Kit``). The cases above it are what only a bridge
has: a user's own records written with plain framework code, raw store ids, reserved
keys, write-back counted with the store's own API.

Every (bridge, store) pair below runs the same cases through the public API
(``VectorMemory(LangChainVectorPort(store))``, also with a filter function of the
user's own instead of the port's Qdrant dialect, ``LlamaIndexVectorPort(index)`` /
``LlamaIndexVectorPort.from_vector_store(store, embed_model=...)`` and the ports'
``upsert``/``search``/``delete``), with real stores: Chroma in-process, Qdrant local
mode, FAISS, beside LangChain's ``InMemoryVectorStore`` and LlamaIndex's simple store.
"One copy" is always counted with the store's own API, never through the port, so a
port cannot hide a duplicate from the check.

LlamaIndex's ``FaissVectorStore`` can neither filter nor delete: it runs the unscoped
cases only, and its scoped use must be refused before anything is written. Where a case
replaces or removes a record on it, the port may either do it or refuse with a clear
agentkit error that leaves the store as it was - never silently keep a second copy.
"""

from __future__ import annotations

import dataclasses
import math
import uuid
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import chromadb
import faiss
import pytest
from agentkit_langchain import AgentkitEmbeddings, LangChainVectorPort
from agentkit_llamaindex import AgentkitEmbedding, AgentkitVectorStore, LlamaIndexVectorPort
from langchain_chroma import Chroma
from langchain_community.docstore.in_memory import InMemoryDocstore
from langchain_community.vectorstores import FAISS
from langchain_core.documents import Document
from langchain_core.vectorstores import InMemoryVectorStore
from langchain_qdrant import QdrantVectorStore as LangChainQdrant
from llama_index.core import StorageContext, VectorStoreIndex
from llama_index.core.schema import TextNode
from llama_index.vector_stores.chroma import ChromaVectorStore
from llama_index.vector_stores.faiss import FaissVectorStore
from llama_index.vector_stores.qdrant import QdrantVectorStore as LlamaIndexQdrant
from qdrant_client import QdrantClient, models

from agentkit.kernel import Ctx, Scope
from agentkit.kernel.errors import AgentkitError
from agentkit.state.memory import MemoryItem, VectorMemory
from agentkit.testing import VectorPortTests
from agentkit.vector import Chunk, HashingEmbedder

DIM = 64
EMBEDDER = HashingEmbedder(dim=DIM)
UNSCOPED = Scope()
ACME = Scope("acme", "support")
GLOBEX = Scope("globex", "support")
RESERVED = "agentkit_"
# Qdrant takes only UUIDs (or unsigned ints) as point ids, so a Qdrant user's own
# records carry UUIDs; everywhere else the user's id is a plain string.
QDRANT_USER_ID = "6b0c1f0e-2a44-4e7b-9d38-1f1d2c3b4a51"
QDRANT_USER_ID_2 = "0f3e9a7c-5d21-4b8e-8c6f-2a9d1e4b7c30"


@dataclass
class Pair:
    """A port over a fresh real store, and the store's own view of what it holds."""

    name: str
    port: Any
    count: Callable[[], int]  # records in the store, by the store's own API
    text_of: Callable[[str], str | None]  # the store's own read of a record by raw id
    raw_ids: Callable[[], list[str]]  # every record id the store holds
    write_plain: Callable[[str, str, dict[str, Any]], None]  # framework code, no agentkit
    source_key: str  # the metadata key the framework's loaders put a file path under
    user_ids: tuple[str, str] = ("doc-1", "doc-2")  # ids a user picked for their records
    scoped: bool = True  # the store can filter, so tenants may share it
    deletes: bool = True  # the store can remove a record
    extra: dict[str, Any] = field(default_factory=dict)
    cleanup: list[Callable[[], None]] = field(default_factory=list)


# --- the stores ----------------------------------------------------------------------

_CHROMA: list[Any] = []


def _chroma_client() -> Any:
    if not _CHROMA:
        _CHROMA.append(chromadb.EphemeralClient())
    return _CHROMA[0]


def _fresh_name() -> str:
    return "c" + uuid.uuid4().hex


def _lc_embeddings() -> AgentkitEmbeddings:
    return AgentkitEmbeddings(EMBEDDER)


def _li_embedding() -> AgentkitEmbedding:
    return AgentkitEmbedding(EMBEDDER)


def _lc_text(store: Any, raw_id: str) -> str | None:
    docs = store.get_by_ids([raw_id])
    return str(docs[0].page_content) if docs else None


def _lc_writer(store: Any) -> Callable[[str, str, dict[str, Any]], None]:
    def write(raw_id: str, text: str, metadata: dict[str, Any]) -> None:
        store.add_documents([Document(id=raw_id, page_content=text, metadata=metadata)])

    return write


def _li_writer(index: VectorStoreIndex) -> Callable[[str, str, dict[str, Any]], None]:
    def write(raw_id: str, text: str, metadata: dict[str, Any]) -> None:
        index.insert_nodes([TextNode(id_=raw_id, text=text, metadata=metadata)])

    return write


def _lc_inmemory() -> Pair:
    store = InMemoryVectorStore(_lc_embeddings())
    return Pair(
        "lc-inmemory",
        LangChainVectorPort(store),
        count=lambda: len(store.store),
        text_of=lambda i: _lc_text(store, i),
        raw_ids=lambda: list(store.store),
        write_plain=_lc_writer(store),
        source_key="source",
    )


def _lc_chroma() -> Pair:
    client, name = _chroma_client(), _fresh_name()
    store = Chroma(collection_name=name, client=client, embedding_function=_lc_embeddings())
    collection = client.get_collection(name)
    return Pair(
        "lc-chroma",
        LangChainVectorPort(store),
        count=collection.count,
        text_of=lambda i: _lc_text(store, i),
        raw_ids=lambda: list(collection.get()["ids"]),
        write_plain=_lc_writer(store),
        source_key="source",
        cleanup=[lambda: client.delete_collection(name)],
    )


def _qdrant_ids(client: QdrantClient, name: str) -> list[str]:
    if not client.collection_exists(name):
        return []
    points, _ = client.scroll(name, limit=100_000)
    return [str(p.id) for p in points]


def _qdrant_count(client: QdrantClient, name: str) -> int:
    if not client.collection_exists(name):
        return 0
    return int(client.count(name, exact=True).count)


def _lc_qdrant() -> Pair:
    client, name = QdrantClient(location=":memory:"), _fresh_name()
    # langchain-qdrant wraps an existing collection: the user creates it, empty.
    client.create_collection(
        name, vectors_config=models.VectorParams(size=DIM, distance=models.Distance.COSINE)
    )
    store = LangChainQdrant(client=client, collection_name=name, embedding=_lc_embeddings())
    return Pair(
        "lc-qdrant",
        LangChainVectorPort(store),
        count=lambda: _qdrant_count(client, name),
        text_of=lambda i: _lc_text(store, i),
        raw_ids=lambda: _qdrant_ids(client, name),
        write_plain=_lc_writer(store),
        source_key="source",
        user_ids=(QDRANT_USER_ID, QDRANT_USER_ID_2),
        cleanup=[client.close],
    )


def _qdrant_equality(equality: dict[str, Any]) -> models.Filter:
    """A user's own filter function: equality on langchain-qdrant's payload paths."""
    return models.Filter(
        must=[
            models.FieldCondition(key=f"metadata.{key}", match=models.MatchValue(value=value))
            for key, value in equality.items()
        ]
    )


def _lc_qdrant_own_filter() -> Pair:
    """langchain-qdrant with the filter overridden (``filter_style=`` a function): the
    store's id convention (UUID point ids, ``_id`` in the results) must stay."""
    pair = _lc_qdrant()
    store = pair.port.vectorstore
    return dataclasses.replace(
        pair,
        name="lc-qdrant-own-filter",
        port=LangChainVectorPort(store, filter_style=_qdrant_equality),
    )


def _lc_faiss() -> Pair:
    store = FAISS(
        embedding_function=_lc_embeddings(),
        index=faiss.IndexFlatL2(DIM),
        docstore=InMemoryDocstore(),
        index_to_docstore_id={},
    )
    return Pair(
        "lc-faiss",
        LangChainVectorPort(store),
        count=lambda: int(store.index.ntotal),
        text_of=lambda i: _lc_text(store, i),
        raw_ids=lambda: list(store.index_to_docstore_id.values()),
        write_plain=_lc_writer(store),
        source_key="source",
    )


def _li_simple() -> Pair:
    index = VectorStoreIndex(nodes=[], embed_model=_li_embedding())
    vectors = index.vector_store.data.embedding_dict  # type: ignore[attr-defined]

    def text_of(raw_id: str) -> str | None:
        if raw_id not in vectors:
            return None
        return str(index.docstore.get_node(raw_id).get_content())

    return Pair(
        "li-simple",
        LlamaIndexVectorPort(index),
        count=lambda: len(vectors),
        text_of=text_of,
        raw_ids=lambda: list(vectors),
        write_plain=_li_writer(index),
        source_key="file_path",
    )


def _li_chroma() -> Pair:
    client, name = _chroma_client(), _fresh_name()
    collection = client.create_collection(name)
    store = ChromaVectorStore(chroma_collection=collection)
    users_index = VectorStoreIndex.from_vector_store(store, embed_model=_li_embedding())

    def text_of(raw_id: str) -> str | None:
        got = collection.get(ids=[raw_id])
        return str(got["documents"][0]) if got["ids"] else None

    return Pair(
        "li-chroma",
        LlamaIndexVectorPort.from_vector_store(store, embed_model=_li_embedding()),
        count=collection.count,
        text_of=text_of,
        raw_ids=lambda: list(collection.get()["ids"]),
        write_plain=_li_writer(users_index),
        source_key="file_path",
        cleanup=[lambda: client.delete_collection(name)],
    )


def _li_store_writer(store: Any) -> Callable[[str, str, dict[str, Any]], None]:
    """The other plain LlamaIndex way in: nodes embedded by the user, ``store.add``."""
    embed = _li_embedding()

    def write(raw_id: str, text: str, metadata: dict[str, Any]) -> None:
        node = TextNode(id_=raw_id, text=text, metadata=metadata)
        node.embedding = embed.get_text_embedding(text)
        store.add([node])

    return write


def _li_qdrant() -> Pair:
    client, name = QdrantClient(location=":memory:"), _fresh_name()
    store = LlamaIndexQdrant(client=client, collection_name=name)  # not created yet

    def text_of(raw_id: str) -> str | None:
        if raw_id not in _qdrant_ids(client, name):
            return None
        return str(store.get_nodes(node_ids=[raw_id])[0].get_content())

    return Pair(
        "li-qdrant",
        LlamaIndexVectorPort.from_vector_store(store, embed_model=_li_embedding()),
        count=lambda: _qdrant_count(client, name),
        text_of=text_of,
        raw_ids=lambda: _qdrant_ids(client, name),
        write_plain=_li_store_writer(store),
        source_key="file_path",
        user_ids=(QDRANT_USER_ID, QDRANT_USER_ID_2),
        cleanup=[client.close],
    )


def _li_faiss() -> Pair:
    flat = faiss.IndexFlatL2(DIM)
    store = FaissVectorStore(faiss_index=flat)
    index = VectorStoreIndex(
        nodes=[],
        storage_context=StorageContext.from_defaults(vector_store=store),
        embed_model=_li_embedding(),
    )
    # The store keeps bare vectors; which of them the index still serves is its struct.
    served = index.index_struct.nodes_dict

    def text_of(raw_id: str) -> str | None:
        if raw_id not in served.values():
            return None
        return str(index.docstore.get_node(raw_id).get_content())

    return Pair(
        "li-faiss",
        LlamaIndexVectorPort(index),
        count=lambda: len(index.index_struct.nodes_dict),
        text_of=text_of,
        raw_ids=lambda: list(index.index_struct.nodes_dict.values()),
        write_plain=_li_writer(index),
        source_key="file_path",
        scoped=False,
        deletes=False,
        extra={"faiss": flat, "index": index},
    )


PAIRS: dict[str, Callable[[], Pair]] = {
    "lc-inmemory": _lc_inmemory,
    "lc-chroma": _lc_chroma,
    "lc-qdrant": _lc_qdrant,
    "lc-qdrant-own-filter": _lc_qdrant_own_filter,
    "lc-faiss": _lc_faiss,
    "li-simple": _li_simple,
    "li-chroma": _li_chroma,
    "li-qdrant": _li_qdrant,
    "li-faiss": _li_faiss,
}
SCOPED_PAIRS = [name for name in PAIRS if name != "li-faiss"]


def _open(name: str) -> Iterator[Pair]:
    built = PAIRS[name]()
    try:
        yield built
    finally:
        for undo in built.cleanup:
            undo()


@pytest.fixture(params=list(PAIRS))
def pair(request: pytest.FixtureRequest) -> Iterator[Pair]:
    """Every (bridge, store) pair; unscoped cases run here."""
    yield from _open(request.param)


@pytest.fixture(params=SCOPED_PAIRS)
def scoped_pair(request: pytest.FixtureRequest) -> Iterator[Pair]:
    """The pairs whose store can filter, so tenants may share it."""
    yield from _open(request.param)


# --- helpers --------------------------------------------------------------------------


def _home(p: Pair) -> Scope:
    """The scope a single-tenant case writes in: a tenant's, unless the store cannot."""
    return ACME if p.scoped else UNSCOPED


async def _replacing(p: Pair, action: Callable[[], Awaitable[Any]]) -> bool:
    """Run a write that must replace or remove a record; True when it ran.

    On a store that cannot delete, the port may refuse such a write instead, with an
    agentkit error and the store as it was; anything else is a failure.
    """
    if p.deletes:
        await action()
        return True
    before = sorted(p.raw_ids())
    try:
        await action()
    except AgentkitError:
        assert sorted(p.raw_ids()) == before, "a refused write changed the store"
        return False
    return True


def _crowd_text(query: str, tenant: int, i: int) -> str:
    # The query plus one word of its own: close to the query, yet no two vectors equal.
    # (Hundreds of identical vectors break Chroma's HNSW graph: its own unfiltered
    # search then misses records, which would test the store, not the port.)
    return f"{query} entry{tenant}x{i}"


def _assert_outranked(query: str, own: list[str], crowd: str) -> None:
    """The set-up really buries ``own`` under the crowd (cosine on the same embedder)."""
    rows = EMBEDDER.embed_sync([query, crowd, *own])
    sims = rows[1:] @ rows[0]
    assert float(sims[0]) > float(max(sims[1:])) + 0.1


def _ids(hits: list[tuple[float, Chunk]]) -> list[str]:
    return [chunk.id for _, chunk in hits]


def _assert_scores(hits: list[tuple[float, Chunk]]) -> None:
    """Plain finite floats, best first (higher means more relevant)."""
    scores = [score for score, _ in hits]
    for score in scores:
        assert type(score) is float, f"score {score!r} is a {type(score).__name__}"
        assert math.isfinite(score)
    assert scores == sorted(scores, reverse=True), f"not best first: {scores}"


def _assert_clean(hits: list[tuple[float, Chunk]]) -> None:
    for _, chunk in hits:
        leaked = [key for key in chunk.metadata if key.startswith(RESERVED)]
        assert not leaked, f"{chunk.id!r} came back with the port's keys {leaked}"


# --- the contract ---------------------------------------------------------------------


async def test_recalled_item_written_back_updates_it(pair: Pair) -> None:
    memory, ctx = VectorMemory(pair.port), Ctx(_home(pair))
    await memory.write(
        [MemoryItem("the cafeteria opens at eight", "user", None,
                    {"id": "cafe", "source": "x.md"})],
        ctx=ctx,
    )
    [item] = await memory.query("cafeteria opens", k=3, ctx=ctx)
    assert item.id == "cafe"

    async def write_back() -> None:
        await memory.write([dataclasses.replace(item, content="the cafeteria opens at nine")],
                           ctx=ctx)

    if not await _replacing(pair, write_back):
        return
    assert pair.count() == 1
    again = await memory.query("cafeteria opens", k=3, ctx=ctx)
    assert [(i.id, i.content, dict(i.metadata)) for i in again] == [
        ("cafe", "the cafeteria opens at nine", {"source": "x.md"})
    ]


async def test_existing_data_is_read_updated_written_back_and_deleted(pair: Pair) -> None:
    mine, theirs = pair.user_ids
    key = pair.source_key
    pair.write_plain(mine, "the onboarding checklist for new hires", {key: "docs/onboarding.md"})
    pair.write_plain(theirs, "travel expense rules", {key: "docs/travel.md"})
    assert pair.count() == 2
    port = pair.port

    hits = await port.search("onboarding checklist", k=1, scope=UNSCOPED)
    _assert_scores(hits)
    _assert_clean(hits)
    assert [(c.id, c.text) for _, c in hits] == [(mine, "the onboarding checklist for new hires")]
    assert dict(hits[0][1].metadata) == {key: "docs/onboarding.md"}  # theirs, nothing added
    where = await port.search("onboarding checklist", k=5, scope=UNSCOPED,
                              where={key: "docs/travel.md"})
    assert _ids(where) == [theirs]
    if pair.scoped:  # a tenant never sees the shared records
        assert await port.search("onboarding checklist", k=5, scope=ACME) == []
        await port.delete([mine, theirs], scope=ACME)
        await port.upsert([Chunk(mine, "acme's own checklist")], scope=ACME)
        assert pair.text_of(mine) == "the onboarding checklist for new hires"
        assert pair.count() == 3
        await port.delete([mine], scope=ACME)
    assert pair.count() == 2

    async def update() -> None:
        await port.upsert(
            [Chunk(mine, "the onboarding checklist, revised", {key: "docs/onboarding.md"})],
            scope=UNSCOPED,
        )

    if await _replacing(pair, update):
        assert pair.count() == 2, "writing the user's id must update their record in place"
        assert pair.text_of(mine) == "the onboarding checklist, revised"

        memory, ctx = VectorMemory(port), Ctx(UNSCOPED)
        [item] = await memory.query("onboarding checklist", k=1, ctx=ctx)
        assert item.id == mine and item.metadata[key] == "docs/onboarding.md"
        await memory.write([dataclasses.replace(item, content="onboarding checklist v3")],
                           ctx=ctx)
        assert pair.count() == 2, "a recalled record written back must update it"
        assert pair.text_of(mine) == "onboarding checklist v3"
        again = await memory.query("onboarding checklist", k=5, ctx=ctx)
        assert [i.id for i in again].count(mine) == 1

    async def delete() -> None:
        await port.delete([mine, "never-written"], scope=UNSCOPED)

    if await _replacing(pair, delete):
        assert pair.count() == 1
        assert pair.text_of(mine) is None
        assert pair.text_of(theirs) == "travel expense rules"


async def test_existing_data_is_found_among_many_tenant_records(scoped_pair: Pair) -> None:
    mine, _ = scoped_pair.user_ids
    key = scoped_pair.source_key
    scoped_pair.write_plain(mine, "holiday calendar for the office", {key: "docs/holidays.md"})
    query = "shared holiday calendar"
    _assert_outranked(query, ["holiday calendar for the office"], _crowd_text(query, 0, 0))
    for t in range(4):  # 200 tenant records, every one closer to the query
        await scoped_pair.port.upsert(
            [Chunk(f"h{i}", _crowd_text(query, t, i)) for i in range(50)],
            scope=Scope(f"tenant-{t}", "hr"),
        )
    assert scoped_pair.count() == 201

    hits = await scoped_pair.port.search(query, k=3, scope=UNSCOPED)
    _assert_clean(hits)
    assert _ids(hits) == [mine]
    assert hits[0][1].metadata[key] == "docs/holidays.md"
    where = await scoped_pair.port.search(query, k=3, scope=UNSCOPED,
                                          where={key: "docs/holidays.md"})
    assert _ids(where) == [mine]
    items = await VectorMemory(scoped_pair.port).query(query, k=1, ctx=Ctx())
    assert [i.id for i in items] == [mine]


async def test_a_raw_store_id_cannot_reach_a_scoped_record(scoped_pair: Pair) -> None:
    """An unscoped id spelled like a tenant record's store id is still another record."""
    port = scoped_pair.port
    await port.upsert([Chunk("1", "acme secret plan")], scope=ACME)
    [raw] = scoped_pair.raw_ids()
    await port.upsert([Chunk(raw, "written by the unscoped bucket")], scope=UNSCOPED)
    assert scoped_pair.count() == 2
    hits = await port.search("acme secret plan", k=5, scope=ACME)
    assert [(c.id, c.text) for _, c in hits] == [("1", "acme secret plan")]
    await port.delete([raw], scope=UNSCOPED)
    hits = await port.search("acme secret plan", k=5, scope=ACME)
    assert [(c.id, c.text) for _, c in hits] == [("1", "acme secret plan")]
    assert scoped_pair.count() == 1


async def test_a_reserved_metadata_key_is_refused_before_anything_lands(pair: Pair) -> None:
    scope, port = _home(pair), pair.port
    await port.upsert([Chunk("1", "refund policy", {"kind": "faq"})], scope=scope)
    before = sorted(pair.raw_ids())
    # Clean names are remembered for speed; a reserved one beside them still is refused.
    batch = [Chunk("2", "travel policy", {"kind": "faq"}),
             Chunk("3", "expense policy", {"kind": "faq", "agentkit_org_id": "globex"})]
    with pytest.raises(ValueError, match="agentkit_org_id"):
        await port.upsert(batch, scope=scope)
    assert sorted(pair.raw_ids()) == before
    hits = await port.search("policy", k=5, scope=scope)
    assert [c.id for _, c in hits] == ["1"]


async def test_a_store_that_cannot_filter_refuses_scoped_use_before_writing() -> None:
    for built in _open("li-faiss"):
        flat, index = built.extra["faiss"], built.extra["index"]
        mine, _ = built.user_ids
        built.write_plain(mine, "shared onboarding notes", {"file_path": "docs/notes.md"})
        before = (flat.ntotal, len(index.docstore.docs), built.raw_ids())

        with pytest.raises(AgentkitError, match=r"(?i)filter"):
            await built.port.upsert([Chunk("1", "acme onboarding notes")], scope=ACME)
        with pytest.raises(AgentkitError, match=r"(?i)filter"):
            await VectorMemory(built.port).write(
                [MemoryItem("acme onboarding notes", "user", None, {"id": "1"})], ctx=Ctx(ACME)
            )
        assert (flat.ntotal, len(index.docstore.docs), built.raw_ids()) == before
        with pytest.raises(AgentkitError, match=r"(?i)filter"):
            await built.port.search("onboarding notes", k=3, scope=ACME)

        hits = await built.port.search("onboarding notes", k=3, scope=UNSCOPED)
        assert [(c.id, c.text) for _, c in hits] == [(mine, "shared onboarding notes")]
        _assert_scores(hits)


async def test_llamaindex_lists_nodes_through_any_ports_scan(pair: Pair) -> None:
    """The LlamaIndex AgentkitVectorStore lists nodes through any port's ``scan``."""
    scope, port = _home(pair), pair.port
    await port.upsert(
        [Chunk("b", "scan record bravo"), Chunk("a", "scan record alpha", {"n": 1})],
        scope=scope,
    )
    nodes = await AgentkitVectorStore(port, scope=scope).aget_nodes()
    assert [(n.node_id, n.get_content()) for n in nodes] == [
        ("a", "scan record alpha"), ("b", "scan record bravo")
    ]


async def test_scan_never_lists_another_bucket(scoped_pair: Pair) -> None:
    port = scoped_pair.port
    mine, theirs = scoped_pair.user_ids
    key = scoped_pair.source_key
    scoped_pair.write_plain(theirs, "a user's own travel rules", {key: "docs/travel.md"})
    scoped_pair.write_plain(mine, "a user's own onboarding notes", {key: "docs/onboarding.md"})
    await port.upsert([Chunk("1", "acme plan"), Chunk("2", "acme budget")], scope=ACME)
    await port.upsert([Chunk("1", "globex plan")], scope=GLOBEX)
    await port.upsert([Chunk("1", "half scope plan")], scope=Scope("acme"))
    assert scoped_pair.count() == 6

    async def listed(scope: Scope) -> list[tuple[str, str]]:
        page = await port.scan(scope=scope)
        for chunk in page:
            assert not [k for k in chunk.metadata if k.startswith(RESERVED)]
        searched = await port.search("plan budget rules notes", k=10, scope=scope)
        assert sorted(_ids(searched)) == [c.id for c in page], "scan and search disagree"
        return [(c.id, c.text) for c in page]

    assert await listed(ACME) == [("1", "acme plan"), ("2", "acme budget")]
    assert await listed(GLOBEX) == [("1", "globex plan")]
    assert await listed(Scope("acme")) == [("1", "half scope plan")]
    assert await listed(Scope("nobody", "here")) == []
    assert await listed(UNSCOPED) == sorted(
        [(mine, "a user's own onboarding notes"), (theirs, "a user's own travel rules")]
    )
    [own] = await port.scan(scope=UNSCOPED, where={key: "docs/travel.md"})
    assert (own.id, dict(own.metadata)) == (theirs, {key: "docs/travel.md"})
    assert await port.scan(scope=ACME, after="1", limit=1) == [Chunk("2", "acme budget")]


# --- the conformance kit, on every (bridge, store) pair ---------------------------------


class _PairKit(VectorPortTests):
    """agentkit.testing's VectorPortTests over one pair's port, on a fresh real store."""

    pair_name = ""

    @pytest.fixture
    def port(self) -> Iterator[Any]:
        for built in _open(self.pair_name):
            yield built.port


class TestLangChainInMemoryKit(_PairKit):
    pair_name = "lc-inmemory"


class TestLangChainChromaKit(_PairKit):
    """Chroma's filter orders numbers only, and has no $exists: those are refused."""

    operators = False
    pair_name = "lc-chroma"


class TestLangChainQdrantKit(_PairKit):
    """Qdrant's ranges are numeric, and $exists is not stated: those are refused."""

    operators = False
    pair_name = "lc-qdrant"


class TestLangChainFaissKit(_PairKit):
    pair_name = "lc-faiss"


class TestLlamaIndexSimpleKit(_PairKit):
    """LlamaIndex MetadataFilters hold no bool; ranges, $nin, $exists, $or are refused here."""

    operators = False
    pair_name = "li-simple"


class TestLlamaIndexChromaKit(_PairKit):
    """LlamaIndex MetadataFilters hold no bool, Chroma no string range."""

    operators = False
    pair_name = "li-chroma"


class TestLlamaIndexQdrantKit(_PairKit):
    """LlamaIndex MetadataFilters hold no bool, Qdrant no string range."""

    operators = False
    pair_name = "li-qdrant"


class TestLlamaIndexFaissKit(_PairKit):
    """LlamaIndex's FaissVectorStore can neither filter nor delete."""

    pair_name = "li-faiss"
    operators = False
    scoped = False
    deletes = False
