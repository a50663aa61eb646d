"""Chroma's short answers, made exact, for the LlamaIndex bridge.

Chroma's HNSW walk may return fewer nodes than asked while more match (many identical
vectors), filtered or not, and a wider ask walks the same graph; a caller widening
until "fewer than asked" would stop early. So on a short answer the matching nodes are
read by their metadata alone (``get_nodes`` with the very same filters), and when there
are more than came back they are ranked exactly (``agentkit.interop.nearest``) in the
collection's distance space, their vectors read through the chromadb collection that
``ChromaVectorStore.client`` returns. The result is what ``ChromaVectorStore.query``
returns, with its similarity (``exp(-distance)``).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

from llama_index.core.schema import BaseNode
from llama_index.core.vector_stores.types import (
    BasePydanticVectorStore,
    MetadataFilters,
    VectorStoreQueryResult,
)

from agentkit.interop import chroma_space, nearest

# Vectors read per collection ``get`` while ranking.
_PAGE = 1024


def is_chroma(store: BasePydanticVectorStore) -> bool:
    """True for LlamaIndex's ``ChromaVectorStore`` (or a subclass), by class name so
    the Chroma integration stays optional."""
    return any(cls.__name__ == "ChromaVectorStore" for cls in type(store).__mro__)


def exact_query(
    store: BasePydanticVectorStore,
    embedding: list[float],
    n: int,
    filters: MetadataFilters | None,
    got: int,
) -> VectorStoreQueryResult | None:
    """The ``n`` nodes matching ``filters`` nearest ``embedding``, ranked exactly.

    None when the store's answer of ``got`` nodes already held every match (it was
    the end, not a miss). Blocking: call it from a worker thread.
    """
    matching = store.get_nodes(None, filters=filters)
    if len(matching) <= got:
        return None
    by_id = {node.node_id: node for node in matching}
    ids = list(by_id)
    collection: Any = store.client

    def pages() -> Iterator[tuple[list[str], Any]]:
        for start in range(0, len(ids), _PAGE):
            page = collection.get(ids=ids[start : start + _PAGE], include=["embeddings"])
            yield list(page["ids"]), page["embeddings"]

    best = nearest(embedding, pages(), n, chroma_space(collection))
    nodes: list[BaseNode] = [by_id[rid] for rid, _ in best]
    return VectorStoreQueryResult(
        nodes=nodes,
        similarities=[math.exp(-distance) for _, distance in best],
        ids=[rid for rid, _ in best],
    )
