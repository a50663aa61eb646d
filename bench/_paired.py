"""Paired timing of two ways to do the same call, sync and async, for the overhead benches.

Rounds alternate which side goes first and run back to back, so drift and other load
on a shared machine hit both sides alike; the verdict is the median of the per-round
wall-time ratios. Beside it: the middle half of those ratios (their spread), the ratio
of each side's fastest round (what a quiet machine would show), and CPU time (all
threads), far less disturbed by other processes but blind to the time a sync call
spends waiting for the background loop's thread to be scheduled, which wall time sees.
The 1-minute load average is printed with every result: on a shared machine it says
more about a sync ratio than anything in the code does.
"""

from __future__ import annotations

import asyncio
import gc
import os
import statistics
import time
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from types import ModuleType
from typing import Any


@dataclass(frozen=True)
class Paired:
    """Medians per call (microseconds) of ours and the baseline, and their ratios."""

    ours_us: float
    base_us: float
    ours_cpu_us: float
    base_cpu_us: float
    ratio: float  # median of per-round wall ratios: the verdict
    cpu_ratio: float
    ratio_lo: float = float("nan")  # 25th percentile of per-round wall ratios
    ratio_hi: float = float("nan")  # 75th percentile
    best_ratio: float = float("nan")  # fastest round of ours / fastest round of base


def _summary(ours: list[tuple[float, float]], base: list[tuple[float, float]]) -> Paired:
    def med(side: list[tuple[float, float]], i: int) -> float:
        return statistics.median(t[i] for t in side) * 1e6

    ratios = [o[0] / b[0] for o, b in zip(ours, base, strict=True)]
    quartiles = statistics.quantiles(ratios, n=4)
    return Paired(
        ours_us=med(ours, 0),
        base_us=med(base, 0),
        ours_cpu_us=med(ours, 1),
        base_cpu_us=med(base, 1),
        ratio=statistics.median(ratios),
        cpu_ratio=med(ours, 1) / med(base, 1),
        ratio_lo=quartiles[0],
        ratio_hi=quartiles[2],
        best_ratio=min(o[0] for o in ours) / min(b[0] for b in base),
    )


def load_average() -> float:
    """The 1-minute load average (how many runnable threads compete for the CPUs)."""
    return os.getloadavg()[0]


def paired_sync(
    ours: Callable[[], object], base: Callable[[], object], *, rounds: int, calls: int
) -> Paired:
    def batch(fn: Callable[[], object]) -> tuple[float, float]:
        wall, cpu = time.perf_counter(), time.process_time()
        for _ in range(calls):
            fn()
        return (time.perf_counter() - wall) / calls, (time.process_time() - cpu) / calls

    for _ in range(3):  # warm-up
        batch(ours)
        batch(base)
    a: list[tuple[float, float]] = []
    b: list[tuple[float, float]] = []
    gc.collect()
    gc.disable()  # as timeit does: a collection landing in one side's round is noise
    try:
        for r in range(rounds):
            if r % 2:
                b.append(batch(base))
                a.append(batch(ours))
            else:
                a.append(batch(ours))
                b.append(batch(base))
    finally:
        gc.enable()
    return _summary(a, b)


def paired_async(
    ours: Callable[[], Awaitable[object]],
    base: Callable[[], Awaitable[object]],
    *,
    rounds: int,
    calls: int,
) -> Paired:
    async def batch(fn: Callable[[], Awaitable[object]]) -> tuple[float, float]:
        wall, cpu = time.perf_counter(), time.process_time()
        for _ in range(calls):
            await fn()
        return (time.perf_counter() - wall) / calls, (time.process_time() - cpu) / calls

    async def run() -> Paired:
        for _ in range(3):
            await batch(ours)
            await batch(base)
        a: list[tuple[float, float]] = []
        b: list[tuple[float, float]] = []
        gc.collect()
        gc.disable()
        try:
            for r in range(rounds):
                if r % 2:
                    b.append(await batch(base))
                    a.append(await batch(ours))
                else:
                    a.append(await batch(ours))
                    b.append(await batch(base))
        finally:
            gc.enable()
        return _summary(a, b)

    return asyncio.run(run())


def handoff_us(calls: int = 2000, rounds: int = 7, *, remote: bool = False) -> tuple[float, float]:
    """Median wall and CPU microseconds of one bare ``run_sync`` of a no-op coroutine:
    the runner's own part of a sync call, for reading the sync ratio. ``remote=True``
    calls it from inside a running loop (a notebook cell), where the call is handed to
    the runner's background driver thread and back: the thread hop's cost."""
    from agentkit.interop import run_sync

    async def nothing() -> None:
        return None

    def once() -> tuple[float, float]:
        wall, cpu = time.perf_counter(), time.process_time()
        for _ in range(calls):
            run_sync(nothing)
        return (time.perf_counter() - wall) / calls, (time.process_time() - cpu) / calls

    async def inside_a_loop() -> list[tuple[float, float]]:
        once()
        return [once() for _ in range(rounds)]

    if remote:
        samples = asyncio.run(inside_a_loop())
    else:
        once()
        samples = [once() for _ in range(rounds)]
    return (
        statistics.median(s[0] for s in samples) * 1e6,
        statistics.median(s[1] for s in samples) * 1e6,
    )


def _inline(make: Callable[[], Coroutine[Any, Any, Any]], **_: Any) -> Any:
    coro = make()
    try:
        coro.send(None)
    except StopIteration as done:
        return done.value
    coro.close()
    raise RuntimeError("the bench's memory suspended: it cannot be driven inline")


def without_handoff(module: ModuleType, call: Callable[[], object]) -> Callable[[], object]:
    """Diagnostic only: ``call`` with ``module``'s ``run_sync`` driving the coroutine inline.

    The benches' in-process memories never suspend, so this measures everything a sync
    call does except ``run_sync`` (the shared loop's task and loop run, or a thread hop
    when the call goes remote). Paired with the real call, the difference is what
    ``run_sync`` costs inside a call.
    """
    real = module.run_sync

    def inline_call() -> object:
        module.run_sync = _inline
        try:
            return call()
        finally:
            module.run_sync = real

    return inline_call


def report(prefix: str, label: str, result: Paired, target: float) -> bool:
    """Print the human lines and the ``RESULT`` lines; return whether the target is met."""
    met = result.ratio <= target
    print(f"{label}")
    print(f"  baseline : {result.base_us:8.1f} us wall  {result.base_cpu_us:8.1f} us cpu")
    print(f"  ours     : {result.ours_us:8.1f} us wall  {result.ours_cpu_us:8.1f} us cpu")
    print(
        f"  ratio    : {result.ratio:8.3f}x wall (target <= {target:.2f}x) "
        f"{'OK' if met else 'MISSED'}   {result.cpu_ratio:.3f}x cpu"
    )
    print(
        f"  spread   : {result.ratio_lo:.3f}x-{result.ratio_hi:.3f}x wall (middle half of rounds); "
        f"fastest rounds {result.best_ratio:.3f}x; load average {load_average():.1f}"
    )
    print(f"RESULT {prefix}_ours_us={result.ours_us:.2f}")
    print(f"RESULT {prefix}_base_us={result.base_us:.2f}")
    print(f"RESULT {prefix}_ratio={result.ratio:.4f}")
    print(f"RESULT {prefix}_best_ratio={result.best_ratio:.4f}")
    print(f"RESULT {prefix}_cpu_ratio={result.cpu_ratio:.4f}")
    print(f"RESULT {prefix}_target_met={int(met)}")
    return met
