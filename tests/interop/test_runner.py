"""agentkit.interop's sync runner: once, on one loop, cancellable, fork-safe."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import gc
import multiprocessing
import random
import signal
import threading
import time
from collections.abc import Callable, Coroutine, Iterator
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
        self.thread: int | None = None

    async def query(self) -> str:
        self.thread = threading.get_ident()
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


async def _pending_on_background_loop() -> set[asyncio.Task[Any]]:
    return _other_tasks()


async def _loop_of_the_call() -> asyncio.AbstractEventLoop:
    return asyncio.get_running_loop()


async def _thread_of_the_call() -> int:
    await asyncio.sleep(0)
    return threading.get_ident()


def _wait_until(condition: Callable[[], bool]) -> None:
    """Wait (generously) for something the runner does right after a call returns."""
    deadline = time.monotonic() + 10
    while not condition():
        assert time.monotonic() < deadline, "the runner never got there"
        time.sleep(0.001)


def _in_thread(fn: Callable[[], object]) -> tuple[threading.Thread, list[object]]:
    """Run ``fn`` on a new thread; its outcome (value or exception) lands in the list."""
    outcome: list[object] = []

    def target() -> None:
        try:
            outcome.append(fn())
        except BaseException as exc:
            outcome.append(exc)

    thread = threading.Thread(target=target)
    thread.start()
    return thread, outcome


async def _until(flag: threading.Event) -> None:
    # A thread's event, polled on the loop rather than waited for (which would block
    # the loop), so every other task on the loop keeps running meanwhile.
    while not flag.is_set():  # noqa: ASYNC110 (set by another thread)
        await asyncio.sleep(0.001)


@pytest.fixture
def own_runner_state() -> Iterator[None]:
    """A runner state of this test's own: its driver and counters start fresh, and
    closing its loop spares the shared one (other tests' loop-bound resources live there).

    A test that asserts who drives the loop needs it: right after any remote call the
    background driver may still hold the shared loop for a moment, and a caller arriving
    then rightly goes remote instead of driving it itself."""
    shared = _runner._state
    mine = _runner._State()
    _runner._state = mine
    try:
        yield
    finally:
        _runner._state = shared
        _wait_until(lambda: mine.mode == _runner._IDLE and mine.pending == 0)
        if mine.loop is not None and not mine.loop.is_closed():
            mine.loop.close()


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


def test_calls_from_any_thread_run_on_the_one_long_lived_loop() -> None:
    src = Counting()
    for _ in range(3):
        run_sync(lambda: src.query(1))
    with ThreadPoolExecutor(4) as pool:
        list(pool.map(lambda _: run_sync(lambda: src.query(1)), range(12)))
    other = threading.Thread(target=run_sync, args=(lambda: src.query(1),))
    other.start()
    run_sync(lambda: src.query(1))
    other.join(10)
    assert len(src.loops) == 17
    assert len(set(map(id, src.loops))) == 1  # one loop object, whichever thread called
    assert not src.loops[0].is_closed()


def test_a_free_caller_drives_the_loop_itself(own_runner_state: None) -> None:
    """The common case pays no thread hop: the query runs on the caller's own thread,
    and no other thread is ever started to run it."""
    seen: list[int] = []

    async def where() -> int:
        seen.append(threading.get_ident())
        await asyncio.sleep(0)  # a real suspension, still on this thread
        seen.append(threading.get_ident())
        return threading.get_ident()

    before = set(threading.enumerate())
    assert run_sync(where) == threading.get_ident()
    results: list[int] = []
    worker = threading.Thread(target=lambda: results.append(run_sync(where)))
    worker.start()
    worker.join(10)
    assert results == [worker.ident]
    assert seen == [threading.get_ident()] * 2 + [worker.ident] * 2
    assert _runner._state.driver is None  # no background driver was ever needed
    assert set(threading.enumerate()) - before == set()  # no thread started to stay
    assert _runner._state.mode == _runner._IDLE


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


def test_a_closed_loop_is_replaced_on_the_next_call(own_runner_state: None) -> None:
    # Nothing of ours closes the loop; should anything ever do it, the next call must
    # not queue work on a loop nobody can run.
    old = run_sync(_loop_of_the_call)
    old.close()
    src = Counting()
    assert run_sync(lambda: src.query(4), timeout=10) == 8
    assert src.loops[0] is not old and not src.loops[0].is_closed()


async def test_works_from_inside_a_running_loop() -> None:
    # This thread's loop cannot be left to drive another: the call goes to the shared
    # loop, driven by the background driver, and this thread waits.
    src = Counting()
    caller_loop = asyncio.get_running_loop()
    seen: list[int] = []

    async def query() -> int:
        seen.append(threading.get_ident())
        return await src.query(5)

    assert run_sync(query) == 10
    assert src.runs == 1 and src.loops[0] is not caller_loop
    assert src.loops[0] is run_sync(_loop_of_the_call)  # the one shared loop
    assert seen and seen[0] != threading.get_ident()


async def test_the_background_driver_lets_go_once_remote_calls_are_done(
    own_runner_state: None,
) -> None:
    state = _runner._state
    assert run_sync(_loop_of_the_call) is state.loop
    assert state.driver is not None
    _wait_until(lambda: state.mode == _runner._IDLE)
    # ...so a free thread drives the loop itself again.
    got: list[int] = []
    worker = threading.Thread(target=lambda: got.append(run_sync(_thread_of_the_call)))
    worker.start()
    worker.join(10)
    assert got == [worker.ident]


def test_a_call_that_outlives_the_driving_caller_is_handed_over(own_runner_state: None) -> None:
    """B arrives while A drives the loop, so B's call runs on A's loop run; A's query
    ends first and A returns at once (B's work is not A's to wait for): the background
    driver takes the loop over and finishes B's query."""
    a_driving, b_running, a_returned = threading.Event(), threading.Event(), threading.Event()
    b_threads: list[int] = []

    async def a_query() -> int:
        a_driving.set()
        await _until(b_running)
        return threading.get_ident()

    async def b_query() -> str:
        b_threads.append(threading.get_ident())
        b_running.set()
        await _until(a_returned)
        b_threads.append(threading.get_ident())
        return "b"

    def a_call() -> object:
        try:
            return run_sync(a_query, timeout=20)
        finally:
            a_returned.set()

    a, a_outcome = _in_thread(a_call)
    assert a_driving.wait(10)
    b, b_outcome = _in_thread(lambda: run_sync(b_query, timeout=20))
    a.join(20)
    b.join(20)
    assert a_outcome == [a.ident]  # A drove its own call...
    assert b_outcome == ["b"]
    driver = _runner._state.driver
    assert driver is not None and driver.name == "agentkit-interop-loop"
    # ...and B's began on A's thread, then the background driver finished it.
    assert b_threads == [a.ident, driver.ident]


def test_a_call_done_before_the_driving_caller_returns_at_once(own_runner_state: None) -> None:
    a_driving, b_returned = threading.Event(), threading.Event()
    b_threads: list[int] = []

    async def a_query() -> str:
        a_driving.set()
        await _until(b_returned)
        return "a"

    async def b_query() -> str:
        await asyncio.sleep(0)
        b_threads.append(threading.get_ident())
        return "b"

    def b_call() -> object:
        try:
            return run_sync(b_query, timeout=20)
        finally:
            b_returned.set()

    a, a_outcome = _in_thread(lambda: run_sync(a_query, timeout=20))
    assert a_driving.wait(10)
    b, b_outcome = _in_thread(b_call)
    b.join(20)
    a.join(20)
    assert (a_outcome, b_outcome) == (["a"], ["b"])
    assert b_threads == [a.ident]  # A's loop run served B: no hand-over was needed


def test_eight_overlapping_callers_each_run_once_on_the_one_loop(own_runner_state: None) -> None:
    """Eight threads call at once, every round: each query waits on the loop until all
    eight are in flight together, so one caller drives while seven wait on it, and
    whichever queries outlive the driver's are handed over."""
    width, rounds = 8, 15
    barrier = threading.Barrier(width, timeout=20)
    made: list[int] = []
    runs: list[tuple[int, int]] = []
    loops: set[int] = set()
    in_flight = [0] * rounds
    all_in = [asyncio.Event() for _ in range(rounds)]

    async def query(r: int, i: int) -> tuple[int, int]:
        loops.add(id(asyncio.get_running_loop()))
        runs.append((r, i))
        in_flight[r] += 1
        if in_flight[r] == width:
            all_in[r].set()
        await all_in[r].wait()  # all eight are on the loop at once
        await asyncio.sleep(0)
        return r, i

    def make(r: int, i: int) -> Coroutine[Any, Any, tuple[int, int]]:
        made.append(1)
        return query(r, i)

    def caller(i: int) -> list[tuple[int, int]]:
        out = []
        for r in range(rounds):
            barrier.wait()
            out.append(run_sync(lambda r=r: make(r, i), timeout=20))  # type: ignore[misc]
        return out

    with ThreadPoolExecutor(width) as pool:
        results = list(pool.map(caller, range(width)))
    assert results == [[(r, i) for r in range(rounds)] for i in range(width)]
    assert len(made) == len(runs) == width * rounds  # made once, run once, every call
    assert sorted(runs) == sorted((r, i) for r in range(rounds) for i in range(width))
    assert loops == {id(_runner._state.loop)}
    _wait_until(lambda: _runner._state.mode == _runner._IDLE)
    assert _runner._state.pending == 0


@pytest.mark.parametrize("suspends", [True, False], ids=["after-suspending", "first-step"])
def test_errors_reach_the_caller_unchanged(suspends: bool) -> None:
    async def fail() -> None:
        if suspends:
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


async def _inner_sync_call(made: list[int]) -> int:
    async def inner() -> int:
        made.append(1)
        return 1

    return run_sync(inner)  # sync code reached from the loop itself


def test_called_on_the_loop_it_refuses_instead_of_deadlocking() -> None:
    made: list[int] = []
    with pytest.raises(SyncCallOnLoopThread, match="await the async entry point"):
        run_sync(lambda: _inner_sync_call(made), timeout=5)  # driven by this thread
    assert made == []  # refused before the coroutine was even created
    assert _runner._state.mode == _runner._IDLE


async def test_called_on_the_loop_it_refuses_when_the_background_driver_runs_it() -> None:
    made: list[int] = []
    with pytest.raises(SyncCallOnLoopThread, match="await the async entry point"):
        run_sync(lambda: _inner_sync_call(made), timeout=5)  # remote: this thread has a loop
    assert made == []


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


@pytest.fixture
def another_driver(own_runner_state: None) -> Iterator[asyncio.Task[Any]]:
    """Another thread drives the shared loop (its own call is in flight), so calls from
    here go remote: submitted to the loop, waited for. Yields that call's task."""
    driving, release = threading.Event(), threading.Event()
    held: list[asyncio.Task[Any]] = []

    async def hold() -> None:
        task = asyncio.current_task()
        assert task is not None
        held.append(task)
        driving.set()
        await _until(release)

    holder, outcome = _in_thread(lambda: run_sync(hold, timeout=60))
    assert driving.wait(10)
    try:
        yield held[0]
    finally:
        release.set()
        holder.join(20)
        assert outcome == [None]


async def _tasks_besides(task: asyncio.Task[Any]) -> set[asyncio.Task[Any]]:
    return _other_tasks() - {task}


def test_a_timeout_in_a_worker_thread_cancels_the_task_too() -> None:
    slow = Slow()
    with ThreadPoolExecutor(1) as pool:
        waiting = pool.submit(run_sync, slow.query, timeout=0.05)
        with pytest.raises(TimeoutError, match="cancelled"):
            waiting.result(10)
    assert slow.cancelled and slow.cleaned_up
    assert run_sync(_pending_on_background_loop) == set()


def test_timeout_cancels_the_task_and_waits_for_it_to_unwind(own_runner_state: None) -> None:
    slow = Slow()
    with pytest.raises(TimeoutError, match="cancelled"):
        run_sync(slow.query, timeout=0.05)
    assert slow.thread == threading.get_ident()  # driven right here
    assert slow.cancelled and slow.cleaned_up  # unwound before run_sync returned
    assert _runner._state.mode == _runner._IDLE
    assert run_sync(_pending_on_background_loop) == set()


def test_a_timeout_cancels_a_call_another_thread_is_driving(
    another_driver: asyncio.Task[Any],
) -> None:
    slow = Slow()
    with pytest.raises(TimeoutError, match="cancelled"):
        run_sync(slow.query, timeout=0.05)
    assert slow.thread not in (None, threading.get_ident())
    assert slow.cancelled and slow.cleaned_up
    assert run_sync(lambda: _tasks_besides(another_driver)) == set()


async def test_a_timeout_inside_a_running_loop_cancels_the_task() -> None:
    slow = Slow()
    with pytest.raises(TimeoutError, match="cancelled"):
        run_sync(slow.query, timeout=0.05)
    assert slow.thread != threading.get_ident()
    assert slow.cancelled and slow.cleaned_up
    assert run_sync(_pending_on_background_loop) == set()


def test_a_query_that_swallows_its_cancellation_still_times_out() -> None:
    unwound = threading.Event()

    async def stubborn() -> str:
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            unwound.set()
        return "too late"

    with pytest.raises(TimeoutError, match="cancelled"):
        run_sync(stubborn, timeout=0.05)
    assert unwound.is_set()


@pytest.fixture
def sigint_raises() -> Iterator[None]:
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _ctrl_c_once_started(slow: Slow) -> threading.Thread:
    main = threading.main_thread().ident
    assert main is not None

    def press_ctrl_c() -> None:
        slow.started.wait(10)
        signal.pthread_kill(main, signal.SIGINT)

    presser = threading.Thread(target=press_ctrl_c)
    presser.start()
    return presser


def test_ctrl_c_while_driving_cancels_the_task(sigint_raises: None, own_runner_state: None) -> None:
    assert threading.current_thread() is threading.main_thread()
    slow = Slow()
    presser = _ctrl_c_once_started(slow)
    try:
        with pytest.raises(KeyboardInterrupt):
            run_sync(slow.query)
    finally:
        presser.join()
    assert slow.thread == threading.get_ident()  # this thread was driving the loop
    assert slow.cancelled and slow.cleaned_up  # and kept driving until it unwound
    assert _runner._state.mode == _runner._IDLE
    assert run_sync(_pending_on_background_loop) == set()


def test_ctrl_c_while_waiting_for_another_driver_cancels_the_task(
    sigint_raises: None, another_driver: asyncio.Task[Any]
) -> None:
    slow = Slow()
    presser = _ctrl_c_once_started(slow)
    try:
        with pytest.raises(KeyboardInterrupt):
            run_sync(slow.query)
    finally:
        presser.join()
    assert slow.thread not in (None, threading.get_ident())
    assert slow.cancelled and slow.cleaned_up
    assert run_sync(lambda: _tasks_besides(another_driver)) == set()


def test_ctrl_c_inside_a_running_loop_cancels_the_task(sigint_raises: None) -> None:
    # A notebook cell: the main thread runs a loop (no asyncio.Runner, which would turn
    # the Ctrl-C into a cancellation of its own) and calls a sync entry point in it.
    slow = Slow()
    presser = _ctrl_c_once_started(slow)

    async def cell() -> str:
        return run_sync(slow.query)

    loop = asyncio.new_event_loop()
    try:
        with pytest.raises(KeyboardInterrupt):
            loop.run_until_complete(cell())
    finally:
        presser.join()
        loop.close()
    assert slow.thread not in (None, threading.get_ident())
    assert slow.cancelled and slow.cleaned_up
    assert run_sync(_pending_on_background_loop) == set()


def _ctrl_c_at_random_moments(check: Callable[[], set[asyncio.Task[Any]]]) -> None:
    """Wherever the interrupt lands (before, during or right after the query starts),
    the query is either never started or cancelled and unwound before the caller
    resumes, and the loop is left in a state the next call can use."""
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
        assert check() == set()
    assert started > 0  # the interrupt did land inside running queries


def test_ctrl_c_at_any_moment_leaves_no_task_running(
    sigint_raises: None, own_runner_state: None
) -> None:
    _ctrl_c_at_random_moments(lambda: run_sync(_pending_on_background_loop))
    assert _runner._state.mode == _runner._IDLE


def test_ctrl_c_at_any_moment_of_a_remote_call_leaves_no_task_running(
    sigint_raises: None, another_driver: asyncio.Task[Any]
) -> None:
    _ctrl_c_at_random_moments(lambda: run_sync(lambda: _tasks_besides(another_driver)))


# --- fork ---


def _child(conn: Any) -> None:
    try:
        # Collecting the parent's loop here would close it, and closing unregisters its
        # wake-up pipe from the epoll instance the parent shares with us.
        gc.collect()
        src = Counting()
        doubled = run_sync(lambda: src.query(21))
        blocked = run_sync(lambda: run_blocking(sum, [1, 2, 3]))

        async def cell() -> int:
            return run_sync(lambda: src.query(1))  # remote: the child's own driver

        remote = asyncio.run(cell())
        conn.send((doubled, blocked, remote, src.runs, len({id(loop) for loop in src.loops})))
    except BaseException as exc:  # report, never hang the parent
        conn.send(repr(exc))
    finally:
        conn.close()


def _len_after_a_while(text: str) -> int:
    time.sleep(0.05)  # so the loop is waiting in select when the result arrives
    return len(text)


def _fork_a_child() -> None:
    fork = multiprocessing.get_context("fork")
    parent_end, child_end = fork.Pipe()
    child = fork.Process(target=_child, args=(child_end,))
    child.start()
    try:
        assert parent_end.poll(30), "the child never answered (hung on the parent's loop?)"
        assert parent_end.recv() == (42, 6, 2, 2, 1)
    finally:
        child.join(30)
        if child.is_alive():
            child.kill()
            child.join()
    assert child.exitcode == 0


def test_a_forked_child_gets_its_own_loop_and_pool() -> None:
    # The parent's loop and pool threads exist before the fork...
    assert run_sync(lambda: run_blocking(len, "abc")) == 3
    _fork_a_child()
    # ...and the parent's keep working afterwards: a thread's result still wakes the
    # loop while it waits in select, and so does a call from inside a running loop.
    assert run_sync(lambda: run_blocking(_len_after_a_while, "abcd"), timeout=10) == 4

    async def remote() -> int:
        return run_sync(lambda: run_blocking(_len_after_a_while, "ab"), timeout=10)

    assert asyncio.run(remote()) == 2


def test_a_child_forked_while_another_thread_drives_the_loop_starts_afresh(
    another_driver: asyncio.Task[Any],
) -> None:
    # In the child the driving thread is gone: the child must not wait for it.
    _fork_a_child()
    assert run_sync(lambda: run_blocking(_len_after_a_while, "abcd"), timeout=10) == 4


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
