"""Periodic TTL sweeps for ``AgentkitStore``, run the way LangGraph's stores run theirs.

LangGraph's sync stores sweep on a daemon thread that waits on a ``threading.Event``
and hand back a ``concurrent.futures.Future`` (cancelling it stops the thread); its
async stores sweep in an ``asyncio`` task that waits on an ``asyncio.Event``. Both are
here, each owning its stop event, so a stop wakes a sweeper in the middle of its wait
instead of after a whole interval. A failed sweep is logged and the next one still
runs: one bad round (a dropped connection) must not end expiry for the process.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
from collections.abc import Awaitable, Callable

__all__ = ["TaskSweeper", "ThreadSweeper"]

logger = logging.getLogger("agentkit_langchain.langgraph_store")

THREAD_NAME = "agentkit-ttl-sweeper"
TASK_NAME = "agentkit-ttl-sweeper"


def _swept(count: int) -> None:
    if count:
        logger.info("AgentkitStore swept %d expired items", count)


class ThreadSweeper:
    """Calls ``sweep()`` every ``interval`` seconds on a daemon thread until stopped."""

    def __init__(self, sweep: Callable[[], int], interval: float) -> None:
        self._sweep = sweep
        self._interval = interval
        self._stop = threading.Event()
        self.future: concurrent.futures.Future[None] = concurrent.futures.Future()
        # Cancelling the future is LangGraph's way to stop a sync sweeper.
        self.future.add_done_callback(lambda f: self._stop.set() if f.cancelled() else None)
        self._thread = threading.Thread(target=self._run, name=THREAD_NAME, daemon=True)
        self._thread.start()

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            try:
                _swept(self._sweep())
            except Exception:
                logger.exception("AgentkitStore TTL sweep failed")
        try:
            self.future.set_result(None)
        except concurrent.futures.InvalidStateError:
            pass  # the caller cancelled the future: that is how it stopped us

    def stop(self, timeout: float | None) -> bool:
        """Ask the thread to end and wait up to ``timeout`` seconds; True once it ended."""
        self._stop.set()
        if threading.current_thread() is not self._thread:
            self._thread.join(timeout)
        return not self._thread.is_alive()


class TaskSweeper:
    """Awaits ``sweep()`` every ``interval`` seconds in a task of the running loop."""

    def __init__(self, sweep: Callable[[], Awaitable[int]], interval: float) -> None:
        self._sweep = sweep
        self._interval = interval
        self._stop = asyncio.Event()
        self.task: asyncio.Task[None] = asyncio.get_running_loop().create_task(
            self._run(), name=TASK_NAME
        )

    @property
    def running(self) -> bool:
        return not self.task.done()

    async def _run(self) -> None:
        while True:
            try:
                await asyncio.wait_for(self._stop.wait(), timeout=self._interval)
                return
            except TimeoutError:
                pass
            try:
                _swept(await self._sweep())
            except Exception:
                logger.exception("AgentkitStore TTL sweep failed")

    async def stop(self, timeout: float | None) -> bool:  # noqa: ASYNC109 (LangGraph's API)
        """End the task; past ``timeout`` seconds it is cancelled (True once it ended).

        A sweep in flight gets ``timeout`` to finish, then is cancelled and awaited, so no
        task outlives the call; if this call itself is cancelled the task is cancelled too.
        """
        self._stop.set()
        try:
            await asyncio.wait({self.task}, timeout=timeout)
        finally:
            if not self.task.done():
                self.task.cancel()
                await asyncio.wait({self.task})
        return self.task.done()
