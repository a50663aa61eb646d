"""InMemoryVectorStore top-10 search next to the bare numpy floor, and the cost of adding.

100,000 x 384 float32 unit vectors in one scope. The floor is one matrix product over
the very same matrix plus ``argpartition`` for the top 10: the least any exact search
can do. The store's figure is a whole ``search()`` call: embedding the query text,
argument checks, the product (in a worker thread at this size, so the event loop never
blocks), the top-k sort and building the result chunks. Target: <= 1.5x the floor.

Adding: the 100,000 vectors go in as batches of 1,000 through ``upsert_vectors``. Rows
live in a capacity-doubling buffer, so an add only writes its own rows; the whole
matrix is copied on growth alone (log2(n) times). The printout shows the amortised cost
per vector, the cost of the last batches next to the first (flat if no add copies the
matrix), and how many times the buffer was reallocated.

Run: ``python bench/vector_search.py`` (``--n`` and ``--rounds`` to change the size).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import time

import numpy as np
import numpy.typing as npt

from agentkit.kernel import Scope
from agentkit.vector import Chunk, HashingEmbedder, InMemoryVectorStore

DIM = 384
K = 10
BATCH = 1_000
SCOPE = Scope("bench", "vectors")
QUERIES = [
    "how long do refunds take",
    "shipping to norway",
    "reset my password",
    "cancel the subscription",
    "gpu memory limits",
]


def _unit_rows(rng: np.random.Generator, n: int) -> npt.NDArray[np.float32]:
    rows = rng.standard_normal((n, DIM), dtype=np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    return rows


def _floor(matrix: npt.NDArray[np.float32], query: npt.NDArray[np.float32]) -> list[int]:
    scores = matrix @ query
    top = np.argpartition(scores, len(scores) - K)[-K:]
    return [int(i) for i in top[np.argsort(-scores[top])]]


async def main(n: int, rounds: int) -> None:
    embedder = HashingEmbedder(dim=DIM)
    store = InMemoryVectorStore(embedder)

    reallocations = 0
    previous = None
    rng = np.random.default_rng(7)
    t_load = time.perf_counter()
    per_batch: list[float] = []
    for start in range(0, n, BATCH):
        size = min(BATCH, n - start)
        chunks = [Chunk(f"doc-{start + i}", f"document {start + i}") for i in range(size)]
        vectors = _unit_rows(rng, size)
        t0 = time.perf_counter()
        await store.upsert_vectors(chunks, vectors, scope=SCOPE)
        per_batch.append(time.perf_counter() - t0)
        matrix = store._buckets[SCOPE].snap.vectors
        reallocations += matrix is not previous
        previous = matrix
    load_total = time.perf_counter() - t_load
    add_total = sum(per_batch)
    tenth = max(1, len(per_batch) // 10)
    # Growth batches are the spikes; the median of a decile is what a plain add costs.
    first = statistics.median(per_batch[:tenth]) / BATCH
    last = statistics.median(per_batch[-tenth:]) / BATCH

    bucket = store._buckets[SCOPE]
    live = bucket.snap.vectors[: bucket.size()]
    queries = embedder.embed_sync(QUERIES)

    # Same answers first: the store must be doing the same exact search as the floor.
    for text, vector in zip(QUERIES, queries, strict=True):
        hits = await store.search(text, k=K, scope=SCOPE)
        assert [c.id for _, c in hits] == [f"doc-{i}" for i in _floor(live, vector)], text

    gc.collect()
    floor_times: list[float] = []
    store_times: list[float] = []
    for r in range(rounds):
        text, vector = QUERIES[r % len(QUERIES)], queries[r % len(QUERIES)]
        t0 = time.perf_counter()
        _floor(live, vector)
        floor_times.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        await store.search(text, k=K, scope=SCOPE)
        store_times.append(time.perf_counter() - t0)

    floor = statistics.median(floor_times)
    ours = statistics.median(store_times)
    print(f"InMemoryVectorStore, {n:,} x {DIM} float32, top-{K}, {rounds} rounds (medians)")
    print(f"  floor (matmul + argpartition): {floor * 1e3:8.2f} ms")
    print(f"  store.search():                {ours * 1e3:8.2f} ms")
    print(f"  ratio:                         {ours / floor:8.2f}x   (target <= 1.5x)")
    print(f"adding {n:,} vectors in batches of {BATCH:,} via upsert_vectors")
    print(f"  total {load_total:.2f} s incl. generating vectors; adds alone {add_total:.2f} s")
    print(f"  amortised per vector:          {add_total / n * 1e6:8.2f} us")
    print(f"  typical add, first 10% of rows:{first * 1e6:8.2f} us/vector")
    print(f"  typical add, last 10% of rows: {last * 1e6:8.2f} us/vector  (flat = no full copy)")
    print(f"  buffer reallocations:          {reallocations:8d}   (log2 growth, not one per add)")
    print(f"RESULT vector_search_floor_ms={floor * 1e3:.3f}")
    print(f"RESULT vector_search_store_ms={ours * 1e3:.3f}")
    print(f"RESULT vector_search_ratio={ours / floor:.3f}")
    print(f"RESULT vector_add_us_per_vector={add_total / n * 1e6:.3f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=41)
    args = parser.parse_args()
    asyncio.run(main(args.n, args.rounds))
