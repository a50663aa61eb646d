"""Reading a persisted LlamaIndex storage folder (``storage_context.persist(persist_dir)``).

The nodes come from the docstore, their vectors from the default simple vector store,
through LlamaIndex's own ``StorageContext.from_defaults(persist_dir=...)``. Which nodes
belong to a vector index is read from the index store; a folder without one yields
every node of its docstore. LlamaIndex does not persist the embedding model, so the
vectors are reused only when the caller declares which model made them.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from agentkit.kernel.errors import InvalidArgument
from agentkit.migrate._need import need
from agentkit.migrate._source import PAGE, Record, Source

NO_MODEL = "LlamaIndex does not persist its embedding model"


def read_llamaindex(path: str | Path, *, page: int = PAGE) -> Source:
    """The nodes of every vector index persisted in ``path``, with their vectors."""
    core = need("llama_index.core", "llama-index-core", "a LlamaIndex storage folder")
    folder = Path(path)
    try:
        context = core.StorageContext.from_defaults(persist_dir=str(folder))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise InvalidArgument(
            f"{str(folder)!r} is not a readable LlamaIndex storage folder "
            f"({type(exc).__name__}: {exc})"
        ) from None
    return storage_source(context, f"{str(folder)!r}", page=page)


def storage_source(context: Any, location: str, *, page: int = PAGE) -> Source:
    """A Source over a StorageContext (persisted, or an index's own in Python)."""
    ids = _node_ids(context)
    if not ids:
        raise InvalidArgument(
            f"the LlamaIndex storage at {location} holds no nodes in its docstore; an index "
            "built on an external vector store keeps them there: import that store instead"
        )
    return Source("llamaindex", location, _pages(context, ids, page), total=len(ids),
                  note=NO_MODEL)


def _node_ids(context: Any) -> list[str]:
    """Node ids of the vector indexes (in their order), else every docstore entry."""
    out: dict[str, None] = {}
    try:
        structs = list(context.index_store.index_structs())
    except (OSError, ValueError, KeyError):
        structs = []
    for struct in structs:
        nodes = getattr(struct, "nodes_dict", None)
        if isinstance(nodes, dict):
            out.update(dict.fromkeys(str(n) for n in nodes.values()))
    if not out:
        out.update(dict.fromkeys(str(k) for k in context.docstore.docs))
    return list(out)


def _pages(context: Any, ids: list[str], page: int) -> Iterator[list[Record]]:
    from llama_index.core.schema import MetadataMode

    docstore = context.docstore
    vectors = context.vector_store
    for start in range(0, len(ids), page):
        out: list[Record] = []
        for node_id in ids[start : start + page]:
            node = docstore.get_node(node_id, raise_error=False)
            if node is None:
                out.append(Record(node_id, None, {}))
                continue
            out.append(Record(
                node_id,
                node.get_content(metadata_mode=MetadataMode.NONE),
                dict(node.metadata or {}),
                _vector(vectors, node_id, node),
            ))
        yield out


def _vector(vectors: Any, node_id: str, node: Any) -> Any:
    try:
        return vectors.get(node_id)
    except (KeyError, NotImplementedError, AttributeError):
        return getattr(node, "embedding", None)
