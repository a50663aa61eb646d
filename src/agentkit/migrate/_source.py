"""What every reader hands to ``copy``: records in pages, and what the source says about
the model that made its vectors."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sized
from dataclasses import dataclass, field
from typing import Any

from agentkit.kernel.errors import InvalidArgument, InvalidArgumentType

PAGE = 1000
HASHING_ALIASES = frozenset({"hashing", "hashingembedder"})


@dataclass(frozen=True, slots=True)
class Record:
    """One stored item of a foreign store: its own id, text, metadata, maybe its vector.

    ``text`` may be None (a Chroma record without a document): it is skipped, never
    written empty. ``vector`` is whatever the source holds (list, numpy row) or None.
    """

    id: Any
    text: str | None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    vector: Any = None


@dataclass(slots=True)
class Source:
    """Pages of records plus what the source knows about itself.

    ``embedder`` is the model name the source records for its vectors (None when it
    records none, which is the usual case: LlamaIndex and FAISS do not persist it),
    ``total`` how many records to expect (for the progress bar), ``note`` why the
    embedder is unknown, shown when vectors are re-embedded. ``close`` releases files.
    """

    kind: str
    location: str
    pages: Iterable[list[Record]]
    total: int | None = None
    embedder: str | None = None
    note: str = ""
    close: Callable[[], None] | None = None


def records_source(
    records: Iterable[Record], *, kind: str = "records", location: str = "python",
    embedder: str | None = None, total: int | None = None, page: int = PAGE,
) -> Source:
    """A Source over any iterable of Records (the generic path, and the bridges' one)."""
    if isinstance(records, (str, bytes, Mapping)) or not isinstance(records, Iterable):
        raise InvalidArgumentType(
            f"records must be an iterable of Record, got {type(records).__name__}"
        )
    if total is None and isinstance(records, Sized):
        total = len(records)
    return Source(kind, location, paged(records, page), total=total, embedder=embedder)


def paged(records: Iterable[Record], size: int = PAGE) -> Iterator[list[Record]]:
    page: list[Record] = []
    for record in records:
        if not isinstance(record, Record):
            raise InvalidArgumentType(
                f"records must hold Record objects, got {type(record).__name__}"
            )
        page.append(record)
        if len(page) >= size:
            yield page
            page = []
    if page:
        yield page


def canonical_embedder(name: str) -> str:
    """One spelling per model, the one stores record (see ``embedder_name``).

    ``hashing`` names agentkit's HashingEmbedder; every alias of the bundled MiniLM is
    its full name; anything else is kept as given.
    """
    from agentkit.vector._embedder_id import canonical_name
    from agentkit.vector.hashing import HashingEmbedder
    from agentkit.vector.sqlite import embedder_name

    if not isinstance(name, str) or not name.strip():
        raise InvalidArgument(f"an embedder name must be a non-empty str, got {name!r}")
    text = name.strip()
    hashing = embedder_name(HashingEmbedder())
    if text.lower() in HASHING_ALIASES or text == hashing:
        return hashing
    return canonical_name(text)
