"""Which LlamaIndex vector stores can only be queried on their async path.

A store built with an async client alone (``QdrantVectorStore(aclient=...)``) has no
sync client: its ``query`` fails (``'NoneType' object has no attribute
'query_points'``), its ``aquery`` works. Told by public API only: ``client``, the
abstract property every ``BasePydanticVectorStore`` exposes, is None, and the store's
class has an ``aquery`` of its own (the base one would just run ``query``).
"""

from __future__ import annotations

from llama_index.core.vector_stores.types import BasePydanticVectorStore

__all__ = ["async_only"]


def async_only(store: BasePydanticVectorStore) -> bool:
    """Whether ``store`` has no sync client but an async query of its own."""
    try:
        client = store.client
    except Exception:  # a store whose client property itself fails has no sync path either
        client = None
    return client is None and type(store).aquery is not BasePydanticVectorStore.aquery
