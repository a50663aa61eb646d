"""agentkit.interop's sync runner: once, on one loop, cancellable, fork-safe."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import multiprocessing
import random
import signal
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from agentkit.interop import _runner, blocking_pool, run_blocking, run_sync
from agentkit.kernel.errors import InvalidArgument, InvalidArgumentType, SyncCallOnLoopThread

REQUEST = contextvars.ContextVar[str]("REQUEST", default="none")


class Counting:
    """A query with a side effect per run, which suspends like real I/O does."""

    def __init__(self) -> None:
        self.runs = 0
        self.loops: list[asyncio.AbstractEventLoop] = []

    async def query(self, value: int) -> int:
        self.runs += 1
        self.loops.append(asyncio.get_running_loop())
        await asyncio.sleep(0)
        return value * 2


class LoopBound:
    """Like an HTTP client session: usable only on the loop it was first used on."""

    def __init__(self) -> None:
        self.loop: asyncio.AbstractEventLoop | None = None
        self.lock: asyncio.Lock | None = None

    async def use(self) -> int:
        loop = asyncio.get_running_loop()
        if self.loop is None:
            self.loop, self.lock = loop, asyncio.Lock()
        if loop is not self.loop:
            raise RuntimeError("bound to a different event loop")
        assert self.lock is not None
        async with self.lock:
            await asyncio.sleep(0.001)
        return 1


class Slow:
    """Blocks on I/O until cancelled, then takes a while to clean up."""

    def __init__(self) -> None:
        self.started = threading.Event()
        self.cancelled = False
        self.cleaned_up = False

    async def query(self) -> str:
        self.started.set()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            self.cancelled = True
            await asyncio.shield(asyncio.sleep(0.05))  # e.g. closing a connection
            self.cleaned_up = True
            raise
        return "finished"


def _other_tasks() -> set[asyncio.Task[Any]]:
    return {t for t in asyncio.all_tasks() if t is not asyncio.current_task()}


async def _running_loop() -> tuple[asyncio.AbstractEventLoop, threading.Thread]:
    return asyncio.get_running_loop(), threading.current_thread()


def _stop(loop: asyncio.AbstractEventLoop, thread: threading.Thread) -> None:
    loop.call_soon_threadsafe(loop.stop)
    thread.join(10)
    assert not thread.is_alive() and not loop.is_running()
    loop.close()


async def _pending_on_background_loop() -> set[asyncio.Task[Any]]:
    return _other_tasks()


# --- exactly once, in the caller's context, on one loop ---


def test_the_coroutine_is_made_once_and_run_once() -> None:
    src = Counting()
    made = 0

    def make() -> Any:
        nonlocal made
        made += 1
        return src.query(21)

    assert run_sync(make) == 42
    assert (made, src.runs) == (1, 1)
    for i in range(20):
        assert run_sync(lambda i=i: src.query(i)) == 2 * i  # type: ignore[misc]
    assert src.runs == 21


def test_every_call_runs_on_the_same_long_lived_loop_thread() -> None:
    src = Counting()
    threads: list[str] = []

    async def where() -> None:
        threads.append(threading.current_thread().name)
        await src.query(1)

    for _ in range(5):
        run_sync(where)
    assert len(set(map(id, src.loops))) == 1
    assert threads == ["agentkit-interop-loop"] * 5
    assert src.loops[0] is not None


def test_objects_reach_the_coroutine_as_they_are() -> None:
    sent = object()
    seen: list[object] = []

    async def keep(obj: object) -> None:
        seen.append(obj)

    run_sync(lambda: keep(sent))
    assert seen[0] is sent


def test_contextvars_flow_in_and_changes_do_not_leak_out() -> None:
    async def read_then_write() -> str:
        value = REQUEST.get()
        REQUEST.set("changed by the coroutine")
        return value

    token = REQUEST.set("caller-42")
    try:
        assert run_sync(read_then_write) == "caller-42"
        assert REQUEST.get() == "caller-42"
    finally:
        REQUEST.reset(token)


def test_loop_bound_resources_keep_working_across_calls_from_many_threads() -> None:
    resource = LoopBound()
    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(lambda _: run_sync(resource.use), range(40)))
    assert results == [1] * 40


@pytest.fixture
def own_runner_state() -> Iterator[None]:
    """A runner state of this test's own, so stopping its loop spares the shared one
    (other tests' loop-bound resources live there)."""
    shared = _runner._state
    _runner._state = _runner._State()
    try:
        yield
    finally:
        mine = run_sync(_running_loop)
        _runner._state = shared
        _stop(*mine)


def test_a_loop_whose_thread_ended_is_replaced_on_the_next_call(own_runner_state: None) -> None:
    # run_forever returns only if something stops the loop (or an exception escapes
    # it); the next call must not queue work on a loop nobody runs.
    old, thread = run_sync(_running_loop)
    _stop(old, thread)
    src = Counting()
    assert run_sync(lambda: src.query(4), timeout=10) == 8
    assert src.loops[0] is not old and src.loops[0].is_running()


async def test_works_from_inside_a_running_loop() -> None:
    src = Counting()
    caller_loop = asyncio.get_running_loop()
    assert run_sync(lambda: src.query(5)) == 10
    assert src.runs == 1 and src.loops[0] is not caller_loop


def test_errors_reach_the_caller_unchanged() -> None:
    async def fail() -> None:
        await asyncio.sleep(0)
        raise LookupError("backend said no")

    with pytest.raises(LookupError, match="backend said no"):
        run_sync(fail)


def test_a_coroutine_cancelled_from_inside_raises_cancelled_not_none() -> None:
    async def cancels_itself() -> int:
        task = asyncio.current_task()
        assert task is not None
        task.cancel()
        await asyncio.sleep(0)
        return 1

    with pytest.raises(concurrent.futures.CancelledError):
        run_sync(cancels_itself)
    src = Counting()
    assert run_sync(lambda: src.query(2)) == 4


def test_a_keyboard_interrupt_raised_inside_goes_to_the_caller_and_the_loop_lives_on() -> None:
    async def interrupted() -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_sync(interrupted)
    src = Counting()
    assert run_sync(lambda: src.query(2)) == 4


def test_called_on_the_loop_thread_it_refuses_instead_of_deadlocking() -> None:
    made: list[int] = []

    async def inner() -> int:
        made.append(1)
        return 1

    async def outer() -> int:
        return run_sync(inner)  # sync code reached from the loop itself

    with pytest.raises(SyncCallOnLoopThread, match="await the async entry point"):
        run_sync(outer, timeout=5)
    assert made == []  # refused before the coroutine was even created


@pytest.mark.parametrize("timeout", [0, -1, float("nan"), float("inf")])
def test_bad_timeouts_are_refused(timeout: float) -> None:
    with pytest.raises(InvalidArgument, match="timeout"):
        run_sync(lambda: asyncio.sleep(0), timeout=timeout)


def test_bad_arguments_name_the_problem() -> None:
    with pytest.raises(InvalidArgumentType, match="timeout"):
        run_sync(lambda: asyncio.sleep(0), timeout="1")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentType, match="coroutine"):
        run_sync(lambda: 42)  # type: ignore[arg-type, return-value]


