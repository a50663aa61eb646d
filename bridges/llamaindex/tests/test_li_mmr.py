"""AgentkitVectorStore answers LlamaIndex's ``mmr`` query mode with agentkit's one MMR.

Through LlamaIndex's own retriever: ``VectorStoreIndex.from_vector_store(...)
.as_retriever(vector_store_query_mode="mmr")``, over agentkit's durable SQLite store.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from agentkit_llamaindex import AgentkitVectorStore
from llama_index.core import VectorStoreIndex
from llama_index.core.schema import NodeWithScore, TextNode
from llama_index.core.vector_stores.types import (
    MetadataFilter,
    MetadataFilters,
    VectorStoreQuery,
    VectorStoreQueryMode,
)

from agentkit.kernel import Scope
from agentkit.kernel.errors import InvalidArgument
from agentkit.vector import HashingEmbedder, SQLiteVectorStore

ACME = Scope("acme", "support")
QUERY = "apple pie recipe"


def _store(path: Path) -> AgentkitVectorStore:
    store = AgentkitVectorStore(SQLiteVectorStore(path, embedder=HashingEmbedder(dim=256)),
                                scope=ACME)
    store.add(
        [
            TextNode(id_="a", text="apple pie recipe", metadata={"shelf": "baking"}),
            TextNode(id_="a2", text="apple pie recipe", metadata={"shelf": "baking"}),
            TextNode(id_="b", text="apple crumble recipe", metadata={"shelf": "baking"}),
            TextNode(id_="c", text="apple pie recipe", metadata={"shelf": "archive"}),
        ]
    )
    return store


def _ids(nodes: list[NodeWithScore]) -> list[str]:
    return [n.node.node_id for n in nodes]


def test_the_mmr_retriever_trades_a_copy_for_variety(tmp_path: Path) -> None:
    store = _store(tmp_path / "mmr.db")
    index = VectorStoreIndex.from_vector_store(store)
    plain = _ids(index.as_retriever(similarity_top_k=2).retrieve(QUERY))
    assert set(plain) <= {"a", "a2", "c"}  # the set-up: copies crowd the plain top 2

    mmr = index.as_retriever(similarity_top_k=2, vector_store_query_mode="mmr")
    found = _ids(mmr.retrieve(QUERY))
    assert found[0] in {"a", "a2", "c"} and found[1] == "b"

    # mmr_threshold=1 is relevance alone, as in LlamaIndex: the copies come back.
    relevance_only = index.as_retriever(
        similarity_top_k=2,
        vector_store_query_mode="mmr",
        vector_store_kwargs={"mmr_threshold": 1.0},
    )
    assert set(_ids(relevance_only.retrieve(QUERY))) <= {"a", "a2", "c"}
    store.close()


async def test_mmr_honours_filters_and_scope(tmp_path: Path) -> None:
    store = _store(tmp_path / "f.db")
    archive = MetadataFilters(filters=[MetadataFilter(key="shelf", value="archive")])
    index = VectorStoreIndex.from_vector_store(store)
    retriever = index.as_retriever(
        similarity_top_k=3, vector_store_query_mode="mmr", filters=archive
    )
    assert _ids(await retriever.aretrieve(QUERY)) == ["c"]
    other = VectorStoreIndex.from_vector_store(store.bind(Scope("globex", "support")))
    assert other.as_retriever(vector_store_query_mode="mmr").retrieve(QUERY) == []
    store.close()


def test_a_query_embedding_alone_and_bad_parameters(tmp_path: Path) -> None:
    store = _store(tmp_path / "q.db")
    [vector] = HashingEmbedder(dim=256).embed_sync([QUERY]).tolist()
    by_vector = VectorStoreQuery(
        query_embedding=vector, similarity_top_k=2, mode=VectorStoreQueryMode.MMR
    )
    result = store.query(by_vector)
    assert result.ids is not None and result.ids[1] == "b"
    assert result.similarities is not None and len(result.similarities) == 2
    with pytest.raises(InvalidArgument, match="mmr_threshold"):
        store.query(by_vector, mmr_threshold=1.5)
    with pytest.raises(InvalidArgument, match="mmr_prefetch"):
        store.query(by_vector, mmr_prefetch_k=4, mmr_prefetch_factor=2.0)
    # A prefetch of 2 leaves MMR nothing to choose from: the plain top 2 come back.
    narrow = store.query(by_vector, mmr_prefetch_k=2)
    assert narrow.ids is not None and "b" not in narrow.ids
    store.close()
