"""A SQLite store write while another thread of the process runs Python.

An application rarely has its event loop alone: an embedder, a parser or a request
handler may be running Python on another thread when a write arrives. A write that hands
the GIL back and forth once per row then waits out the interpreter's switch interval at
each retake, and holds the file's write lock all that time. This times the same
``upsert_vectors`` writes (fresh rows, then the same ids rewritten) on an otherwise idle
process and beside one thread spinning in pure Python, and prints the ratio. Context, no
target: the closer to 1x, the less a busy neighbour stretches a write. The SQLite rows and
the lexical deletions take one call each per write; the lexical index's additions still
take one call into tantivy per row (its Python binding has no batch add), so the ratio
swings widely from run to run with how fast the spinning thread wakes.

    python bench/write_contention.py [--n 16000] [--batch 8000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

from agentkit.kernel import Scope
from agentkit.vector import Chunk, HashingEmbedder, SQLiteVectorStore

SCOPE = Scope("bench", "contention")
DIM = 256


def _spin(stop: threading.Event) -> None:
    x = 0
    while not stop.is_set():
        for i in range(1000):
            x += i


async def _write(path: Path, chunks: list[Chunk], matrix: np.ndarray, batch: int) -> float:
    async with SQLiteVectorStore(path, embedder=HashingEmbedder(DIM)) as store:
        started = time.perf_counter()
        for _ in range(2):  # fresh rows, then every id rewritten in place
            for at in range(0, len(chunks), batch):
                await store.upsert_vectors(
                    chunks[at : at + batch], matrix[at : at + batch], scope=SCOPE
                )
        return time.perf_counter() - started


async def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--n", type=int, default=16_000)
    parser.add_argument("--batch", type=int, default=8_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    rng = np.random.default_rng(3)
    matrix = rng.standard_normal((args.n, DIM)).astype(np.float32)
    chunks = [
        Chunk(f"rec-{i:06d}", f"record {i} about topic {i % 97} and its details " * 4,
              {"source": f"/docs/f{i % 300}.md", "i": i})
        for i in range(args.n)
    ]
    alone: list[float] = []
    busy: list[float] = []
    with tempfile.TemporaryDirectory(prefix="agentkit-contention-") as tmp:
        for r in range(args.rounds):
            alone.append(await _write(Path(tmp) / f"alone{r}.db", chunks, matrix, args.batch))
            stop = threading.Event()
            spinner = threading.Thread(target=_spin, args=(stop,), daemon=True)
            spinner.start()
            try:
                busy.append(await _write(Path(tmp) / f"busy{r}.db", chunks, matrix, args.batch))
            finally:
                stop.set()
                spinner.join()
    a, b = statistics.median(alone), statistics.median(busy)
    rows = 2 * args.n
    print(f"{rows:,} rows written in writes of {args.batch:,}, {args.rounds} rounds (median):")
    print(f"  alone                      {a:8.3f} s  {rows / a:>10,.0f} rows/s")
    print(f"  beside a thread in Python  {b:8.3f} s  {rows / b:>10,.0f} rows/s   {b / a:.2f}x")
    print(f"RESULT write_contention_alone_s={a:.4f}")
    print(f"RESULT write_contention_busy_s={b:.4f}")
    print(f"RESULT write_contention_ratio={b / a:.4f}")


if __name__ == "__main__":
    asyncio.run(main())
