"""JournalMemory: the run's MutationJournal as a queryable source."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from agentkit.kernel.ctx import Ctx
from agentkit.kernel.validate import check_k, check_query, check_where
from agentkit.observability import traced_memory
from agentkit.state.journal import MutationJournal
from agentkit.state.memory._item import MemoryItem
from agentkit.state.memory._sources._args import check_ctx, check_items
from agentkit.vector.port import matches_where

T = TypeVar("T")

_MISSING = object()


@traced_memory
@dataclass
class JournalMemory(Generic[T]):
    """A MemorySource view on a MutationJournal[T]; read-only by construction.

    Journals are temporal, so there is no relevance ranking: matches are the
    ``k`` most recent entries whose rendered text contains the query
    (case-insensitive; ``""`` matches all), newest first, score None. The
    filter runs before the cut, so an old match still surfaces when newer
    entries do not match. ``where`` compares entry attributes, so
    ``where={"role": r}`` keeps entries whose ``role`` equals ``r`` (a list means
    any of them); an entry without the attribute never matches, which keeps a
    filter broadcast across a composite from failing here. The id is the
    entry's own ``id`` attribute when it has one, otherwise its position in the
    journal, which is stable because the journal only appends.

    Args:
        journal: The journal to read; entries appended later are seen by later queries.
        render: Turns one entry into the text that is searched and returned.
        name: The name items and traces carry.
    """

    journal: MutationJournal[T]
    render: Callable[[T], str]
    name: str = "journal"
    accepts_writes = False

    async def query(
        self,
        query: str,
        *,
        k: int,
        ctx: Ctx,
        where: dict[str, Any] | None = None,
    ) -> list[MemoryItem]:
        """The ``k`` newest journal entries matching ``where`` whose text contains the query.

        Newest first with score None: a journal orders by time, not relevance.
        """
        query = check_query(query)
        k = check_k(k)
        filters = check_where(where)
        check_ctx(ctx)
        needle = query.lower()
        entries = self.journal.entries()
        out: list[MemoryItem] = []
        for index in range(len(entries) - 1, -1, -1):
            entry = entries[index]
            role = getattr(entry, "role", _MISSING)
            if filters and not matches_where(_attributes(entry, filters), filters):
                continue
            text = self.render(entry)
            if needle and needle not in text.lower():
                continue
            out.append(self._item(entry, index, text, role))
            if len(out) == k:
                break
        return out

    def _item(self, entry: T, index: int, text: str, role: object) -> MemoryItem:
        own_id = getattr(entry, "id", None)
        metadata: dict[str, Any] = {"index": index}
        if role is not _MISSING:
            metadata["role"] = role
        item_id = str(own_id) if own_id is not None else str(index)
        return MemoryItem(text, self.name, None, metadata, id=item_id)

    async def write(self, items: Iterable[MemoryItem], *, ctx: Ctx) -> None:
        """Stores nothing: the journal's history is authored by ``journal.record``.

        ``accepts_writes = False`` tells a composite this member did not commit.
        """
        check_items(items)


def _attributes(entry: object, filters: dict[str, Any]) -> dict[str, Any]:
    """The entry's values for the filtered keys; absent ones stay absent."""
    if isinstance(entry, Mapping):
        return {key: entry[key] for key in filters if key in entry}
    found: dict[str, Any] = {}
    for key in filters:
        value = getattr(entry, key, _MISSING)
        if value is not _MISSING:
            found[key] = value
    return found
