"""The vector seam: Chunk, VectorPort, Embedder, and the one ``where`` rule."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from agentkit.kernel.ctx import Scope
from agentkit.kernel.errors import InvalidArgument, InvalidArgumentType
from agentkit.kernel.validate import lone_surrogate, unicode_problem
from agentkit.kernel.where import And, Field, Not, Or, Where, parse_where


@dataclass(frozen=True, slots=True)
class Chunk:
    """One stored record: an id unique within its scope, its text, its tags.

    Args:
        id: The record's key inside its scope; upserting the same id replaces it.
        text: What is embedded, searched and returned.
        metadata: Tags that ``where`` filters match against.

    Raises:
        InvalidArgumentType: An empty or non-str id, a non-str text or a non-mapping
            metadata.
    """

    id: str
    text: str
    metadata: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.id, str) or not self.id:
            raise InvalidArgumentType(f"Chunk.id must be a non-empty str, got {self.id!r}")
        if not isinstance(self.text, str):
            raise InvalidArgumentType(
                f"Chunk.text must be a str, got {type(self.text).__name__}"
            )
        if not isinstance(self.metadata, Mapping):
            raise InvalidArgumentType(
                f"Chunk.metadata must be a mapping, got {type(self.metadata).__name__}"
            )


@runtime_checkable
class VectorPort(Protocol):
    """Text in, scored chunks out; the store embeds. Every call is bucketed by scope.

    The store embeds (it owns the embedder), so a query is always compared with
    records embedded by the same model.
    """

    async def upsert(self, chunks: Sequence[Chunk], *, scope: Scope) -> None:
        """Store ``chunks`` in ``scope``'s bucket, replacing any with the same id."""
        ...

    async def search(
        self,
        query: str,
        *,
        k: int,
        scope: Scope,
        where: Mapping[str, Any] | None = None,
    ) -> list[tuple[float, Chunk]]:
        """The ``k`` chunks of ``scope`` nearest ``query``, as ``(score, chunk)``, best first.

        Args:
            query: The text to embed and compare.
            k: How many chunks at most.
            scope: The only bucket searched.
            where: Metadata filter in the ``where`` language (``matches_where``'s rule);
                ``None`` filters nothing.
        """
        ...

    async def delete(self, ids: Sequence[str], *, scope: Scope) -> int | None:
        """Remove ``ids`` from the bucket; unknown ids are ignored. Returns how many went
        (agentkit's stores always know; a port that cannot tell returns None)."""
        ...


@runtime_checkable
class ForgettingPort(Protocol):
    """A store that can forget by filter and by scope, and list a scope's records.

    Every agentkit store is one. ``delete_where`` takes search's ``where`` (an empty one
    is refused: ``delete_scope`` says so by name); ``scan`` pages by ascending id,
    ``after`` being the last id of the previous page.
    """

    async def delete_where(self, where: Mapping[str, Any], *, scope: Scope) -> int:
        """Remove every chunk of ``scope`` that ``where`` matches; returns how many went."""
        ...

    async def delete_scope(self, *, scope: Scope) -> int:
        """Remove every chunk of ``scope``; returns how many went."""
        ...

    async def scan(
        self,
        *,
        scope: Scope,
        where: Mapping[str, Any] | None = None,
        after: str | None = None,
        limit: int = 1000,
    ) -> list[Chunk]:
        """One page of ``scope``'s chunks in ascending id order, those after ``after``."""
        ...


@runtime_checkable
class Embedder(Protocol):
    """Texts to L2-normalised float32 rows of width ``dim``.

    Unit rows make a dot product the cosine, which is what every store computes.

    Attributes:
        dim: The width of every row.
    """

    dim: int

    async def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """One row per text, in order: shape ``(len(texts), dim)``."""
        ...


def matches_where(
    metadata: Mapping[str, Any], where: Mapping[str, Any] | Where | None
) -> bool:
    """The ``where`` rule every store shares: the reference evaluation of the filter
    language (``agentkit.kernel.where``) on one record's tags.

    A plain value is equality, a list/tuple/set any-of, an operator dict its operators;
    a missing key matches only ``$exists: False``, ``$ne``, ``$nin`` and ``$not``.
    ``True`` and ``1`` are told apart, though Python calls them equal. Pass a parsed
    ``Where`` when testing many records, so the filter is parsed once.

    Args:
        metadata: A record's tags.
        where: The filter, or its parsed form; ``None`` or empty matches everything.

    Returns:
        Whether the record passes.

    Raises:
        InvalidFilter: A malformed filter.
    """
    if not where:
        return True
    tree = where if isinstance(where, (Field, And, Or, Not)) else parse_where(where)
    return tree is None or tree.matches(metadata)


# A lexical query is scored on at most this many distinct words, its first ones. Ranking
# work grows with every distinct word, so without a cap one pasted book occupies a store
# for minutes; a question, or a paragraph used as a query, stays far below it.
MAX_QUERY_TERMS = 256


@runtime_checkable
class LexicalPort(Protocol):
    """A store that also ranks by words (BM25-style), bucketed by scope like search."""

    async def lexical_search(
        self,
        query: str,
        *,
        k: int,
        scope: Scope,
        where: Mapping[str, Any] | None = None,
    ) -> list[tuple[float, Chunk]]:
        """Best first; words past the first ``MAX_QUERY_TERMS`` distinct ones are ignored."""
        ...


def check_chunks(chunks: object) -> list[Chunk]:
    """Materialise an upsert batch, refusing it whole if any element cannot be stored.

    Every store's write path starts here, so what no store can hold (a non-Chunk, text
    that is not valid Unicode) is refused the same way everywhere, before anything lands.
    """
    if isinstance(chunks, (str, bytes)) or not isinstance(chunks, Sequence):
        raise InvalidArgumentType(
            f"chunks must be a sequence of Chunk, got {type(chunks).__name__}"
        )
    out = list(chunks)
    for i, chunk in enumerate(out):
        if not isinstance(chunk, Chunk):
            raise InvalidArgumentType(f"chunks[{i}] must be a Chunk, got {type(chunk).__name__}")
        _check_unicode(i, chunk)
    return out


def _check_unicode(i: int, chunk: Chunk) -> None:
    """A lone surrogate would surface as a driver's UnicodeEncodeError mid-batch."""
    at = lone_surrogate(chunk.id)
    if at is not None:
        raise InvalidArgument(
            f"chunks[{i}]: id {chunk.id!r} holds a lone surrogate at position {at}; "
            "ids must be valid Unicode text"
        )
    at = lone_surrogate(chunk.text)
    if at is not None:
        raise InvalidArgument(
            f"chunk {chunk.id!r}: text holds a lone surrogate {chunk.text[at]!r} at "
            f"position {at}; it is not valid Unicode text and cannot be stored"
        )
    problem = unicode_problem(chunk.metadata, "metadata") if chunk.metadata else None
    if problem is not None:
        raise InvalidArgument(f"chunk {chunk.id!r}: {problem}")
