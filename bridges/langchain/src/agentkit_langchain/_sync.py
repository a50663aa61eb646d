"""Running agentkit's async memory from LangChain's sync entry points, and back.

Three pieces, each answering one measured problem:

* ``run_sync``: a sync caller needs an async result. ``asyncio.run`` per call costs
  hundreds of microseconds and strands loop-bound resources (client sessions, locks)
  on a loop that is then closed. So a coroutine is first driven inline, with no
  loop at all; most in-process memories never suspend and finish right there. One
  that does need a loop (it raises, or yields a future) is closed and started again,
  fresh, on one long-lived background loop, and the caller blocks on it. A key
  (the memory object) remembers that answer, so a stack that needs a loop is never
  tried inline twice: whatever a query does before its first suspension runs at
  most once more than asked, per memory object.
* ``require_loop``: bridge code that must not run inline (it would fire callbacks
  or start threads first) calls it at the top. It raises a BaseException subclass,
  which ``except Exception`` guards in composites cannot mistake for a member failure.
* ``executor``: LangChain's default async path for sync-only retrievers borrows the
  default thread pool (``min(32, cpu + 4)`` threads, 6 on a 2-core machine), so eight
  of them take two rounds. The bridge owns a wider pool for its fan-out.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import inspect
import os
import threading
import weakref
from collections.abc import Callable, Coroutine
from types import TracebackType
from typing import Any, TypeVar

T = TypeVar("T")

_EXECUTOR_WORKERS = 64


class NeedsLoop(BaseException):
    """Raised inside an inline attempt by code that must run on a real loop."""


def require_loop() -> None:
    """Stop an inline attempt here, before any side effect, if no loop is running."""
    if asyncio._get_running_loop() is None:
        raise NeedsLoop


_executor: concurrent.futures.ThreadPoolExecutor | None = None
_executor_lock = threading.Lock()


def executor() -> concurrent.futures.ThreadPoolExecutor:
    """The bridge's thread pool for sync-only LangChain code (threads start lazily)."""
    global _executor
    if _executor is None:
        with _executor_lock:
            if _executor is None:
                _executor = concurrent.futures.ThreadPoolExecutor(
                    max_workers=_EXECUTOR_WORKERS, thread_name_prefix="agentkit-langchain"
                )
    return _executor


