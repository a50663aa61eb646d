"""AgentkitVectorStore: agentkit's stores as a LlamaIndex vector store.

Real LlamaIndex parts throughout (StorageContext, VectorStoreIndex, its retrievers and
query engine); the conftest makes LlamaIndex offline (MockLLM, agentkit's hashing
embedder as Settings.embed_model).
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from agentkit_llamaindex import AgentkitVectorStore, LlamaIndexEmbedder
from llama_index.core import Document, StorageContext, VectorStoreIndex
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.schema import NodeRelationship, RelatedNodeInfo, TextNode
from llama_index.core.vector_stores.types import (
    FilterCondition,
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
    VectorStoreQuery,
)

from agentkit.kernel import Scope
from agentkit.kernel.errors import InvalidArgument, StoreError
from agentkit.vector import Chunk, HashingEmbedder, InMemoryVectorStore, SQLiteVectorStore

ACME = Scope("acme", "support")
GLOBEX = Scope("globex", "support")


def _nodes() -> list[TextNode]:
    return [
        TextNode(
            id_="policy-1",
            text="Refunds are accepted within 30 days of purchase.",
            metadata={"source": "policy.pdf", "page": 1},
            excluded_llm_metadata_keys=["page"],
            relationships={NodeRelationship.SOURCE: RelatedNodeInfo(node_id="doc-policy")},
        ),
        TextNode(
            id_="policy-2",
            text="Refunds need the original receipt.",
            metadata={"source": "policy.pdf", "page": 2},
            relationships={NodeRelationship.SOURCE: RelatedNodeInfo(node_id="doc-policy")},
        ),
        TextNode(
            id_="ship-1",
            text="Standard shipping takes five business days.",
            metadata={"source": "shipping.pdf", "page": 1},
            relationships={NodeRelationship.SOURCE: RelatedNodeInfo(node_id="doc-ship")},
        ),
    ]


def _index(store: AgentkitVectorStore) -> VectorStoreIndex:
    context = StorageContext.from_defaults(vector_store=store)
    return VectorStoreIndex(_nodes(), storage_context=context)


def _ids(index: VectorStoreIndex, query: str, **kwargs: object) -> list[str]:
    return [n.node.node_id for n in index.as_retriever(**kwargs).retrieve(query)]


def test_index_on_the_store_keeps_nodes_whole(tmp_path: Path) -> None:
    store = AgentkitVectorStore(path=tmp_path / "li.db")
    index = _index(store)
    hits = index.as_retriever(similarity_top_k=2).retrieve("refunds receipt")
    assert [h.node.node_id for h in hits] == ["policy-2", "policy-1"]
    assert all(isinstance(h.score, float) for h in hits)
    back = {n.node_id: n for n in store.get_nodes(["policy-1", "ship-1"])}
    original = _nodes()[0]
    node = back["policy-1"]
    assert node.get_content() == original.get_content()
    assert node.metadata == original.metadata
    assert node.ref_doc_id == "doc-policy"
    assert node.excluded_llm_metadata_keys == ["page"]
    assert back["ship-1"].ref_doc_id == "doc-ship"
    store.close()


def test_from_vector_store_reads_what_another_object_wrote(tmp_path: Path) -> None:
    path = tmp_path / "li.db"
    first = AgentkitVectorStore(path=path)
    _index(first)
    first.close()
    again = AgentkitVectorStore(path=path)
    index = VectorStoreIndex.from_vector_store(again)
    assert _ids(index, "shipping days", similarity_top_k=1) == ["ship-1"]
    answer = index.as_query_engine(similarity_top_k=1).query("shipping")
    assert [n.node.node_id for n in answer.source_nodes] == ["ship-1"]
    again.close()


def test_index_survives_a_process_restart(tmp_path: Path) -> None:
    path = tmp_path / "restart.db"
    store = AgentkitVectorStore(path=path)
    _index(store)
    store.close()
    script = textwrap.dedent(
        f"""
        import json
        from llama_index.core import Settings, VectorStoreIndex
        from llama_index.core.llms import MockLLM
        from agentkit.vector import HashingEmbedder
        from agentkit_llamaindex import AgentkitEmbedding, AgentkitVectorStore
        Settings.llm = MockLLM()
        Settings.embed_model = AgentkitEmbedding(HashingEmbedder(dim=256))
        store = AgentkitVectorStore(path={str(path)!r})
        index = VectorStoreIndex.from_vector_store(store)
        hits = index.as_retriever(similarity_top_k=2).retrieve("refunds receipt")
        print(json.dumps([
            [h.node.node_id, h.node.get_content(), h.node.metadata, h.node.ref_doc_id]
            for h in hits
        ]))
        store.close()
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1]) == [
        ["policy-2", "Refunds need the original receipt.", {"source": "policy.pdf", "page": 2},
         "doc-policy"],
        ["policy-1", "Refunds are accepted within 30 days of purchase.",
         {"source": "policy.pdf", "page": 1}, "doc-policy"],
    ]


