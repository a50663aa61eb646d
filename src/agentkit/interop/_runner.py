"""Running agentkit's async memory from the frameworks' sync entry points, and back.

Both bridges have sync entry points (``invoke``, ``retrieve``, ``embed_query``) over
async memory, and async fan-outs over sync-only framework code. This module is the one
answer to both:

* ``run_sync`` hands a coroutine to ONE long-lived event loop on a daemon thread and
  blocks until it is done. One loop for the process, not one per call, so loop-bound
  resources (client sessions, ``asyncio.Lock``) stay valid across calls. The coroutine
  is created once and run once: no inline attempt, no retry, so a query's side
  effects happen once and a cache in the stack never stores a thrown-away answer.
  It runs in a copy of the caller's contextvars context (LangChain's child-run config,
  LlamaIndex's spans), and the caller's objects (its ``Ctx``) are passed as they are.
* ``run_blocking`` runs sync-only framework code on a wide pool of our own, because the
  default executor (``min(32, cpu + 4)`` threads) would serialise a fan-out of eight
  sync retrievers on a small machine.

Why not anyio's ``BlockingPortal`` or asgiref's ``async_to_sync``: ``portal.call``
leaves the task running when the waiting caller is interrupted, and keeping one portal
alive for the process (and renewing it after fork) would be ours to do anyway;
asgiref refuses callers inside a running loop (a notebook cell) and, outside one,
runs each call on a fresh loop. What they agree on, we keep: calling the blocking
entry point from the loop's own thread is an error, not a deadlock.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import math
import os
import threading
import time
from collections.abc import Callable, Coroutine
from types import CoroutineType
from typing import Any, Generic, TypeVar

from agentkit.kernel.errors import InvalidArgument, InvalidArgumentType, SyncCallOnLoopThread

__all__ = ["blocking_pool", "run_blocking", "run_sync"]

T = TypeVar("T")

# Threads start lazily, so a wide pool costs nothing until a fan-out needs it.
_POOL_WORKERS = 64
# How long a main-thread caller may miss a Ctrl-C (see _Call._result).
_SIGNAL_SLICE = 0.1


class _State:
    """The process's loop, its thread's id and the blocking pool; replaced whole after fork."""

    __slots__ = ("ident", "lock", "loop", "pool")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.loop: asyncio.AbstractEventLoop | None = None
        self.ident: int | None = None
        self.pool: concurrent.futures.ThreadPoolExecutor | None = None


_state = _State()


def _reset_after_fork() -> None:
    # The child has none of the parent's threads: the loop would never run again and
    # the pool's workers are gone. Drop them (closing the loop would raise, since it
    # still believes it is running) and let the next call start afresh.
    global _state
    _state = _State()


os.register_at_fork(after_in_child=_reset_after_fork)


def _serve(loop: asyncio.AbstractEventLoop, started: threading.Event) -> None:
    asyncio.set_event_loop(loop)
    loop.call_soon(started.set)
    loop.run_forever()


def _background() -> tuple[asyncio.AbstractEventLoop, int | None]:
    """The running background loop and its thread's id, started on first use.

    ``is_running`` is the liveness check: it turns false when ``run_forever`` has
    returned, which is the only way the loop's thread ends.
    """
    state = _state
    loop = state.loop
    if loop is not None and loop.is_running():
        return loop, state.ident
    with state.lock:
        loop = state.loop
        if loop is None or not loop.is_running():
            loop = asyncio.new_event_loop()
            started = threading.Event()
            thread = threading.Thread(
                target=_serve, args=(loop, started), name="agentkit-interop-loop", daemon=True
            )
            thread.start()
            started.wait()
            state.loop, state.ident = loop, thread.ident
        return loop, state.ident


class _Call(Generic[T]):
    """One coroutine on the background loop, and the lock its caller blocks on.

    The caller holds ``settled`` from the start; the task releases it once the
    outcome is stored. A bare lock is the cheapest thing a thread can sleep on:
    a ``concurrent.futures.Future`` adds a condition variable and its own lock.
    """

    __slots__ = (
        "abandoned",
        "context",
        "coro",
        "error",
        "finished",
        "loop",
        "result",
        "settled",
        "task",
    )

    def __init__(
        self,
        coro: Coroutine[Any, Any, T],
        context: contextvars.Context,
        loop: asyncio.AbstractEventLoop,
    ) -> None:
        self.coro = coro
        self.context = context
        self.loop = loop
        self.settled = threading.Lock()
        self.settled.acquire()
        self.result: T | None = None
        self.error: BaseException | None = None
        self.task: asyncio.Task[None] | None = None
        self.finished: threading.Event | None = None
        self.abandoned = False

    def start(self) -> None:
        """On the loop: wrap the coroutine in a task running in the caller's context."""
        if not self.abandoned:
            self.task = self.loop.create_task(self._drive(), context=self.context)

    async def _drive(self) -> None:
        # Settles the call from inside the task: the caller wakes without waiting one
        # more loop turn for a done-callback, and an exception the loop would re-raise
        # (KeyboardInterrupt, SystemExit raised by the coroutine) goes to the caller
        # instead of stopping the shared loop.
        try:
            self.result = await self.coro
        except asyncio.CancelledError:
            # Cancelled by _abandon (whose caller no longer reads this), or from inside
            # the coroutine's own stack: the caller sees what Future.result would raise.
            self.error = concurrent.futures.CancelledError()
            raise
        except BaseException as exc:
            self.error = exc
        finally:
            self.settled.release()

    def cancel(self) -> None:
        """On the loop: cancel the task and note when it has finished unwinding."""
        self.abandoned = True
        finished = self.finished
        assert finished is not None
        task = self.task
        if task is None:
            # The interrupt came before start() was queued: nothing ever ran.
            self.coro.close()
            finished.set()
            return
        task.add_done_callback(self._unwound)
        task.cancel()

    def _unwound(self, task: asyncio.Task[None]) -> None:
        # A task cancelled before its first step never started the coroutine: close
        # it, or its "never awaited" warning would fire later from the garbage
        # collector, where an exception (a second Ctrl-C) is swallowed.
        self.coro.close()
        assert self.finished is not None
        self.finished.set()

    def run(self, timeout: float | None, on_main: bool) -> T:
        """In the caller: submit, then block; an interrupt anywhere in here cancels."""
        settled = False
        try:
            self.loop.call_soon_threadsafe(self.start)
            if on_main:
                settled = self._wait_on_main(timeout)
            else:
                settled = self.settled.acquire(timeout=-1 if timeout is None else timeout)
        finally:
            if not settled:
                # Timed out, or interrupted (KeyboardInterrupt) while waiting.
                self._abandon()
        if not settled:
            raise TimeoutError(
                f"the agentkit call did not finish within {timeout} s and was cancelled"
            )
        error = self.error
        if error is not None:
            self.error = None  # no reference cycle through the traceback
            raise error
        return self.result  # type: ignore[return-value]

    def _wait_on_main(self, timeout: float | None) -> bool:
        """Block until the task settles the call; ``False`` when ``timeout`` passed.

        CPython runs signal handlers between bytecodes: a Ctrl-C landing just before
        the thread blocks on a lock is only seen once the lock is released, i.e. when
        the query is over. On the main thread (the only one signals reach), waiting
        in slices bounds that delay to one slice.
        """
        settled = self.settled
        deadline = None if timeout is None else time.monotonic() + timeout
        wait = _SIGNAL_SLICE
        while True:
            if deadline is not None:
                wait = max(0.0, min(_SIGNAL_SLICE, deadline - time.monotonic()))
            if settled.acquire(timeout=wait):
                return True
            if deadline is not None and time.monotonic() >= deadline:
                return False

    def _abandon(self) -> None:
        # The caller gave up (timeout, KeyboardInterrupt): the query must not go on
        # running unseen. Cancel it and wait until it has unwound; a second interrupt
        # while waiting stops the wait, not the cancellation.
        self.finished = threading.Event()
        self.loop.call_soon_threadsafe(self.cancel)
        self.finished.wait()


