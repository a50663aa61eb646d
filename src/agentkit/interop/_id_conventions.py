"""Id conventions: how each kind of store keeps record ids, apart from how it filters.

What a port must know about a store's ids - they must be UUIDs (Qdrant), adding a
known id does not replace the record (FAISS refuses it), results carry the id in a
metadata key rather than the record's own id field (langchain-qdrant's ``_id``,
``SKLearnVectorStore``'s ``id``), the store adds keys of its own to what it returns -
is a fact about the store, not about the filter it is asked with. So it is looked up
here, by the store's class, whatever ``filter_style=`` a port is given: overriding the
filter never loses it. Both bridges look their stores up here.

A store nobody knows gets ``SELF_DESCRIBING``: it may drop the record id, or add keys,
so every record the port writes carries what the port needs to read it back (the
chunk id under ``CHUNK_KEY``, the user's metadata keys under ``KEYS_KEY``; see
``agentkit.interop.record_stamps``), and a write replaces by deleting first.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = [
    "ID_CONVENTIONS",
    "SELF_DESCRIBING",
    "IdConvention",
    "id_convention",
]


@dataclass(frozen=True, slots=True)
class IdConvention:
    """How one kind of store keeps record ids.

    ``uuid``: record ids must be UUIDs. ``replaces``: adding a record under an id the
    store holds replaces it; when False the port deletes first, and a store that
    cannot delete is refused such a write. ``id_key``: results carry the record id in
    this metadata key instead of their own id field. ``added_keys``: metadata keys
    the store adds to every record it returns (never the user's). ``self_describing``:
    the store is unknown, so records carry their chunk id and the user's keys.
    """

    name: str
    uuid: bool = False
    replaces: bool = True
    id_key: str | None = None
    added_keys: frozenset[str] = field(default_factory=frozenset)
    self_describing: bool = False


SELF_DESCRIBING = IdConvention("unknown", replaces=False, self_describing=True)
"""The convention of a store nobody knows (see the module docstring)."""

ID_CONVENTIONS: dict[tuple[str, str], IdConvention] = {
    # LangChain
    ("langchain_core", "InMemoryVectorStore"): IdConvention("in_memory"),
    ("langchain_chroma", "Chroma"): IdConvention("chroma"),
    ("langchain_qdrant", "QdrantVectorStore"): IdConvention(
        "qdrant", uuid=True, id_key="_id", added_keys=frozenset({"_id", "_collection_name"})
    ),
    ("langchain_community", "FAISS"): IdConvention("faiss", replaces=False),
    ("langchain_postgres", "PGVector"): IdConvention("pgvector"),
    # Its search puts the record id into the metadata it returns, as "id", and neither
    # returns Document.id nor implements delete or get_by_ids.
    ("langchain_community", "SKLearnVectorStore"): IdConvention(
        "sklearn", replaces=False, id_key="id", added_keys=frozenset({"id"})
    ),
    # LlamaIndex (its nodes always carry their ids; only the id space differs)
    ("llama_index", "QdrantVectorStore"): IdConvention("qdrant", uuid=True),
}
"""Known conventions by (top-level package, class name), matched along the store's
MRO, so a subclass of a known store keeps its convention."""


def id_convention(store: object, default: IdConvention = SELF_DESCRIBING) -> IdConvention:
    """The id convention of ``store``'s class, else ``default``.

    The default differs by framework: a LangChain ``Document.id`` is optional, so an
    unknown LangChain store is ``SELF_DESCRIBING``; a LlamaIndex node always has its
    id, so the LlamaIndex port passes a plain convention.
    """
    for cls in type(store).__mro__:
        package = cls.__module__.partition(".")[0]
        found = ID_CONVENTIONS.get((package, cls.__name__))
        if found is not None:
            return found
    return default