def test_metadata_filters_with_operators_and_widening(tmp_path: Path) -> None:
    store = AgentkitVectorStore(path=tmp_path / "f.db")
    # 40 close matches first, and the only "rare" ones rank last for the query.
    nodes = [
        TextNode(
            id_=f"n{i:02d}", text=f"refund policy detail {i}", metadata={"n": i, "kind": "common"}
        )
        for i in range(40)
    ]
    nodes += [
        TextNode(id_="r1", text="unrelated gardening note", metadata={"n": 100, "kind": "rare"}),
        TextNode(id_="r2", text="another gardening note", metadata={"n": 200, "kind": "rare"}),
    ]
    store.add(nodes)

    def ask(filters: MetadataFilters, k: int = 2) -> set[str]:
        query = VectorStoreQuery(query_str="refund policy", similarity_top_k=k, filters=filters)
        result = store.query(query)
        assert result.ids is not None and result.similarities is not None
        assert len(result.similarities) == len(result.ids)
        return set(result.ids)

    eq = MetadataFilters(filters=[MetadataFilter(key="kind", value="rare")])
    assert ask(eq) == {"r1", "r2"}
    gt = MetadataFilters(filters=[MetadataFilter(key="n", value=150, operator=FilterOperator.GT)])
    assert ask(gt) == {"r2"}
    in_ = MetadataFilters(
        filters=[MetadataFilter(key="n", value=[3, 100], operator=FilterOperator.IN)]
    )
    assert ask(in_, k=5) == {"n03", "r1"}
    either = MetadataFilters(
        filters=[
            MetadataFilter(key="n", value=200),
            MetadataFilter(key="n", value=7),
        ],
        condition=FilterCondition.OR,
    )
    assert ask(either, k=5) == {"r2", "n07"}
    nested = MetadataFilters(
        filters=[
            MetadataFilter(key="kind", value="rare"),
            MetadataFilters(
                filters=[MetadataFilter(key="n", value=100, operator=FilterOperator.NE)],
            ),
        ]
    )
    assert ask(nested, k=5) == {"r2"}
    assert [n.node_id for n in store.get_nodes(filters=gt)] == ["r2"]
    store.close()


def test_delete_by_ref_doc_nodes_and_filters(tmp_path: Path) -> None:
    store = AgentkitVectorStore(path=tmp_path / "d.db")
    index = _index(store)
    index.delete_ref_doc("doc-policy")
    assert {n.node_id for n in store.get_nodes()} == {"ship-1"}
    store.add(_nodes())
    store.delete_nodes(["policy-1", "missing"])
    assert {n.node_id for n in store.get_nodes()} == {"policy-2", "ship-1"}
    store.delete_nodes(filters=MetadataFilters(filters=[MetadataFilter(key="page", value=2)]))
    assert {n.node_id for n in store.get_nodes()} == {"ship-1"}
    with pytest.raises(InvalidArgument, match="clear"):
        store.delete_nodes()
    assert {n.node_id for n in store.get_nodes()} == {"ship-1"}
    store.close()


def test_clear_empties_only_this_scope(tmp_path: Path) -> None:
    path = tmp_path / "c.db"
    acme = AgentkitVectorStore(path=path, scope=ACME)
    globex = AgentkitVectorStore(path=path, scope=GLOBEX)
    acme.add(_nodes())
    globex.add(_nodes())
    acme.clear()
    assert acme.get_nodes() == []
    assert len(globex.get_nodes()) == 3
    acme.close()
    globex.close()


