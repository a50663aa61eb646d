"""The reader pool under the SQLite store: fair between tenants, awaited from asyncio.

Every ordering here is forced with events, never with sleeps or timings; the timeouts
only end a hung run.
"""

from __future__ import annotations

import asyncio
import threading

import pytest

from agentkit.vector import _fair_pool
from agentkit.vector._fair_pool import FairPool

HANG = 60  # seconds: only a guard against a run that never ends


def blocker() -> tuple[threading.Event, threading.Event]:
    return threading.Event(), threading.Event()


def hold(entered: threading.Event, release: threading.Event) -> str:
    entered.set()
    assert release.wait(HANG)
    return threading.current_thread().name


async def test_results_and_errors_reach_the_caller() -> None:
    pool = FairPool(2, per_key=1, name="t")
    try:
        assert await pool.submit("a", lambda x, y: x + y, 2, 3) == 5
        with pytest.raises(KeyError, match="missing"):
            await pool.submit("a", {}.__getitem__, "missing")
        assert await pool.submit("a", int, "7") == 7  # the thread survived the error
        with pytest.raises(RuntimeError, match="StopIteration") as raised:
            await asyncio.wait_for(pool.submit("a", next, iter(())), HANG)
        assert isinstance(raised.value.__cause__, StopIteration)
    finally:
        await asyncio.to_thread(pool.shutdown)


async def test_a_key_at_its_share_leaves_a_thread_for_another_key() -> None:
    pool = FairPool(2, per_key=1, name="t")
    entered, release = blocker()
    try:
        first = pool.submit("flood", hold, entered, release)
        assert await asyncio.to_thread(entered.wait, HANG)
        more = [pool.submit("flood", str, i) for i in range(3)]  # queued behind the share
        assert await asyncio.wait_for(pool.submit("other", str, "x"), HANG) == "x"
        assert not any(f.done() for f in more), "the flood got a second thread"
        release.set()
        await asyncio.wait_for(first, HANG)
        assert await asyncio.wait_for(asyncio.gather(*more), HANG) == ["0", "1", "2"]
    finally:
        release.set()
        await asyncio.to_thread(pool.shutdown)


async def test_a_job_cancelled_before_it_starts_never_runs() -> None:
    pool = FairPool(1, per_key=1, name="t")
    entered, release = blocker()
    ran: list[int] = []
    try:
        first = pool.submit("a", hold, entered, release)
        assert await asyncio.to_thread(entered.wait, HANG)
        queued = pool.submit("a", ran.append, 1)
        queued.cancel()
        release.set()
        await asyncio.wait_for(first, HANG)
        assert await asyncio.wait_for(pool.submit("a", ran.append, 2), HANG) is None
        assert ran == [2]
    finally:
        release.set()
        await asyncio.to_thread(pool.shutdown)


async def test_one_query_at_a_time_stays_on_the_thread_that_ran_last() -> None:
    """The thread that finished last takes the next job, so its caches stay warm."""
    pool = FairPool(3, per_key=3, name="t")
    gates = [blocker() for _ in range(3)]
    try:
        held = [pool.submit("a", hold, *gate) for gate in gates]
        for entered, _ in gates:
            assert await asyncio.to_thread(entered.wait, HANG)
        for _, release in gates:
            release.set()
        names = set(await asyncio.wait_for(asyncio.gather(*held), HANG))
        assert len(names) == 3
        name = threading.current_thread
        ran = [await pool.submit("a", lambda: name().name) for _ in range(20)]
        assert len(set(ran)) == 1
    finally:
        for _, release in gates:
            release.set()
        await asyncio.to_thread(pool.shutdown)


async def test_idle_threads_leave(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_fair_pool, "_IDLE_SECONDS", 0.01)
    pool = FairPool(2, per_key=2, name="idle")
    assert await pool.submit("a", str, 1) == "1"
    for _ in range(HANG * 100):
        if not any(t.name.startswith("idle-") for t in threading.enumerate()):
            break
        await asyncio.sleep(0.01)
    assert not any(t.name.startswith("idle-") for t in threading.enumerate())
    assert await pool.submit("a", str, 2) == "2"  # a new thread starts on demand
    await asyncio.to_thread(pool.shutdown)


async def test_shutdown_runs_what_is_queued_then_refuses() -> None:
    pool = FairPool(1, per_key=1, name="t")
    entered, release = blocker()
    first = pool.submit("a", hold, entered, release)
    assert await asyncio.to_thread(entered.wait, HANG)
    queued = pool.submit("b", str, "late")
    stopping = asyncio.create_task(asyncio.to_thread(pool.shutdown))
    release.set()
    await asyncio.wait_for(stopping, HANG)
    assert await first and await queued == "late"
    with pytest.raises(RuntimeError):
        pool.submit("a", str, 1)


def test_a_job_outliving_its_event_loop_leaves_the_pool_working() -> None:
    """asyncio.run ends (its loop closes) while a job runs: the result has nowhere to
    go, and the thread goes on serving other loops."""
    pool = FairPool(1, per_key=1, name="t")
    entered, release = blocker()

    async def abandon() -> None:
        pool.submit("a", hold, entered, release)
        assert await asyncio.to_thread(entered.wait, HANG)

    asyncio.run(abandon())
    release.set()

    async def again() -> str:
        return await asyncio.wait_for(pool.submit("a", str, "ok"), HANG)

    assert asyncio.run(again()) == "ok"
    pool.shutdown()
