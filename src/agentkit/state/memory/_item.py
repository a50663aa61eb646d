"""MemoryItem: the one result shape every source returns."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from agentkit.kernel.errors import InvalidArgument, InvalidArgumentType
from agentkit.kernel.validate import check_score
from agentkit.state.memory._frozen import FrozenDict


@dataclass(slots=True, frozen=True)
class MemoryItem:
    """One recalled record: text for the agent plus where it came from.

    ``id`` is keyword-only on purpose: the type is built positionally everywhere
    (``MemoryItem("c", "vector", 0.91, meta)``) and a positional ``id`` would
    silently rebind those arguments. The item is frozen and ``metadata`` is copied
    into a frozen dict: items are shared (a cache serves the same objects to every
    caller, a merge hands on the objects its members returned), so one holder
    editing an item in place would change it for all the others. Annotate with
    ``dataclasses.replace`` instead.

    Args:
        content: The text the agent reads.
        source: The name of the source that produced the item (never empty); composites
            and traces attribute by it.
        score: Relevance on that source's own scale (cosine, BM25, recency, ...), or
            ``None`` when the source does not rank. Not comparable across sources
            without a reranker.
        metadata: String-keyed tags (path, title, position, ...); stored as a
            read-only copy.
        id: The backend's record id, when it has one; ``"id"`` dedupe merges copies by it.

    Raises:
        InvalidArgumentType: A field of the wrong type (a non-str content or source,
            a non-mapping metadata or a non-str key in it).
        InvalidArgument: An empty ``source``, or a NaN or infinite score.
    """

    content: str
    source: str
    score: float | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    id: str | None = field(default=None, kw_only=True)

    def __post_init__(self) -> None:
        if not isinstance(self.content, str):
            raise InvalidArgumentType(
                f"MemoryItem.content must be a str, got {type(self.content).__name__}"
            )
        if not isinstance(self.source, str):
            raise InvalidArgumentType(
                f"MemoryItem.source must be a str, got {type(self.source).__name__}"
            )
        if not self.source:
            raise InvalidArgument("MemoryItem.source must be a non-empty str")
        if self.id is not None and not isinstance(self.id, str):
            raise InvalidArgumentType(
                f"MemoryItem.id must be a str or None, got {type(self.id).__name__}"
            )
        # Frozen: the two normalised fields are set the way dataclasses documents
        # for __post_init__ of a frozen class.
        object.__setattr__(self, "score", check_score(self.score))
        meta = self.metadata
        if type(meta) is not FrozenDict:
            if not isinstance(meta, Mapping):
                raise InvalidArgumentType(
                    f"MemoryItem.metadata must be a mapping, got {type(meta).__name__}"
                )
            for key in meta:
                if not isinstance(key, str):
                    raise InvalidArgumentType(
                        f"MemoryItem.metadata keys must be str, got {type(key).__name__}"
                    )
            object.__setattr__(self, "metadata", FrozenDict(meta))


def check_items(items: object, owner: str | None = None) -> list[MemoryItem]:
    """``items`` as a list, refused whole unless every element is a MemoryItem.

    The one check for a batch of items, wherever one arrives: a write (``items`` in
    the messages) or a member's answer to a composite (``owner`` names the member).
    A bare string or a single item is refused rather than iterated.
    """
    if isinstance(items, (str, bytes, MemoryItem)) or not isinstance(items, Iterable):
        if owner is not None:
            raise InvalidArgumentType(
                f"memory source {owner!r} must answer a list of MemoryItem, "
                f"got {type(items).__name__}"
            )
        raise InvalidArgumentType(
            f"items must be an iterable of MemoryItem, got {type(items).__name__}"
        )
    batch = list(items)
    for i, item in enumerate(batch):
        if not isinstance(item, MemoryItem):
            if owner is not None:
                raise InvalidArgumentType(
                    f"memory source {owner!r} answered a {type(item).__name__} at "
                    f"index {i}, not a MemoryItem"
                )
            raise InvalidArgumentType(
                f"items[{i}] must be a MemoryItem, got {type(item).__name__}"
            )
    return batch


# The hand-written copy in _evolve is valid only for exactly these fields.
_FAST_COPY = tuple(f.name for f in dataclasses.fields(MemoryItem)) == (
    "content", "source", "score", "metadata", "id")
_new_object = object.__new__
_set = object.__setattr__


def _evolve(item: MemoryItem, score: float | None, metadata: FrozenDict) -> MemoryItem:
    """``item`` with a new score and metadata, for the merge and rerank hot paths.

    ``dataclasses.replace`` would re-validate fields that were validated when
    ``item`` was built; copying them is several times cheaper. The caller vouches
    for ``score`` (a finite float or None) and passes metadata already frozen.
    """
    if not _FAST_COPY or type(item) is not MemoryItem:
        return dataclasses.replace(item, score=score, metadata=metadata)
    copy: MemoryItem = _new_object(MemoryItem)
    _set(copy, "content", item.content)
    _set(copy, "source", item.source)
    _set(copy, "score", score)
    _set(copy, "metadata", metadata)
    _set(copy, "id", item.id)
    return copy
