"""MemoryItem <-> Document: the only place the bridge translates items.

``metadata["source"]`` already means the file or URL a document came from (loaders
set it, citation prompts read it), so the backend name travels under a prefixed key
instead. Every bridge-owned key starts with ``agentkit_``; an item that already
carries one is refused, because overwriting it would break the round trip silently.
"""

from __future__ import annotations

from langchain_core.documents import Document

from agentkit.interop import RESERVED_PREFIX, check_unreserved, known_unreserved, usable_score
from agentkit.kernel.errors import InvalidArgument, InvalidArgumentType
from agentkit.state.memory import MemoryItem

SOURCE_KEY = "agentkit_source"
SCORE_KEY = "agentkit_score"
ID_KEY = "agentkit_id"
DEFAULT_SOURCE = "langchain"


def to_document(item: MemoryItem, *, include_score: bool = True) -> Document:
    """A fresh Document for ``item``; ``from_document`` gives the same item back.

    The id is copied into ``agentkit_id`` as well as ``Document.id`` because many
    compressors and filters rebuild documents and drop ``Document.id``.
    ``include_score=False`` leaves ``agentkit_score`` out (see ``to_documents``).

    Args:
        item: The item to carry.
        include_score: Whether the score travels as ``agentkit_score``.

    Returns:
        A new Document: ``page_content`` the item's content, ``id`` its id, the item's
        metadata plus the ``agentkit_*`` stamps.
    """
    return to_documents([item], include_score=include_score)[0]


def to_documents(items: list[MemoryItem], *, include_score: bool = True) -> list[Document]:
    """``to_document`` for a whole result.

    ``include_score=False`` drops the score from the documents: wrappers that dedupe
    by document equality (``MultiQueryRetriever``) would otherwise see one record
    twice whenever two queries scored it differently. The round trip then gives the
    item back with ``score=None``; everything else is kept.
    """
    out: list[Document] = []
    append = out.append
    for item in items:
        if not isinstance(item, MemoryItem):
            raise InvalidArgumentType(f"item must be a MemoryItem, got {type(item).__name__}")
        given = item.metadata
        if not known_unreserved(given):
            check_unreserved(given)
        # A plain dict, cloned whole: dict(given) would merge key by key from the subclass.
        metadata = given.copy()
        metadata[SOURCE_KEY] = item.source
        score = item.score
        if include_score and score is not None:
            metadata[SCORE_KEY] = score
        doc_id = item.id
        if doc_id is not None:
            metadata[ID_KEY] = doc_id
        append(Document(page_content=item.content, metadata=metadata, id=doc_id))
    return out


def from_document(doc: Document, *, source: str | None = None) -> MemoryItem:
    """The item a Document stands for.

    The bridge's own stamps win (``agentkit_source`` over ``source=``, ``Document.id``
    over ``agentkit_id``, ``agentkit_score`` over any other score) and are removed.
    A document that never passed through agentkit is scored by its
    ``relevance_score``, else its ``score`` metadata, else ``None``; those keys stay.

    Args:
        doc: Any LangChain Document.
        source: The source name for a document without an ``agentkit_source`` stamp;
            ``None`` means ``"langchain"``.

    Returns:
        A new MemoryItem; for a document made by ``to_document``, the original item.

    Raises:
        InvalidArgument: An empty or non-str ``source``.
    """
    if not isinstance(doc, Document):
        raise InvalidArgumentType(f"doc must be a Document, got {type(doc).__name__}")
    if source is not None and (not isinstance(source, str) or not source):
        raise InvalidArgument(f"source must be a non-empty str or None, got {source!r}")
    raw = doc.metadata
    metadata = {k: v for k, v in raw.items() if not k.startswith(RESERVED_PREFIX)}
    doc_id = doc.id
    if len(metadata) == len(raw):
        # Never passed through agentkit: the framework's own score, keys kept.
        score = usable_score(raw.get("relevance_score"))
        if score is None:
            score = usable_score(raw.get("score"))
        return MemoryItem(doc.page_content, source or DEFAULT_SOURCE, score, metadata, id=doc_id)
    stamped = raw.get(SOURCE_KEY)
    name = stamped if isinstance(stamped, str) and stamped else (source or DEFAULT_SOURCE)
    if doc_id is None:
        carried = raw.get(ID_KEY)
        doc_id = carried if isinstance(carried, str) else None
    return MemoryItem(doc.page_content, name, usable_score(raw.get(SCORE_KEY)), metadata, id=doc_id)
