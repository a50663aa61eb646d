"""A thread pool that shares its threads fairly between keys (tenants).

A plain pool runs jobs in arrival order: a tenant that sends many slow queries at once
fills every thread, and everyone else waits behind them. Here each key has its own
queue, free threads take from the keys in turn (round robin), and one key may hold at
most ``per_key`` threads at a time, so with ``per_key < threads`` a thread is always left
for the other keys.

Threads start on demand and leave after a while idle, so a pool nobody shut down does
not keep threads (or itself) alive forever.
"""

from __future__ import annotations

import threading
from collections import OrderedDict, deque
from collections.abc import Callable, Hashable
from concurrent.futures import Future
from typing import Any, TypeVar

_T = TypeVar("_T")
_Job = tuple[Future[Any], Callable[..., Any], tuple[Any, ...]]
_IDLE_SECONDS = 30.0


class FairPool:
    """Up to ``threads`` daemon threads serving per-key queues in turn; see the module doc."""

    def __init__(self, threads: int, *, per_key: int, name: str) -> None:
        self._size = threads
        self._per_key = per_key
        self._name = name
        self._cond = threading.Condition()
        self._queues: OrderedDict[Hashable, deque[_Job]] = OrderedDict()
        self._running: dict[Hashable, int] = {}
        self._threads: list[threading.Thread] = []
        self._waiting = 0  # threads idle in _next; each takes one queued job when woken
        self._queued = 0
        self._started = 0
        self._stopping = False

    def submit(self, key: Hashable, fn: Callable[..., _T], *args: Any) -> Future[_T]:
        """Queue ``fn(*args)`` under ``key``; RuntimeError once shut down."""
        future: Future[_T] = Future()
        with self._cond:
            if self._stopping:
                raise RuntimeError("cannot schedule new jobs after shutdown")
            self._queues.setdefault(key, deque()).append((future, fn, args))
            self._queued += 1
            if self._queued > self._waiting and len(self._threads) < self._size:
                self._started += 1
                thread = threading.Thread(
                    target=self._work, name=f"{self._name}-{self._started}", daemon=True
                )
                self._threads.append(thread)
                thread.start()
            self._cond.notify()
        return future

    def shutdown(self) -> None:
        """Run what is queued, then stop the threads and wait for them."""
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
            threads = list(self._threads)
        for thread in threads:
            thread.join()

    def _next(self) -> tuple[Hashable, _Job] | None:
        """The first key in turn with a queued job and a free share; None: stop."""
        with self._cond:
            idle = False
            while True:
                for key, jobs in self._queues.items():
                    if self._running.get(key, 0) < self._per_key:
                        job = jobs.popleft()
                        self._queued -= 1
                        if jobs:
                            self._queues.move_to_end(key)  # its next job waits its turn
                        else:
                            del self._queues[key]
                        self._running[key] = self._running.get(key, 0) + 1
                        return key, job
                if (self._stopping and not self._queues) or (idle and not self._stopping):
                    # Queued jobs left over here are waiting for their key's share; the
                    # threads running that key's jobs come back for them.
                    self._threads.remove(threading.current_thread())
                    return None
                self._waiting += 1
                idle = not self._cond.wait(_IDLE_SECONDS)
                self._waiting -= 1

    def _work(self) -> None:
        while (taken := self._next()) is not None:
            key, (future, fn, args) = taken
            try:
                if future.set_running_or_notify_cancel():  # False: the caller gave up
                    try:
                        future.set_result(fn(*args))
                    except BaseException as exc:
                        future.set_exception(exc)
            finally:
                with self._cond:
                    left = self._running[key] - 1
                    if left:
                        self._running[key] = left
                    else:
                        del self._running[key]
                    # Only a job held back by its key's share, or a shutdown, has an
                    # idle thread to wake; waking them all per job costs every read a
                    # round of context switches.
                    if self._queued or self._stopping:
                        self._cond.notify_all()