# --- cancellation: the caller gives up, the task does not run on unseen ---


def test_a_timeout_in_a_worker_thread_cancels_the_task_too() -> None:
    slow = Slow()
    with ThreadPoolExecutor(1) as pool:
        waiting = pool.submit(run_sync, slow.query, timeout=0.05)
        with pytest.raises(TimeoutError, match="cancelled"):
            waiting.result(10)
    assert slow.cancelled and slow.cleaned_up
    assert run_sync(_pending_on_background_loop) == set()


def test_timeout_cancels_the_task_and_waits_for_it_to_unwind() -> None:
    slow = Slow()
    with pytest.raises(TimeoutError, match="cancelled"):
        run_sync(slow.query, timeout=0.05)
    assert slow.cancelled and slow.cleaned_up  # unwound before run_sync returned
    assert run_sync(_pending_on_background_loop) == set()


@pytest.fixture
def sigint_raises() -> Iterator[None]:
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def test_ctrl_c_while_waiting_cancels_the_task(sigint_raises: None) -> None:
    assert threading.current_thread() is threading.main_thread()
    slow = Slow()
    main = threading.main_thread().ident
    assert main is not None

    def press_ctrl_c() -> None:
        slow.started.wait(10)
        signal.pthread_kill(main, signal.SIGINT)

    presser = threading.Thread(target=press_ctrl_c)
    presser.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            run_sync(slow.query)
    finally:
        presser.join()
    assert slow.cancelled and slow.cleaned_up
    assert run_sync(_pending_on_background_loop) == set()


