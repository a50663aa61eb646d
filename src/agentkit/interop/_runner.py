"""Running agentkit's async memory from the frameworks' sync entry points, and back.

Both bridges have sync entry points (``invoke``, ``retrieve``, ``embed_query``) over
async memory, and async fan-outs over sync-only framework code. This module is the one
answer to both:

* ``run_sync`` runs a coroutine on ONE long-lived event loop for the process and
  blocks until it is done. One loop, not one per call, so loop-bound resources
  (client sessions, ``asyncio.Lock``, connection pools) stay valid across calls. The
  loop has no thread of its own; it is driven by whoever needs it. A caller whose
  thread runs no loop of its own, arriving while nobody drives the shared loop, drives
  it itself until its task is done: no thread wakes up, which is most of what a sync
  call would otherwise cost. Any other caller (the loop is busy, or the caller sits in
  a running loop, as a notebook cell does) submits its call to the loop and sleeps
  until it is done; a background thread drives the loop while such calls wait and
  nobody else does, and takes over from a caller whose own task finished first.
  The coroutine is created once and run once in every case: no inline attempt, no
  retry, so a query's side effects happen once and a cache in the stack never stores
  a thrown-away answer. It runs in a copy of the caller's contextvars context
  (LangChain's child-run config, LlamaIndex's spans), and the caller's objects (its
  ``Ctx``) are passed as they are.
* ``run_blocking`` runs sync-only framework code on a wide pool of our own, because the
  default executor (``min(32, cpu + 4)`` threads) would serialise a fan-out of eight
  sync retrievers on a small machine.

What that asks of a memory: a call always runs on the shared loop, but not always on
the same thread, so nothing may rely on thread identity (a ``threading.local``, a
``check_same_thread`` connection); loop-bound is fine. A task a memory leaves running
after its call returns makes progress while some call drives the loop, not in between.

Why not anyio's ``BlockingPortal`` or asgiref's ``async_to_sync``: ``portal.call``
always hops to the portal's thread and leaves the task running when the waiting caller
is interrupted, and keeping one portal alive for the process (and renewing it after
fork) would be ours to do anyway; asgiref refuses callers inside a running loop (a
notebook cell) and, outside one, runs each call on a fresh loop. What they agree on, we
keep: calling the blocking entry point from a coroutine on the loop it would wait for
is an error, not a deadlock.
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
# How long a main-thread caller may miss a Ctrl-C (see _tick, _Call._wait_on_main).
_SIGNAL_SLICE = 0.1

# Who drives the shared loop.
_IDLE = 0  # nobody: the loop is not running, and no remote call is waiting
_LOCAL = 1  # a caller, on its own thread, until its own task is done
_BACKGROUND = 2  # the background driver, until no remote call is waiting


class _State:
    """The process's loop, who drives it, the remote calls waiting on it, the background
    driver and the blocking pool; replaced whole after fork.

    ``lock`` guards ``mode`` and ``pending`` together: every hand-over of the loop is
    decided under it, so a call never finds the loop undriven while it waits.
    """

    __slots__ = ("driver", "lock", "loop", "mode", "pending", "pool", "wake")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.loop: asyncio.AbstractEventLoop | None = None
        self.mode = _IDLE
        self.pending = 0  # remote calls submitted and not yet retired by their caller
        self.driver: threading.Thread | None = None
        # Held while the background driver has nothing to do; released to wake it.
        self.wake = threading.Lock()
        self.wake.acquire()
        self.pool: concurrent.futures.ThreadPoolExecutor | None = None


_state = _State()
# Parents' states, kept alive (never closed, never collected) in a forked child: their
# loop shares its epoll instance with the parent's, and closing it, as collecting it
# would, unregisters the parent's own wake-up pipe there, so the parent's loop would
# sleep through every wake-up from another thread.
_left_behind: list[_State] = []


def _reset_after_fork() -> None:
    # The child has none of the parent's threads: a loop driven by one of them would
    # never run again, the background driver and the pool's workers are gone, and the
    # state lock may be held by a thread that no longer exists. Set all of it aside and
    # let the next call start afresh.
    global _state
    _left_behind.append(_state)
    _state = _State()


os.register_at_fork(after_in_child=_reset_after_fork)


def _shared_loop(state: _State) -> asyncio.AbstractEventLoop:
    """The process's loop, created on first use (and again should it ever be closed)."""
    loop = state.loop
    if loop is None or loop.is_closed():
        with state.lock:
            loop = state.loop
            if loop is None or loop.is_closed():
                loop = state.loop = asyncio.new_event_loop()
                loop.call_later(_SIGNAL_SLICE, _tick, loop)
    return loop


