"""A thread pool that shares its threads fairly between keys (tenants), awaited from asyncio.

A plain pool runs jobs in arrival order: a tenant that sends many slow queries at once
fills every thread, and everyone else waits behind them. Here each key has its own
queue, free threads take from the keys in turn (round robin), and one key may hold at
most ``per_key`` threads at a time, so with ``per_key < threads`` a thread is always left
for the other keys.

Why it is built by hand rather than on ``run_in_executor``: for a sub-millisecond read
the hop to a thread and back costs as much as the read, and what a hop costs is how many
times a sleeping thread must be woken. Each side therefore signals the other as the
last thing it does before it sleeps, so the woken thread finds the GIL free instead of
waking, finding it held, and sleeping again:

- ``submit`` prepares everything (its future, the job), hands the job straight to an idle
  thread, and only then wakes that one thread (its own lock: no shared condition, no
  herd); the caller then awaits at once.
- a thread does its bookkeeping for the next job first and resolves the caller's
  future (``call_soon_threadsafe``) last, right before it parks.

Idle threads park on a stack, so the thread that finished most recently (its caches
warm) takes the next job, and the others, left idle, leave after a while: a pool nobody
shut down keeps no threads (or itself) alive forever.
"""

from __future__ import annotations

import asyncio
import threading
from collections import OrderedDict, deque
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

_T = TypeVar("_T")
_IDLE_SECONDS = 30.0


class _Job:
    __slots__ = ("args", "fn", "future", "key", "loop")

    def __init__(
        self,
        key: Hashable,
        loop: asyncio.AbstractEventLoop,
        future: asyncio.Future[Any],
        fn: Callable[..., Any],
        args: tuple[Any, ...],
    ) -> None:
        self.key = key
        self.loop = loop
        self.future = future
        self.fn = fn
        self.args = args


class _Thread:
    """One pool thread: parks on its own lock; a job is handed over in ``job``."""

    __slots__ = ("job", "wake")

    def __init__(self, job: _Job | None) -> None:
        self.job = job
        self.wake = threading.Lock()
        self.wake.acquire()  # held: the thread blocks on it until handed a job


class FairPool:
    """Up to ``threads`` daemon threads serving per-key queues in turn; see the module doc."""

    def __init__(self, threads: int, *, per_key: int, name: str) -> None:
        self._size = threads
        self._per_key = per_key
        self._name = name
        self._lock = threading.Lock()
        self._queues: OrderedDict[Hashable, deque[_Job]] = OrderedDict()
        self._running: dict[Hashable, int] = {}
        self._threads: dict[_Thread, threading.Thread] = {}
        self._idle: list[_Thread] = []  # parked, the most recently parked last
        self._started = 0
        self._stopping = False

    def submit(self, key: Hashable, fn: Callable[..., _T], *args: Any) -> asyncio.Future[_T]:
        """Queue ``fn(*args)`` under ``key``; await the result at once (see the module doc).

        Call it on the event loop thread; RuntimeError once shut down. Cancelled before
        a thread takes it, the job never runs; cancelled while running, it finishes and
        its result is dropped (a thread cannot be stopped).
        """
        loop = asyncio.get_running_loop()
        future: asyncio.Future[_T] = loop.create_future()
        job = _Job(key, loop, future, fn, args)
        with self._lock:
            if self._stopping:
                raise RuntimeError("cannot schedule new jobs after shutdown")
            woken = self._place(job)
        if woken is not None:
            woken.wake.release()  # the last thing before the caller waits
        return future

    def shutdown(self) -> None:
        """Run what is queued, then stop the threads and wait for them."""
        with self._lock:
            self._stopping = True
            idle, self._idle = self._idle, []
            threads = list(self._threads.values())
            for parked in idle:
                del self._threads[parked]
        for parked in idle:
            parked.job = None  # no job: leave
            parked.wake.release()
        for thread in threads:
            thread.join()

    def _place(self, job: _Job) -> _Thread | None:
        """Under the lock: give ``job`` to an idle thread (returned, to be woken), to a
        new thread, or to its key's queue when the key has no free share or no thread
        is free."""
        if self._running.get(job.key, 0) < self._per_key and not self._queues.get(job.key):
            if self._idle:
                parked = self._idle.pop()
                parked.job = job
                self._running[job.key] = self._running.get(job.key, 0) + 1
                return parked
            if len(self._threads) < self._size:
                self._running[job.key] = self._running.get(job.key, 0) + 1
                self._start(job)
                return None
        self._queues.setdefault(job.key, deque()).append(job)
        return None

    def _start(self, job: _Job) -> None:
        self._started += 1
        worker = _Thread(job)
        thread = threading.Thread(
            target=self._work, args=(worker,), name=f"{self._name}-{self._started}", daemon=True
        )
        self._threads[worker] = thread
        thread.start()

    def _next(self) -> _Job | None:
        """Under the lock: the first key in turn with a queued job and a free share."""
        for key, jobs in self._queues.items():
            if self._running.get(key, 0) < self._per_key:
                job = jobs.popleft()
                if jobs:
                    self._queues.move_to_end(key)  # its next job waits its turn
                else:
                    del self._queues[key]
                self._running[key] = self._running.get(key, 0) + 1
                return job
        return None

    def _work(self, me: _Thread) -> None:
        job = me.job
        while job is not None:
            outcome = _call(job)
            with self._lock:
                left = self._running[job.key] - 1
                if left:
                    self._running[job.key] = left
                else:
                    del self._running[job.key]
                following = self._next()
                leaving = following is None and self._stopping
                if following is None and not leaving:
                    me.job = None
                    self._idle.append(me)
                if leaving:
                    # Jobs still queued here wait for their key's share; the threads
                    # running that key's jobs come back for them.
                    del self._threads[me]
            if outcome is not None:
                _deliver(job, outcome)  # the last thing before this thread sleeps
            if following is not None or leaving:
                job = following
                continue
            job = self._park(me)

    def _park(self, me: _Thread) -> _Job | None:
        """Sleep until handed a job (None: leave); leave after a while idle."""
        if not me.wake.acquire(timeout=_IDLE_SECONDS):
            with self._lock:
                if me in self._idle:  # nobody handed us anything meanwhile
                    self._idle.remove(me)
                    del self._threads[me]
                    return None
            me.wake.acquire()  # a job was handed over as we timed out: it is on its way
        return me.job


# What a job came to: (True, result), (False, exception), or None when its caller gave
# up before it started.
_Outcome = tuple[bool, Any]


def _call(job: _Job) -> _Outcome | None:
    if job.future.cancelled():  # the caller gave up before it started
        return None
    try:
        return True, job.fn(*job.args)
    except BaseException as exc:  # handed to the caller, who re-raises it
        return False, exc


def _deliver(job: _Job, outcome: _Outcome) -> None:
    try:
        job.loop.call_soon_threadsafe(_resolve, job.future, outcome)
    except RuntimeError:  # the caller's loop is closed: nobody is waiting any more
        pass


def _resolve(future: asyncio.Future[Any], outcome: _Outcome) -> None:
    if future.done():  # cancelled while the job ran
        return
    ok, value = outcome
    if ok:
        future.set_result(value)
    elif isinstance(value, StopIteration):
        # A future refuses StopIteration (it would end the awaiting coroutine quietly);
        # left to raise here, the caller would wait forever.
        error = RuntimeError(f"job raised StopIteration: {value!r}")
        error.__cause__ = value
        future.set_exception(error)
    else:
        future.set_exception(value)
