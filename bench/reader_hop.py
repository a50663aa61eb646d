"""What one hop from the event loop to a reader thread and back costs, with nothing to do.

    python bench/reader_hop.py [--rounds 400]

The SQLite store runs every read on a reader thread (``FairPool``) so the event loop
never waits on disk; for a sub-millisecond lexical query that hop is a large share of
the answer (compare tantivy's ~0.3 ms p50 on SciFact in lexical_engines.py). A no-op job
through the store's pool, beside ``run_in_executor`` and ``asyncio.to_thread`` on a
one-thread executor, each after three kinds of gap, interleaved so load hits all alike:

- warm: hop after hop, the worker's core still awake;
- idle 1 ms: the process sleeps between hops (a server between queries);
- busy 0.4 ms: the loop computes between hops (as in lexical_engines.py, where the loop
  runs the inline peers between two of ours).

Prints p10/p50/p90 in microseconds and ``RESULT`` lines.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from ingest_query import pct  # noqa: E402

from agentkit.vector._fair_pool import FairPool  # noqa: E402


def busy(us: float) -> None:
    end = time.perf_counter() + us / 1e6
    while time.perf_counter() < end:
        pass


async def measure(rounds: int) -> dict[tuple[str, str], list[float]]:
    loop = asyncio.get_running_loop()
    pool = FairPool(4, per_key=3, name="hop")  # the store's default shape
    executor = ThreadPoolExecutor(1)
    ways: dict[str, Callable[[], Awaitable[Any]]] = {
        "FairPool": lambda: pool.submit("scope", int),
        "run_in_executor": lambda: loop.run_in_executor(executor, int),
        "to_thread": lambda: asyncio.to_thread(int),
    }
    gaps: dict[str, Callable[[], None]] = {
        "warm": lambda: None,
        "idle 1ms": lambda: time.sleep(0.001),
        "busy 0.4ms": lambda: busy(400),
    }
    times: dict[tuple[str, str], list[float]] = {(g, w): [] for g in gaps for w in ways}
    try:
        for n in range(rounds + 20):
            for gap_name, gap in gaps.items():
                for way_name, way in ways.items():
                    gap()
                    start = time.perf_counter()
                    await way()
                    if n >= 20:  # the first rounds start the threads
                        times[(gap_name, way_name)].append((time.perf_counter() - start) * 1e6)
    finally:
        await asyncio.to_thread(pool.shutdown)
        executor.shutdown()
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=400)
    args = parser.parse_args()
    times = asyncio.run(measure(args.rounds))
    print(f"{'gap':<11} {'hop':<16} {'p10 us':>7} {'p50 us':>7} {'p90 us':>8}")
    for (gap, way), t in times.items():
        print(f"{gap:<11} {way:<16} {pct(t, 0.1):7.1f} {pct(t, 0.5):7.1f} {pct(t, 0.9):8.1f}")
    for (gap, way), t in times.items():
        key = f"{gap.split()[0]}_{way}".lower()
        print(f"RESULT hop_{key}_p50_us={pct(t, 0.5):.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