def _tick(loop: asyncio.AbstractEventLoop) -> None:
    """Wakes the loop every slice for as long as anyone drives it.

    A Ctrl-C landing after the main thread's last bytecode but before it blocks in
    ``select`` does not interrupt the wait (the signal is only noted): without a tick
    it would be seen at the next timer or I/O event, maybe much later. One timer for
    the loop's life costs a call nothing; one per call would cost every call.
    """
    loop.call_later(_SIGNAL_SLICE, _tick, loop)


# --- the background driver ---


def _ensure_driver(state: _State) -> None:
    """Under ``state.lock``: start the background driver if it is not running yet.

    Done when a remote call is submitted, before the loop can need handing over, so a
    hand-over itself is one lock release, which no interrupt can cut in half.
    """
    driver = state.driver
    if driver is None or not driver.is_alive():
        driver = state.driver = threading.Thread(
            target=_drive_in_background, args=(state,), name="agentkit-interop-loop", daemon=True
        )
        driver.start()


def _drive_in_background(state: _State) -> None:
    me = threading.current_thread()
    while True:
        state.wake.acquire()
        with state.lock:
            if state.driver is not me:
                # Superseded (our start was interrupted and another driver was made):
                # pass the wake on to it and end.
                _wake(state)
                return
            if state.mode != _BACKGROUND:
                continue  # a spare wake (see _Call._abandon)
            loop = state.loop
        assert loop is not None
        _drive_until_idle(state, loop)


def _drive_until_idle(state: _State, loop: asyncio.AbstractEventLoop) -> None:
    """Run the loop until no remote call waits, then let go of it (under the lock, so a
    call submitted meanwhile is either seen here or finds the loop free)."""
    while True:
        try:
            loop.run_forever()  # until _stop_if_idle
        except BaseException as exc:
            # A stray task's KeyboardInterrupt or SystemExit (a call's own task hands
            # those to its caller): report it and keep serving the waiting calls.
            loop.call_exception_handler(
                {"message": "exception escaped the agentkit interop loop", "exception": exc}
            )
        with state.lock:
            if state.pending == 0 or loop.is_closed():  # closed: nothing left to serve
                state.mode = _IDLE
                return


def _stop_if_idle(state: _State, loop: asyncio.AbstractEventLoop) -> None:
    # On the loop. Re-checked here: a call may have been submitted since this was
    # queued, or a caller may be driving the loop for its own task by now.
    with state.lock:
        if state.pending == 0 and state.mode == _BACKGROUND:
            loop.stop()


def _wake(state: _State) -> None:
    """Release the background driver (under ``state.lock``, ``mode`` set to background).

    Inlined where an interrupt must not land between deciding and waking (see
    ``_run_here``); here for the others. A spare wake is ignored by the driver.
    """
    try:
        state.wake.release()
    except RuntimeError:
        pass  # already released, not yet taken: one wake is enough


# --- local mode: the caller drives the loop ---