def _check_timeout(timeout: object) -> float | None:
    if timeout is None:
        return None
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
        raise InvalidArgumentType(f"timeout must be a number or None, got {type(timeout).__name__}")
    if not math.isfinite(timeout) or timeout <= 0:
        raise InvalidArgument(f"timeout must be a positive finite number of seconds, got {timeout}")
    return float(timeout)


def run_sync(make: Callable[[], Coroutine[Any, Any, T]], *, timeout: float | None = None) -> T:
    """Run ``make()`` to completion on the background loop; block until it is done.

    ``make`` is called exactly once, in the caller's thread, and its coroutine runs
    exactly once. Works whether or not the calling thread has a running loop of its
    own (that loop is blocked meanwhile: async callers should await instead). On
    ``timeout`` (``TimeoutError``) or an interrupt in the waiting caller the task is
    cancelled, and the call returns only once it has finished unwinding.

    Args:
        make: Builds the coroutine to run; called once, in the caller's thread.
        timeout: Seconds to wait before cancelling; ``None`` waits as long as it takes.

    Returns:
        What the coroutine returned.

    Raises:
        SyncCallOnLoopThread: Called from the background loop itself, which would wait
            for a loop that cannot run until it returns.
        TimeoutError: ``timeout`` passed; the task was cancelled and has unwound.
        InvalidArgumentType: ``make`` did not return a coroutine.
    """
    limit = _check_timeout(timeout)
    loop, loop_ident = _background()
    caller = threading.get_ident()
    if caller == loop_ident:
        raise SyncCallOnLoopThread(
            "a sync agentkit entry point was called on the interop event loop's own "
            "thread, where waiting would deadlock; await the async entry point instead"
        )
    coro = make()
    if not isinstance(coro, CoroutineType):
        raise InvalidArgumentType(f"make must return a coroutine, got {type(coro).__name__}")
    call: _Call[T] = _Call(coro, contextvars.copy_context(), loop)
    return call.run(limit, caller == threading.main_thread().ident)


def blocking_pool() -> concurrent.futures.ThreadPoolExecutor:
    """The interop layer's thread pool for sync-only framework code (lazy threads)."""
    state = _state
    pool = state.pool
    if pool is None:
        with state.lock:
            if state.pool is None:
                state.pool = concurrent.futures.ThreadPoolExecutor(
                    max_workers=_POOL_WORKERS, thread_name_prefix="agentkit-interop"
                )
            pool = state.pool
    return pool


async def run_blocking(fn: Callable[..., T], *args: Any) -> T:
    """Await ``fn(*args)`` run on ``blocking_pool()``, in a copy of this context.

    Cancelling the awaiting task returns at once; a call already running in its
    thread finishes there (a thread cannot be stopped) and its result is dropped.
    """
    loop = asyncio.get_running_loop()
    context = contextvars.copy_context()
    return await loop.run_in_executor(blocking_pool(), context.run, fn, *args)