class _Background:
    """One event loop on a daemon thread, started on first use and kept for life."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    def loop(self) -> asyncio.AbstractEventLoop:
        if self._loop is None:
            with self._lock:
                if self._loop is None:
                    loop = asyncio.new_event_loop()
                    ready = threading.Event()

                    def serve() -> None:
                        asyncio.set_event_loop(loop)
                        loop.call_soon(ready.set)
                        loop.run_forever()

                    thread = threading.Thread(
                        target=serve, name="agentkit-langchain-loop", daemon=True
                    )
                    thread.start()
                    ready.wait()
                    self._thread = thread
                    self._loop = loop
        return self._loop

    def is_current_thread(self) -> bool:
        return self._thread is not None and self._thread is threading.current_thread()

    def run(self, coro: Coroutine[Any, Any, T], context: contextvars.Context | None) -> T:
        """Run ``coro`` to completion on the background loop and block for it."""
        loop = self.loop()
        done: concurrent.futures.Future[T] = concurrent.futures.Future()
        holder: list[asyncio.Task[T]] = []

        def start() -> None:
            if not done.set_running_or_notify_cancel():
                coro.close()
                return
            task = loop.create_task(coro, context=context)
            holder.append(task)
            task.add_done_callback(lambda t: _settle(t, done))

        loop.call_soon_threadsafe(start)
        try:
            return done.result()
        except BaseException:
            # The caller gave up (KeyboardInterrupt, say): do not leave the query running.
            if not done.done():
                loop.call_soon_threadsafe(lambda: holder and holder[0].cancel())
            raise


def _settle(task: asyncio.Task[T], done: concurrent.futures.Future[T]) -> None:
    if task.cancelled():
        done.cancel()
        return
    exc = task.exception()
    if exc is not None:
        done.set_exception(exc)
    else:
        done.set_result(task.result())


_background = _Background()
_MISS: Any = object()


def _after_fork() -> None:
    # A forked child has neither the loop thread nor the pool threads: start afresh.
    global _background, _executor
    _background = _Background()
    _executor = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)


class LoopMemo:
    """Which objects have needed a real loop; held weakly so nothing is kept alive."""

    def __init__(self) -> None:
        self._seen: dict[int, weakref.ref[Any]] = {}
        self._lock = threading.Lock()

    def needs_loop(self, key: object) -> bool:
        ref = self._seen.get(id(key))
        return ref is not None and ref() is key

    def remember(self, key: object) -> None:
        try:
            ref = weakref.ref(key, self._forget(id(key)))
        except TypeError:
            return  # not weak-referenceable: it will just be tried inline again
        with self._lock:
            self._seen[id(key)] = ref

    def _forget(self, ident: int) -> Callable[[weakref.ref[Any]], None]:
        def forget(ref: weakref.ref[Any]) -> None:
            with self._lock:
                if self._seen.get(ident) is ref:
                    del self._seen[ident]

        return forget


memo = LoopMemo()


def run_sync(
    make: Callable[[], Coroutine[Any, Any, T]],
    *,
    key: object = None,
    context: contextvars.Context | None = None,
    accept: Callable[[], bool] | None = None,
) -> T:
    """Complete ``make()`` from sync code, inline when it never suspends.

    ``make`` is called once, or twice when the inline attempt has to be abandoned,
    so it must build a fresh coroutine each time. ``accept`` may veto an inline
    result that completed (the retriever vetoes one whose composite logged a member
    failure, which could have been caused by the missing loop itself).
    """
    if asyncio._get_running_loop() is not None:
        # Inside a running loop (a notebook, an async framework calling sync code):
        # this thread's loop is blocked by our caller, so the work goes elsewhere.
        if _background.is_current_thread():
            return _run_on_fresh_thread(make, context)
        return _background.run(make(), context)
    if key is None or not memo.needs_loop(key):
        value = _inline(make(), context)
        if value is not _MISS and (accept is None or accept()):
            return value  # type: ignore[no-any-return]
        if key is not None:
            value = _background.run(make(), context)
            memo.remember(key)
            return value
    return _background.run(make(), context)


def _inline(coro: Coroutine[Any, Any, T], context: contextvars.Context | None) -> Any:
    """Drive ``coro`` with no loop; its result, or ``_MISS`` if it needs one."""
    # With no running loop, asyncio.gather and ensure_future fall back to the
    # thread's policy loop, creating one in the main thread, and would leave tasks
    # queued on a loop nobody runs. Hide it (thread-local state) for the attempt.
    local = getattr(asyncio.get_event_loop_policy(), "_local", None)
    if local is None or not hasattr(local, "_set_called"):
        coro.close()  # an unknown policy: do not guess, use the real loop
        return _MISS
    saved = (local._loop, local._set_called)
    local._loop, local._set_called = None, True
    send = coro.send if context is None else _bind_send(coro, context)
    try:
        while True:
            if send(None) is not None:
                # It is waiting on a future: only a loop can finish this.
                _close(coro)
                return _MISS
            # A bare yield (``asyncio.sleep(0)``) asks to be resumed: do so.
    except StopIteration as stop:
        return stop.value
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as exc:  # every failure is retried on a loop
        _close_unstarted(exc.__traceback__)
        del exc
        return _MISS
    finally:
        local._loop, local._set_called = saved


def _bind_send(
    coro: Coroutine[Any, Any, T], context: contextvars.Context
) -> Callable[[None], Any]:
    def send(value: None) -> Any:
        return context.run(coro.send, value)

    return send


def _close(coro: Coroutine[Any, Any, Any]) -> None:
    try:
        coro.close()
    except Exception:
        pass


def _close_unstarted(tb: TracebackType | None) -> None:
    """Close coroutines an abandoned attempt created but never started.

    A composite builds its members' coroutines before it reaches for the loop; left
    alone they would each warn "coroutine was never awaited" when collected.
    """
    while tb is not None:
        for value in tb.tb_frame.f_locals.values():
            for candidate in value if isinstance(value, (list, tuple)) else (value,):
                if (
                    inspect.iscoroutine(candidate)
                    and inspect.getcoroutinestate(candidate) == inspect.CORO_CREATED
                ):
                    candidate.close()
        tb = tb.tb_next


def _run_on_fresh_thread(
    make: Callable[[], Coroutine[Any, Any, T]], context: contextvars.Context | None
) -> T:
    """Sync code called from the background loop itself: waiting on it would deadlock."""
    box: list[Any] = []

    def work() -> None:
        try:
            coro = make()
            if context is None:
                box.append((True, asyncio.run(coro)))
            else:
                box.append((True, context.run(asyncio.run, coro)))
        except BaseException as exc:
            box.append((False, exc))

    thread = threading.Thread(target=work, name="agentkit-langchain-nested", daemon=True)
    thread.start()
    thread.join()
    ok, value = box[0]
    if ok:
        return value  # type: ignore[no-any-return]
    raise value