class _Expiry:
    """The timeout of a locally driven call: cancels the task, remembers it did."""

    __slots__ = ("fired", "task")

    def __init__(self, task: asyncio.Task[Any]) -> None:
        self.task = task
        self.fired = False

    def __call__(self) -> None:
        if not self.task.done():
            self.fired = True
            self.task.cancel()


class _Busy:
    """Someone else is driving the shared loop: the call must go remote."""


_BUSY = _Busy()


def _run_here(
    state: _State,
    loop: asyncio.AbstractEventLoop,
    coro: Coroutine[Any, Any, T],
    context: contextvars.Context,
    timeout: float | None,
) -> T | _Busy:
    """Drive the shared loop on this thread until this call's task is done, if nobody
    else is driving it (else ``_BUSY``); then hand the loop on.

    On timeout, or an interrupt while driving (Ctrl-C lands on the main thread, which may
    be this one), the task is cancelled and the loop driven on until it has unwound, as
    ``asyncio.Runner`` does: the query must not go on running unseen. The clean-up sits
    in ``finally`` blocks in this one frame, so an interrupt landing anywhere still
    leaves the loop handed on and the task cancelled.
    """
    local = False
    task: asyncio.Task[T] | None = None
    expiry = timer = None
    try:
        with state.lock:
            if state.mode != _IDLE:
                return _BUSY
            state.mode = _LOCAL
            local = True
        task = loop.create_task(coro, context=context)
        if timeout is not None:
            expiry = _Expiry(task)
            timer = loop.call_later(timeout, expiry)
        # One pass first (stop() before run_forever() runs what is scheduled, then
        # returns): a query that never suspends, like an in-process source, is done
        # after its first step, without the extra loop turn run_until_complete spends
        # on its own done-callback. One that suspends is then run to completion.
        loop.stop()
        loop.run_forever()
        result = task.result() if task.done() else loop.run_until_complete(task)
    except BaseException:
        if task is None or not task.done():
            raise  # interrupted: cancelled and unwound below
        if expiry is not None and expiry.fired:
            raise _timed_out(timeout) from None
        if task.cancelled():
            # Cancelled from inside its own stack: what Future.result would raise.
            raise concurrent.futures.CancelledError() from None
        task.exception()  # retrieved: it reaches the caller, nothing to log later
        raise
    finally:
        if local:
            try:
                try:
                    if task is None:
                        coro.close()  # interrupted before it was scheduled: nothing ran
                    elif not task.done():
                        task.cancel()
                        _unwind(loop, task)
                finally:
                    if timer is not None:
                        timer.cancel()
            finally:
                # Hand the loop on: to nobody, or to the background driver if remote
                # calls still wait on it (their callers must not wait for ours).
                with state.lock:
                    if state.pending:
                        state.mode = _BACKGROUND
                        try:
                            state.wake.release()
                        except RuntimeError:
                            pass  # already released, not yet taken
                    else:
                        state.mode = _IDLE
    if expiry is not None and expiry.fired:  # the query swallowed its cancellation
        raise _timed_out(timeout)
    return result


def _unwind(loop: asyncio.AbstractEventLoop, task: asyncio.Task[Any]) -> None:
    """Drive the loop until the cancelled ``task`` has finished unwinding.

    A second interrupt stops this wait, not the cancellation: the task then finishes
    unwinding whenever the loop next runs.
    """
    while not task.done():
        try:
            loop.run_until_complete(task)
        except Exception:
            pass  # the task's own error, or the loop stopped before it was done: look again
        except BaseException:
            if not task.done():
                raise
    if not task.cancelled():
        task.exception()


def _timed_out(timeout: float | None) -> TimeoutError:
    return TimeoutError(f"the agentkit call did not finish within {timeout} s and was cancelled")


# --- remote mode: the caller waits while someone else drives ---


