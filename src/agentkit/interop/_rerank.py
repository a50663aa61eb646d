"""From a framework reranker's answer back to the items that were handed to it.

A framework reranker (a LangChain document compressor, a LlamaIndex node
postprocessor) sees our items as its own documents or nodes, and what it returns
may be those very objects, rebuilt copies without ids, copies with new ids or new
text (LLM compressors rewrite it), or the same object twice. The caller wants its
ORIGINAL items back, in the framework's order, each once. Both bridges describe
what they handed over and what came back as :class:`Seen` records and let
:func:`reranked_items` do the matching, so the two bridges cannot drift apart.
"""

from __future__ import annotations

import numbers
from collections.abc import Iterable, Sequence
from dataclasses import Field, dataclass, replace
from typing import Any, ClassVar, Protocol, TypeVar

from agentkit.interop._scores import usable_score
from agentkit.kernel.errors import InvalidArgument
from agentkit.kernel.validate import check_k

__all__ = ["RERANK_KEY", "Seen", "reranked_items"]

RERANK_KEY = "agentkit_rerank_index"
"""Metadata key a bridge stamps on each handed document/node: its position in the pool.

Metadata is what rebuilding rerankers copy (they drop ids and rewrite text), so this
is the most reliable way back. Bridges hide it from LLM and embedding text.
"""


class Scored(Protocol):
    """A dataclass record with a score: ``MemoryItem`` (kept abstract so this layer
    depends on the kernel only)."""

    __dataclass_fields__: ClassVar[dict[str, Field[Any]]]

    @property
    def score(self) -> float | None: ...


T = TypeVar("T", bound=Scored)


@dataclass(frozen=True, slots=True)
class Seen:
    """What a bridge can read off one framework object (document or node).

    ``ref`` is the object itself, matched by identity; ``slot`` is whatever sits under
    ``RERANK_KEY`` in its metadata (``None`` if absent); ``key`` is its framework
    id; ``text`` its text; ``score`` the framework's score as found (any value:
    non-numbers, NaN and infinities count as "no score").
    """

    ref: object
    slot: object = None
    key: str | None = None
    text: str | None = None
    score: object = None


def reranked_items(
    items: Sequence[T],
    handed: Sequence[Seen],
    returned: Iterable[Seen],
    *,
    k: int,
) -> list[T]:
    """The original items in the framework's order, each once, cut to ``k``.

    ``handed[i]`` describes the object built for ``items[i]``, read before the
    framework ran (it may change scores in place). Each returned object is matched
    to a handed one by, in order: its carried slot, identity, framework id (first
    unclaimed holder), then exact text (first unclaimed holder). A match already
    claimed is a duplicate and skipped; an object matching nothing is skipped.

    An item's score becomes the returned score only where the framework set one:
    a usable number that differs from what the handed object already carried
    (a score copied over unchanged is not the framework's verdict). Otherwise the
    very same item object comes back.
    """
    k = check_k(k)
    if len(items) != len(handed):
        raise InvalidArgument(
            f"reranked_items needs one handed record per item: {len(items)} items, "
            f"{len(handed)} handed"
        )
    matcher = _Matcher(handed)
    out: list[T] = []
    if not items:
        return out
    for seen in returned:
        position = matcher.claim(seen)
        if position is None:
            continue
        item = items[position]
        new = usable_score(seen.score)
        if new is not None and new != usable_score(handed[position].score) and new != item.score:
            item = replace(item, score=new)
        out.append(item)
        if len(out) == k:
            break
    return out


class _Matcher:
    """Positions of the handed objects by identity, id and text; claims each once."""

    def __init__(self, handed: Sequence[Seen]) -> None:
        self._size = len(handed)
        self._taken: set[int] = set()
        self._by_ref = {id(seen.ref): i for i, seen in enumerate(handed)}
        self._refs = [seen.ref for seen in handed]  # keeps ids in _by_ref valid
        self._by_key: dict[str, list[int]] = {}
        self._by_text: dict[str, list[int]] = {}
        for i, seen in enumerate(handed):
            if seen.key is not None:
                self._by_key.setdefault(seen.key, []).append(i)
            if seen.text is not None:
                self._by_text.setdefault(seen.text, []).append(i)

    def claim(self, seen: Seen) -> int | None:
        position = self._find(seen)
        if position is None or position in self._taken:
            return None
        self._taken.add(position)
        return position

    def _find(self, seen: Seen) -> int | None:
        slot = seen.slot
        if isinstance(slot, numbers.Integral) and not isinstance(slot, bool):
            if 0 <= int(slot) < self._size:
                return int(slot)
        position = self._by_ref.get(id(seen.ref))
        if position is not None and self._refs[position] is seen.ref:
            return position
        if seen.key is not None and seen.key in self._by_key:
            return self._first_free(self._by_key[seen.key])
        if seen.text is not None and seen.text in self._by_text:
            return self._first_free(self._by_text[seen.text])
        return None

    def _first_free(self, positions: list[int]) -> int | None:
        for position in positions:
            if position not in self._taken:
                return position
        return positions[0]  # all claimed: a duplicate, which claim() skips
