"""Where the bridge's blocking and sync work runs.

Two resources, both owned by the bridge and created on first use:

- a thread pool for LlamaIndex's sync-only retrievers and postprocessors. The default
  executor is ``min(32, cpu + 4)`` threads (6 on a 2-core box), so eight sync retrievers
  fanned out through it would take two rounds;
- one long-lived event loop on a daemon thread, for sync callers of async memory. A
  loop per call (``asyncio.run``) costs hundreds of microseconds and breaks loop-bound
  clients first used on another loop; one shared loop keeps them valid.

``SyncRunner`` adds the cheap path: a query that completed without ever suspending is
next time run straight through in the caller's thread, with no loop and no thread hop.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import threading
from collections.abc import Callable, Coroutine, Generator
from typing import Any, TypeVar

T = TypeVar("T")

POOL_WORKERS = 32

_lock = threading.Lock()
_pool: concurrent.futures.ThreadPoolExecutor | None = None
_loop: asyncio.AbstractEventLoop | None = None
_loop_thread: threading.Thread | None = None


def bridge_pool() -> concurrent.futures.ThreadPoolExecutor:
    """The bridge's worker pool, wide enough for a wide fan-out of sync retrievers."""
    global _pool
    if _pool is None:
        with _lock:
            if _pool is None:
                _pool = concurrent.futures.ThreadPoolExecutor(
                    max_workers=POOL_WORKERS, thread_name_prefix="agentkit-llamaindex"
                )
    return _pool


async def run_blocking(fn: Callable[..., T], *args: Any) -> T:
    """Run a sync call on the bridge pool, carrying contextvars (LlamaIndex spans)."""
    loop = asyncio.get_running_loop()
    context = contextvars.copy_context()
    return await loop.run_in_executor(bridge_pool(), context.run, fn, *args)


def background_loop() -> asyncio.AbstractEventLoop:
    """The bridge's own event loop, running forever on a daemon thread."""
    global _loop, _loop_thread
    loop = _loop
    if loop is not None and not loop.is_closed():
        return loop
    with _lock:
        if _loop is None or _loop.is_closed():
            new_loop = asyncio.new_event_loop()
            thread = threading.Thread(
                target=new_loop.run_forever, name="agentkit-llamaindex-loop", daemon=True
            )
            thread.start()
            _loop, _loop_thread = new_loop, thread
        return _loop


class _NeedsLoop(BaseException):
    """Raised by the trap loop: the coroutine wanted a real event loop after all.

    A BaseException so ordinary ``except Exception`` handlers in user code let it pass.
    """


class _TrapLoop:
    """Stands in as the running loop during an inline run; any use means "suspends"."""

    def __getattribute__(self, name: str) -> Any:
        raise _NeedsLoop(name)


_TRAP = _TrapLoop()
_MISSING = object()


def _run_inline(coro: Coroutine[Any, Any, T]) -> Any:
    """Drive ``coro`` in this thread without a loop; ``_MISSING`` if it tried to suspend."""
    previous = asyncio.events._get_running_loop()
    asyncio.events._set_running_loop(_TRAP)  # type: ignore[arg-type]
    try:
        coro.send(None)
    except StopIteration as stop:
        return stop.value
    except _NeedsLoop:
        return _MISSING
    else:
        try:
            coro.close()
        except BaseException:
            pass
        return _MISSING
    finally:
        asyncio.events._set_running_loop(previous)


class _Watch:
    """Delegates to a coroutine like ``await`` does, noting whether it ever suspended."""

    __slots__ = ("coro", "suspended")

    def __init__(self, coro: Coroutine[Any, Any, Any]) -> None:
        self.coro = coro
        self.suspended = False

    def __await__(self) -> Generator[Any, Any, Any]:
        coro = self.coro
        value: Any = None
        error: BaseException | None = None
        while True:
            try:
                yielded = coro.send(value) if error is None else coro.throw(error)
            except StopIteration as stop:
                return stop.value
            self.suspended = True
            try:
                value, error = (yield yielded), None
            except BaseException as exc:  # cancellation and friends go to the coroutine
                value, error = None, exc

    async def run(self) -> Any:
        return await self


class SyncRunner:
    """Runs an async memory call to completion from sync code, loop or no loop.

    The first call goes to the background loop and watches whether the coroutine
    suspended. If it never did, later calls run inline: one ``send(None)`` in the
    caller's thread while a trap stands in for the running loop. Should the coroutine
    reach for the loop after all, the inline attempt is closed and the call goes to
    the background loop, which it uses from then on.
    """

    __slots__ = ("inline",)

    def __init__(self) -> None:
        self.inline: bool | None = None

    def run(self, make: Callable[[], Coroutine[Any, Any, T]]) -> T:
        if self.inline:
            context = contextvars.copy_context()
            result = context.run(_run_inline, make())
            if result is not _MISSING:
                return result  # type: ignore[no-any-return]
            self.inline = False
        loop = background_loop()
        if threading.current_thread() is _loop_thread:
            raise RuntimeError(
                "a sync retrieve was called on the bridge's own event loop thread; "
                "await aretrieve() there instead"
            )
        watch = _Watch(make())
        future = asyncio.run_coroutine_threadsafe(watch.run(), loop)
        try:
            result = future.result()
        except BaseException:
            future.cancel()
            raise
        if self.inline is None:
            self.inline = not watch.suspended
        return result  # type: ignore[no-any-return]


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