def test_ctrl_c_at_any_moment_leaves_no_task_running(sigint_raises: None) -> None:
    """Wherever the interrupt lands (before, during or right after submission), the
    query is either never started or cancelled and unwound before the caller resumes."""
    main = threading.main_thread().ident
    assert main is not None
    rng = random.Random(11)
    started = 0
    for _ in range(80):
        slow = Slow()
        go = threading.Event()
        delay = rng.uniform(0, 0.001)

        def press_ctrl_c(go: threading.Event = go, delay: float = delay) -> None:
            go.wait()
            time.sleep(delay)
            signal.pthread_kill(main, signal.SIGINT)

        presser = threading.Thread(target=press_ctrl_c)
        presser.start()
        try:
            go.set()
            run_sync(slow.query)
        except KeyboardInterrupt:
            pass
        presser.join()
        if slow.started.is_set():
            started += 1
            assert slow.cancelled and slow.cleaned_up
        assert run_sync(_pending_on_background_loop) == set()
    assert started > 0  # the interrupt did land inside running queries


# --- fork ---


def _child(conn: Any) -> None:
    try:
        src = Counting()
        doubled = run_sync(lambda: src.query(21))
        blocked = run_sync(lambda: run_blocking(sum, [1, 2, 3]))
        conn.send((doubled, blocked, src.runs))
    except BaseException as exc:  # report, never hang the parent
        conn.send(repr(exc))
    finally:
        conn.close()


def test_a_forked_child_gets_its_own_loop_and_pool() -> None:
    # The parent's loop thread and pool threads exist before the fork...
    assert run_sync(lambda: run_blocking(len, "abc")) == 3
    fork = multiprocessing.get_context("fork")
    parent_end, child_end = fork.Pipe()
    child = fork.Process(target=_child, args=(child_end,))
    child.start()
    try:
        assert parent_end.poll(30), "the child never answered (hung on the parent's loop?)"
        assert parent_end.recv() == (42, 6, 1)
    finally:
        child.join(30)
        if child.is_alive():
            child.kill()
            child.join()
    assert child.exitcode == 0
    # ...and the parent's keep working afterwards.
    assert run_sync(lambda: run_blocking(len, "abcd")) == 4


# --- run_blocking ---


async def test_run_blocking_runs_a_wide_fan_out_concurrently() -> None:
    # Sixteen calls that each wait for all the others: they only finish if all
    # sixteen run at once, which the default executor (6 threads here) cannot do.
    width = 16
    barrier = threading.Barrier(width, timeout=10)
    names = await asyncio.gather(*(run_blocking(_meet, barrier) for _ in range(width)))
    assert all(name.startswith("agentkit-interop") for name in names)


def _meet(barrier: threading.Barrier) -> str:
    barrier.wait()
    return threading.current_thread().name


async def test_run_blocking_carries_the_context() -> None:
    REQUEST.set("request-7")
    assert await run_blocking(REQUEST.get) == "request-7"


async def test_cancelling_the_awaiter_returns_at_once() -> None:
    release = threading.Event()
    task = asyncio.create_task(run_blocking(release.wait, 30))
    await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert not release.is_set()  # the awaiter did not wait for the thread
    release.set()


def test_blocking_pool_is_one_pool() -> None:
    assert blocking_pool() is blocking_pool()