class _Call(Generic[T]):
    """One coroutine submitted to the shared loop, and the lock its caller blocks on.

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
        "state",
        "task",
    )

    def __init__(
        self,
        coro: Coroutine[Any, Any, T],
        context: contextvars.Context,
        state: _State,
        loop: asyncio.AbstractEventLoop,
    ) -> None:
        self.coro = coro
        self.context = context
        self.state = state
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
        # instead of stopping whoever drives the shared loop.
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
        state = self.state
        counted = settled = False
        try:
            with state.lock:
                _ensure_driver(state)
                state.pending += 1
                counted = True
                if state.mode == _IDLE:
                    state.mode = _BACKGROUND
                    _wake(state)
            self.loop.call_soon_threadsafe(self.start)
            if on_main:
                settled = self._wait_on_main(timeout)
            else:
                settled = self.settled.acquire(timeout=-1 if timeout is None else timeout)
        finally:
            if not settled:
                # Timed out, or interrupted (KeyboardInterrupt) while waiting.
                if counted:
                    self._abandon()
                else:
                    self.coro.close()
            if counted:
                self._retire()
        if not settled:
            raise _timed_out(timeout)
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
        state = self.state
        with state.lock:
            if state.mode == _BACKGROUND:
                _wake(state)  # in case the interrupt cut our own hand-over short
        self.loop.call_soon_threadsafe(self.cancel)
        self.finished.wait()

    def _retire(self) -> None:
        # The caller no longer needs the loop. The last remote call asks the background
        # driver to let go of it, so the next caller can drive it locally again.
        state = self.state
        with state.lock:
            state.pending -= 1
            if state.pending == 0 and state.mode == _BACKGROUND:
                self.loop.call_soon_threadsafe(_stop_if_idle, state, self.loop)


def _check_timeout(timeout: object) -> float | None:
    if timeout is None:
        return None
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
        raise InvalidArgumentType(f"timeout must be a number or None, got {type(timeout).__name__}")
    if not math.isfinite(timeout) or timeout <= 0:
        raise InvalidArgument(f"timeout must be a positive finite number of seconds, got {timeout}")
    return float(timeout)


def run_sync(make: Callable[[], Coroutine[Any, Any, T]], *, timeout: float | None = None) -> T:
    """Run ``make()`` to completion on the shared loop; block until it is done.

    ``make`` is called exactly once, in the caller's thread, and its coroutine runs
    exactly once, on the process's one loop: driven right here when this thread runs
    no loop of its own and nobody else is driving it, otherwise by whoever is. Works
    whether or not the calling thread has a running loop of its own (that loop is
    blocked meanwhile: async callers should await instead). On ``timeout``
    (``TimeoutError``) or an interrupt in the caller the task is cancelled, and the
    call returns only once it has finished unwinding.

    Args:
        make: Builds the coroutine to run; called once, in the caller's thread.
        timeout: Seconds to wait before cancelling; ``None`` waits as long as it takes.

    Returns:
        What the coroutine returned.

    Raises:
        SyncCallOnLoopThread: Called from a coroutine or callback on the shared loop
            itself, which would wait for a loop that cannot run until it returns.
        TimeoutError: ``timeout`` passed; the task was cancelled and has unwound.
        InvalidArgumentType: ``make`` did not return a coroutine.
    """
    limit = _check_timeout(timeout)
    state = _state
    loop = _shared_loop(state)
    try:
        running: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    if running is loop:
        raise SyncCallOnLoopThread(
            "a sync agentkit entry point was called from the interop event loop itself, "
            "where waiting would deadlock; await the async entry point instead"
        )
    coro = make()
    if not isinstance(coro, CoroutineType):
        raise InvalidArgumentType(f"make must return a coroutine, got {type(coro).__name__}")
    context = contextvars.copy_context()
    if running is None and state.mode == _IDLE:
        result: T | _Busy = _run_here(state, loop, coro, context, limit)
        if not isinstance(result, _Busy):
            return result
    call: _Call[T] = _Call(coro, context, state, loop)
    return call.run(limit, threading.get_ident() == threading.main_thread().ident)


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
