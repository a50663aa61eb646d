"""LangChain and LlamaIndex vector stores already open in Python, as Sources.

Recognised by what they expose, so neither framework is imported to tell them apart.
The source's embedder counts as recorded only when it provably is an agentkit embedder
(the bridges' ``AgentkitEmbeddings`` / ``AgentkitEmbedding`` wrapping one): a model name
on some other embeddings class says nothing certain about the vectors it made.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from agentkit.kernel.errors import InvalidArgumentType
from agentkit.migrate._source import PAGE, Record, Source, paged


def from_langchain(store: Any, *, page: int = PAGE) -> Source:
    """LangChain's FAISS, InMemoryVectorStore or Chroma object as a Source."""
    name = type(store).__name__
    embedder = _agentkit_embedder(getattr(store, "embeddings", None))
    if all(hasattr(store, a) for a in ("index", "docstore", "index_to_docstore_id")):
        from agentkit.migrate._faiss import faiss_source

        source = faiss_source(store, name, page=page)
    elif isinstance(getattr(store, "store", None), dict):
        source = Source("langchain", name, paged(_in_memory(store.store), page),
                        total=len(store.store))
    elif all(callable(getattr(store, a, None)) for a in ("get", "delete_collection")):
        source = Source("langchain", name, _chroma_pages(store, page))
    else:
        raise InvalidArgumentType(
            f"cannot read records out of a LangChain {name}: import reads FAISS, "
            "InMemoryVectorStore and Chroma objects (or pass Records to copy())"
        )
    if embedder is not None:
        source.embedder, source.note = embedder, ""
    else:
        source.note = source.note or f"{name} does not say which model made its vectors"
    return source


def from_llamaindex(obj: Any, *, page: int = PAGE) -> Source:
    """A VectorStoreIndex, a StorageContext, or a text-storing LlamaIndex vector store."""
    from agentkit.migrate._llamaindex import NO_MODEL, storage_source

    name = type(obj).__name__
    context = getattr(obj, "storage_context", None)
    if context is None and all(hasattr(obj, a) for a in ("docstore", "index_store")):
        context = obj
    if context is not None and not getattr(context.vector_store, "stores_text", False):
        return storage_source(context, name, page=page)
    store = getattr(context, "vector_store", None) if context is not None else obj
    if store is not None and getattr(store, "stores_text", False) and callable(
        getattr(store, "get_nodes", None)
    ):
        nodes = store.get_nodes(None)  # None: every node (some stores require the argument)
        return Source("llamaindex", type(store).__name__, paged(_nodes(nodes), page),
                      total=len(nodes), note=NO_MODEL)
    raise InvalidArgumentType(
        f"cannot read records out of a LlamaIndex {name}: pass a VectorStoreIndex, its "
        "StorageContext, or a vector store that stores text and has get_nodes()"
    )


def _agentkit_embedder(embeddings: Any) -> str | None:
    from agentkit.vector.port import Embedder
    from agentkit.vector.sqlite import embedder_name

    if type(embeddings).__name__ not in ("AgentkitEmbeddings", "AgentkitEmbedding"):
        return None
    inner = getattr(embeddings, "embedder", None)
    return embedder_name(inner) if isinstance(inner, Embedder) else None


def _in_memory(store: dict[str, Any]) -> Iterator[Record]:
    for key, entry in store.items():
        yield Record(entry.get("id", key), entry.get("text"), dict(entry.get("metadata") or {}),
                     entry.get("vector"))


def _nodes(nodes: list[Any]) -> Iterator[Record]:
    from llama_index.core.schema import MetadataMode

    for node in nodes:
        yield Record(node.node_id, node.get_content(metadata_mode=MetadataMode.NONE),
                     dict(node.metadata or {}), getattr(node, "embedding", None))


def _chroma_pages(store: Any, page: int) -> Iterator[list[Record]]:
    offset = 0
    while True:
        got = store.get(limit=page, offset=offset,
                        include=["documents", "metadatas", "embeddings"])
        ids = list(got.get("ids") or [])
        if not ids:
            return
        docs, metas, vectors = got.get("documents"), got.get("metadatas"), got.get("embeddings")
        yield [
            Record(rid, None if docs is None else docs[i],
                   dict((metas[i] if metas is not None else None) or {}),
                   None if vectors is None else vectors[i])
            for i, rid in enumerate(ids)
        ]
        offset += len(ids)