def test_text_and_hybrid_modes_on_sqlite(tmp_path: Path) -> None:
    store = AgentkitVectorStore(path=tmp_path / "h.db")
    index = _index(store)
    assert _ids(index, "receipt", similarity_top_k=1, vector_store_query_mode="text_search") == [
        "policy-2"
    ]
    hybrid = index.as_retriever(
        similarity_top_k=3, vector_store_query_mode="hybrid", alpha=0.5
    ).retrieve("shipping business days")
    assert hybrid[0].node.node_id == "ship-1"
    assert [h.score for h in hybrid] == sorted((h.score for h in hybrid), reverse=True)
    words_only = index.as_retriever(
        similarity_top_k=3, vector_store_query_mode="hybrid", alpha=0.0
    ).retrieve("receipt")
    assert words_only[0].node.node_id == "policy-2"
    filtered = index.as_retriever(
        similarity_top_k=3,
        vector_store_query_mode="text_search",
        filters=MetadataFilters(filters=[MetadataFilter(key="source", value="shipping.pdf")]),
    ).retrieve("refunds shipping")
    assert [h.node.node_id for h in filtered] == ["ship-1"]
    store.close()


def test_text_mode_without_a_word_index_is_refused() -> None:
    store = AgentkitVectorStore(InMemoryVectorStore(HashingEmbedder(dim=256)))
    store.add(_nodes())
    with pytest.raises(InvalidArgument, match="word index"):
        store.query(VectorStoreQuery(query_str="refunds", similarity_top_k=1, mode="text_search"))
    with pytest.raises(InvalidArgument, match="svm"):
        store.query(VectorStoreQuery(query_str="refunds", similarity_top_k=1, mode="svm"))
    with pytest.raises(InvalidArgument, match="k must be >= 1"):
        store.query(VectorStoreQuery(query_str="refunds", similarity_top_k=0))


def test_tenants_on_one_file_never_meet(tmp_path: Path) -> None:
    path = tmp_path / "t.db"
    acme = AgentkitVectorStore(path=path, scope=ACME)
    globex = acme.bind(GLOBEX)
    acme.add([TextNode(id_="fact-1", text="Acme refunds go to store credit.")])
    globex.add([TextNode(id_="fact-1", text="Globex refunds go back to the card.")])
    acme_index = VectorStoreIndex.from_vector_store(acme)
    globex_index = VectorStoreIndex.from_vector_store(globex)
    got = acme_index.as_retriever(similarity_top_k=5).retrieve("refunds")
    assert [n.node.get_content() for n in got] == ["Acme refunds go to store credit."]
    assert [n.get_content() for n in globex.get_nodes(["fact-1"])] == [
        "Globex refunds go back to the card."
    ]
    other_file_view = AgentkitVectorStore(path=path, scope=GLOBEX)
    other_file_view.delete_nodes(["fact-1"])
    assert globex_index.as_retriever(similarity_top_k=5).retrieve("refunds") == []
    assert [n.node_id for n in acme.get_nodes()] == ["fact-1"]
    assert AgentkitVectorStore(path=path).get_nodes() == []  # the unscoped bucket
    acme.close()
    other_file_view.close()


def test_records_from_other_agentkit_code_come_back_as_text_nodes(tmp_path: Path) -> None:
    path = tmp_path / "plain.db"

    async def write() -> None:
        async with SQLiteVectorStore(path, embedder=HashingEmbedder(dim=256)) as raw:
            chunk = Chunk("c1", "written by the CLI", {"source": "notes.md"})
            await raw.upsert([chunk], scope=Scope())

    asyncio.run(write())
    store = AgentkitVectorStore(path=path)
    [hit] = VectorStoreIndex.from_vector_store(store).as_retriever(similarity_top_k=1).retrieve(
        "CLI"
    )
    assert (hit.node.node_id, hit.node.get_content(), hit.node.metadata) == (
        "c1",
        "written by the CLI",
        {"source": "notes.md"},
    )
    store.close()


