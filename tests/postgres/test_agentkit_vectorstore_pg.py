"""Both bridges' AgentkitVectorStore over PostgresVectorStore (async: its pool is loop-bound)."""

from __future__ import annotations

from agentkit_langchain import AgentkitVectorStore as LangChainStore
from agentkit_llamaindex import AgentkitVectorStore as LlamaIndexStore
from llama_index.core.schema import NodeRelationship, RelatedNodeInfo, TextNode
from llama_index.core.vector_stores.types import (
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
    VectorStoreQuery,
)

from agentkit.kernel import Scope
from agentkit.vector.postgres import PostgresVectorStore

ACME = Scope("acme", "support")
GLOBEX = Scope("globex", "support")


async def test_langchain_store_on_postgres(store: PostgresVectorStore) -> None:
    acme = LangChainStore(store, scope=ACME)
    globex = acme.bind(GLOBEX)
    await acme.aadd_texts(
        ["refunds take five days", "shipping takes two days", "refund receipts are kept"],
        [{"team": "billing"}, {"team": "logistics"}, {"team": "billing"}],
        ids=["r", "s", "k"],
    )
    await globex.aadd_texts(["globex refunds are instant"], ids=["r"])
    hits = await acme.asimilarity_search("refunds", k=3, filter={"team": "billing"})
    assert {d.id for d in hits} == {"r", "k"}
    assert [d.page_content for d in await globex.aget_by_ids(["r"])] == [
        "globex refunds are instant"
    ]
    mmr = await acme.amax_marginal_relevance_search("refunds", k=2, fetch_k=3)
    assert len(mmr) == 2
    await acme.adelete(["r"])
    assert await acme.aget_by_ids(["r"]) == []
    assert len(await globex.aget_by_ids(["r"])) == 1


async def test_llamaindex_store_on_postgres(store: PostgresVectorStore) -> None:
    acme = LlamaIndexStore(store, scope=ACME)
    globex = acme.bind(GLOBEX)
    nodes = [
        TextNode(
            id_=f"n{i}",
            text=text,
            metadata={"page": i},
            relationships={NodeRelationship.SOURCE: RelatedNodeInfo(node_id=f"doc-{i % 2}")},
        )
        for i, text in enumerate(
            ["refunds within thirty days", "refund receipts needed", "shipping in five days"]
        )
    ]
    await acme.async_add(nodes)
    await globex.async_add([TextNode(id_="n0", text="globex refunds are instant")])
    result = await acme.aquery(VectorStoreQuery(query_str="refund receipts", similarity_top_k=1))
    assert result.ids == ["n1"]
    words = await acme.aquery(
        VectorStoreQuery(query_str="shipping", similarity_top_k=3, mode="text_search")
    )
    assert words.ids == ["n2"]
    hybrid = await acme.aquery(
        VectorStoreQuery(query_str="refund receipts", similarity_top_k=2, mode="hybrid")
    )
    assert hybrid.ids is not None and hybrid.ids[0] == "n1"
    late = MetadataFilters(
        filters=[MetadataFilter(key="page", value=1, operator=FilterOperator.GT)]
    )
    assert [n.node_id for n in await acme.aget_nodes(filters=late)] == ["n2"]
    await acme.adelete("doc-0")  # n0 and n2
    assert [n.node_id for n in await acme.aget_nodes()] == ["n1"]
    assert [n.get_content() for n in await globex.aget_nodes()] == ["globex refunds are instant"]
    await acme.aclear()
    assert await acme.aget_nodes() == []
    assert len(await globex.aget_nodes()) == 1
