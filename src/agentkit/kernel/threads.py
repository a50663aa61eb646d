"""Writes whose caller may give up while a worker thread is still inside them.

``asyncio.timeout`` (and any cancel) only stops the *awaiting* coroutine; a write
already handed to a thread, or to a framework's own executor, keeps going. If it
lands after the caller was told "timed out", a CompositeMemory split that says
``failed`` is a lie, and a retry of the failed members writes the batch twice.

Two ways out, one per situation:

* ``run_gated``: we own the thread's code. The thread asks a
  ``CommitGate`` right before the step that makes the write visible; a caller
  that gave up first closes the gate and the thread skips that step. If the thread
  got there first, the caller waits for it (the step is short) and reports what
  really happened.
* ``finish_or_undo``: the write is a framework call we cannot stop midway. On
  cancellation we wait for it, then run ``undo``; with no way to undo, we report the
  write's real outcome instead.

In both, a write that did land is reported as done even though the caller was
cancelled: the cancellation is absorbed, because "done" is the truth and the caller
acting on "failed" would be worse. (Inside ``asyncio.timeout`` this reads as a
normal return.)
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from agentkit.kernel.errors import StoreError

__all__ = ["CommitGate", "finish_or_undo", "run_gated"]

T = TypeVar("T")


class CommitGate:
    """A one-shot meeting point between a worker thread and the coroutine awaiting it.

    Whoever arrives first wins: the thread by ``enter()`` (it will commit), or the
    caller by ``close()`` (the thread must not). A lock makes the pair atomic, so
    there is no moment where both believe they won.
    """

    __slots__ = ("_lock", "_state")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._state = "open"

    def enter(self) -> bool:
        """Thread side, right before the irreversible step: False means skip it."""
        with self._lock:
            if self._state == "closed":
                return False
            self._state = "entered"
            return True

    def close(self) -> bool:
        """Caller side, on giving up: True means the thread will never commit."""
        with self._lock:
            if self._state == "entered":
                return False
            self._state = "closed"
            return True

    @property
    def closed(self) -> bool:
        """Whether the caller gave up first; the thread then never commits."""
        return self._state == "closed"


async def run_gated(start: Callable[[CommitGate], Awaitable[T]]) -> T:
    """Await ``start(gate)`` (a thread that consults ``gate``), truthfully under cancel.

    ``start`` launches the thread however its owner likes (``asyncio.to_thread``, a
    dedicated pool). On cancellation: if the gate closes in time, the cancellation
    propagates and the thread skips its commit (not waited for: it only cleans up);
    otherwise the thread is already committing, so we wait for it and return or raise
    whatever it did.

    Args:
        start: Launches the thread with a fresh gate and awaits it.

    Returns:
        What the thread returned.
    """
    gate = CommitGate()
    task = asyncio.ensure_future(start(gate))
    try:
        return await asyncio.shield(task)
    except asyncio.CancelledError:
        if gate.close():
            task.add_done_callback(_consume)
            raise
        return await _outlast(task)


async def finish_or_undo(
    work: Awaitable[T], undo: Callable[[], Awaitable[object]] | None
) -> T:
    """Await ``work``; if cancelled meanwhile, let it finish, then take it back.

    ``undo`` restores what ``work`` changed (it is run whatever ``work``'s outcome,
    since a multi-step write may fail halfway), then the cancellation propagates.
    ``undo=None`` says the change cannot be taken back: ``work``'s own outcome is
    returned or raised, so a write that landed is reported as landed. If ``undo``
    itself fails, StoreError says the write may have landed after the caller gave up.

    Args:
        work: The write to await.
        undo: Takes the write back after a cancellation; ``None`` if it cannot be.

    Returns:
        What ``work`` returned, when it was not cancelled (or ``undo`` is ``None``).

    Raises:
        StoreError: ``undo`` failed, so the store may hold the write.
    """
    task = asyncio.ensure_future(work)
    try:
        return await asyncio.shield(task)
    except asyncio.CancelledError:
        if undo is None:
            return await _outlast(task)
        await _outlast(asyncio.ensure_future(_settle(task)))
        try:
            await _outlast(asyncio.ensure_future(undo()))
        except Exception as exc:
            raise StoreError(
                f"a write finished after its caller gave up and could not be undone "
                f"({type(exc).__name__}: {exc}); the store may hold it"
            ) from exc
        raise


async def _outlast(task: asyncio.Future[T]) -> T:
    """Wait for ``task`` to finish however often we are cancelled meanwhile."""
    while True:
        try:
            return await asyncio.shield(task)
        except asyncio.CancelledError:
            if task.done() and not task.cancelled():
                return task.result()
            if task.cancelled():
                raise


async def _settle(task: asyncio.Future[Any]) -> None:
    """Wait for ``task`` and swallow its outcome (the undo decides what stays)."""
    try:
        await task
    except Exception:
        pass


def _consume(task: asyncio.Future[Any]) -> None:
    # Nobody awaits an abandoned write; read its outcome so asyncio does not log it.
    if not task.cancelled():
        task.exception()
