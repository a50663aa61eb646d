"""MutationJournal: the run's append-only history."""

from __future__ import annotations

import threading
from typing import Generic, TypeVar

T = TypeVar("T")


class MutationJournal(Generic[T]):
    """An ordered log that only grows.

    There is no edit or delete on purpose: it is the authored record of what
    happened, and sources such as JournalMemory read it without owning it.
    Appends take a lock so worker threads can record safely.
    """

    __slots__ = ("_entries", "_lock")

    def __init__(self) -> None:
        self._entries: list[T] = []
        self._lock = threading.Lock()

    def record(self, entry: T) -> None:
        """Append ``entry`` after everything recorded so far."""
        with self._lock:
            self._entries.append(entry)

    def entries(self) -> list[T]:
        """A copy, oldest first: callers may keep or sort it without touching the log."""
        with self._lock:
            return list(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        return f"MutationJournal({len(self._entries)} entries)"
