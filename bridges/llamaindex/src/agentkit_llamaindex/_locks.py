"""A readers-writer lock for thread-pool calls into one LlamaIndex index."""

from __future__ import annotations

import threading

__all__ = ["ReadWriteLock"]


class ReadWriteLock:
    """Many readers or one writer, for thread-pool calls into one index.

    In-process stores (the simple store, the docstore) are plain dicts: a search
    iterating them while an upsert deletes and re-inserts would fail or see a row
    half-replaced. Remote stores pay only an uncontended lock.
    """

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._readers = 0
        self._writing = False

    def read(self) -> _Held:
        return _Held(self, write=False)

    def write(self) -> _Held:
        return _Held(self, write=True)

    def _acquire(self, write: bool) -> None:
        with self._cond:
            if write:
                while self._writing or self._readers:
                    self._cond.wait()
                self._writing = True
            else:
                while self._writing:
                    self._cond.wait()
                self._readers += 1

    def _release(self, write: bool) -> None:
        with self._cond:
            if write:
                self._writing = False
            else:
                self._readers -= 1
            self._cond.notify_all()


class _Held:
    __slots__ = ("_lock", "_write")

    def __init__(self, lock: ReadWriteLock, *, write: bool) -> None:
        self._lock = lock
        self._write = write

    def __enter__(self) -> None:
        self._lock._acquire(self._write)

    def __exit__(self, *exc: object) -> None:
        self._lock._release(self._write)