def test_a_query_with_only_an_embedding(tmp_path: Path) -> None:
    embedder = HashingEmbedder(dim=256)
    store = AgentkitVectorStore(SQLiteVectorStore(tmp_path / "v.db", embedder=embedder))
    store.add(_nodes())
    vector = asyncio.run(embedder.embed(["shipping business days"]))[0].tolist()
    result = store.query(VectorStoreQuery(query_embedding=vector, similarity_top_k=1))
    assert result.ids == ["ship-1"]


def test_llamaindex_embed_model_is_recorded_and_enforced(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    store = AgentkitVectorStore(path=path, embed_model=MockEmbedding(embed_dim=8))
    store.add(_nodes())
    assert isinstance(store.client.embedder, LlamaIndexEmbedder)  # type: ignore[attr-defined]
    store.close()
    other = AgentkitVectorStore(path=path)  # Settings: the hashing embedder, dim 256
    with pytest.raises(StoreError, match="refusing to mix"):
        other.add(_nodes())
    other.close()


def test_store_and_embed_model_together_are_refused() -> None:
    with pytest.raises(InvalidArgument, match="own embedder"):
        AgentkitVectorStore(InMemoryVectorStore(), embed_model=MockEmbedding(embed_dim=4))


async def test_async_twins(tmp_path: Path) -> None:
    store = AgentkitVectorStore(path=tmp_path / "a.db", scope=ACME)
    assert await store.async_add(_nodes()) == ["policy-1", "policy-2", "ship-1"]
    result = await store.aquery(VectorStoreQuery(query_str="shipping", similarity_top_k=1))
    assert result.ids == ["ship-1"]
    index = VectorStoreIndex.from_vector_store(store)
    hits = await index.as_retriever(similarity_top_k=1).aretrieve("receipt")
    assert [h.node.node_id for h in hits] == ["policy-2"]
    await store.adelete("doc-ship")
    assert {n.node_id for n in await store.aget_nodes()} == {"policy-1", "policy-2"}
    await store.adelete_nodes(["policy-1"])
    assert [n.node_id for n in await store.aget_nodes(["policy-1", "policy-2"])] == ["policy-2"]
    await store.aclear()
    assert await store.aget_nodes() == []
    await store.aclose()


def test_documents_through_the_index_keep_their_doc_ids(tmp_path: Path) -> None:
    store = AgentkitVectorStore(path=tmp_path / "docs.db")
    context = StorageContext.from_defaults(vector_store=store)
    docs = [
        Document(text="Refunds are accepted within 30 days.", doc_id="doc-1"),
        Document(text="Shipping takes five days.", doc_id="doc-2"),
    ]
    index = VectorStoreIndex.from_documents(docs, storage_context=context)
    assert {n.ref_doc_id for n in store.get_nodes()} == {"doc-1", "doc-2"}
    index.delete_ref_doc("doc-2")
    assert {n.ref_doc_id for n in store.get_nodes()} == {"doc-1"}
    store.close()


def test_no_metadata_filter_reaches_another_scope(tmp_path: Path) -> None:
    """NE, NIN, NOT and OR groups and keys named like the scope: a tenant's query, and
    its delete by filter, never reach another scope's nodes on the same file."""
    path = tmp_path / "spoof.db"
    acme = AgentkitVectorStore(path=path, scope=ACME)
    globex = AgentkitVectorStore(path=path, scope=GLOBEX)
    acme.add([TextNode(id_="a", text="acme refunds", metadata={"t": 1})])
    globex.add([TextNode(id_="g", text="globex refunds", metadata={"t": 1, "org_id": "acme"})])
    spoofs = [
        MetadataFilters(filters=[MetadataFilter(key="org_id", value="x",
                                                operator=FilterOperator.NE)]),
        MetadataFilters(filters=[MetadataFilter(key="org_id", value="acme")],
                        condition=FilterCondition.NOT),
        MetadataFilters(filters=[
            MetadataFilter(key="t", value=1),
            MetadataFilter(key="domain_id", value=["support"], operator=FilterOperator.NIN),
        ], condition=FilterCondition.OR),
    ]
    for filters in spoofs:
        result = acme.query(VectorStoreQuery(query_str="refunds", similarity_top_k=5,
                                             filters=filters))
        assert set(result.ids or []) <= {"a"}, filters
        acme.delete_nodes(filters=filters)
        assert [n.node_id for n in globex.get_nodes()] == ["g"], filters
    acme.close()
    globex.close()
