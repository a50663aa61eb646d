"""The provenance a merge stamps on a survivor, told apart from a look-alike.

A merge stamps ``dedupe_sources`` and ``dedupe_count`` on each survivor. A later merge
(an outer composite) must add up what an inner merge saw, but must not trust the same
keys when they come back from a store, a bridge or a hand-built item: that would count
copies that no merge saw in this query (three for two copies) and, under RRF, credit
one source's hit to sources that never returned it. Values alone cannot tell the two
apart, so the merge writes its ``dedupe_sources`` as a :class:`Provenance`, a tuple
that also knows the count and the ``(source, id)`` of every copy holding the
survivor's text. It stays itself as
long as the value is passed along in this process (``dataclasses.replace``, a rebuilt
``{**metadata}``) and turns into a plain tuple as soon as it is copied out: deepcopy,
pickle and JSON all yield plain data, so nothing a store hands back is ever trusted.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from agentkit.state.memory._item import MemoryItem


class Provenance(tuple[str, ...]):
    """The source names of a merge's copies (the tuple), how many copies, their rows."""

    copies: int
    rows: frozenset[tuple[str, str]]

    def __new__(
        cls, names: Iterable[str], copies: int, rows: frozenset[tuple[str, str]]
    ) -> Provenance:
        self = super().__new__(cls, names)
        self.copies = copies
        self.rows = rows
        return self

    # Copies out of the live object are plain data, never evidence.
    def __reduce__(self) -> tuple[Any, ...]:
        return (tuple, (tuple(self),))

    def __copy__(self) -> Provenance:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> tuple[str, ...]:
        return tuple(self)


def provenance(item: MemoryItem) -> Provenance | None:
    """The stamp a merge in this process put on ``item``; None for anything else."""
    meta = item.metadata
    if not meta:
        return None
    stamped = meta.get("dedupe_sources")
    return stamped if type(stamped) is Provenance else None


def held_by(item: MemoryItem, source: str) -> bool:
    """True when ``item.id`` is the key of ``source``'s own copy of this fact.

    For an item ``source`` returned itself, or a merge survivor one of whose copies
    ``source`` returned under that same id and with the same text (two sources over
    one store share its keys). An id another backend reported is never
    ``source``'s: not when ``source`` held the fact under a different key, and not
    when ``source`` has an unrelated row that happens to share the key.
    """
    if item.id is None:
        return False
    if item.source == source:
        return True
    stamped = provenance(item)
    return stamped is not None and (source, item.id) in stamped.rows
