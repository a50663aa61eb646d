"""What one heavy query costs SQLiteVectorStore, and what it costs everyone else.

1. Word cap: a 100,000-word lexical query next to a query of its first
   ``MAX_QUERY_TERMS`` words. Both are scored on the same words, so the ratio should be
   close to 1 (before the cap the long query took over a minute).
2. Tenants: the latency of tenant B's one-word query alone, and while tenant C runs
   heavy lexical queries (a scope of a few rows searching words common in A's rows,
   which walks the whole file's ranking, since FTS5 ranks across scopes). With one
   reader (``readers=1``, like the old single worker) B waits in line; with the default
   pool B's query runs beside C's.

Run: ``python bench/query_cost.py`` (``--rows`` to change the corpus size).
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import tempfile
import time
from pathlib import Path

from agentkit.kernel import Scope
from agentkit.vector import Chunk, HashingEmbedder, SQLiteVectorStore
from agentkit.vector.port import MAX_QUERY_TERMS

A = Scope("bench", "heavy")
B = Scope("bench", "light")
SPARSE = Scope("bench", "sparse")


async def build(db: Path, rows: int) -> None:
    rng = random.Random(7)
    vocab = [f"w{i}" for i in range(5_000)]
    async with SQLiteVectorStore(db, embedder=HashingEmbedder(dim=64)) as store:
        for start in range(0, rows, 5_000):
            batch = [
                Chunk(f"a{i}", " ".join(rng.choices(vocab, k=30)) + " common words here")
                for i in range(start, min(rows, start + 5_000))
            ]
            await store.upsert(batch, scope=A)
        await store.upsert([Chunk(f"b{i}", f"rare{i} light tenant") for i in range(200)], scope=B)
        await store.upsert([Chunk(f"c{i}", f"unrelated text {i}") for i in range(5)], scope=SPARSE)


async def timed(coro: object) -> float:
    start = time.perf_counter()
    await coro  # type: ignore[misc]
    return time.perf_counter() - start


async def word_cap(db: Path) -> None:
    long = " ".join(f"w{i}" for i in range(100_000))
    head = " ".join(f"w{i}" for i in range(MAX_QUERY_TERMS))
    async with SQLiteVectorStore(db, embedder=HashingEmbedder(dim=64)) as store:
        await store.lexical_search(head, k=10, scope=A)  # warm the word statistics
        t_head = min([await timed(store.lexical_search(head, k=10, scope=A)) for _ in range(3)])
        t_long = min([await timed(store.lexical_search(long, k=10, scope=A)) for _ in range(3)])
    print(f"100k-word query {t_long * 1e3:8.1f} ms | first {MAX_QUERY_TERMS} words "
          f"{t_head * 1e3:8.1f} ms | ratio {t_long / t_head:5.2f}")
    print(f"RESULT query_cost.long_over_head={t_long / t_head:.3f}")


async def tenants(db: Path, readers: int) -> tuple[float, float]:
    heavy = " ".join(f"w{i}" for i in range(MAX_QUERY_TERMS)) + " common words here"
    async with SQLiteVectorStore(db, embedder=HashingEmbedder(dim=64), readers=readers) as s:
        await s.lexical_search(heavy, k=10, scope=SPARSE)
        alone = [await timed(s.lexical_search(f"rare{i}", k=3, scope=B)) for i in range(20)]
        busy: list[float] = []
        load = [asyncio.create_task(s.lexical_search(heavy, k=10, scope=SPARSE)) for _ in range(2)]
        await asyncio.sleep(0.01)
        for i in range(20):
            busy.append(await timed(s.lexical_search(f"rare{i}", k=3, scope=B)))
            if all(t.done() for t in load):
                load = [
                    asyncio.create_task(s.lexical_search(heavy, k=10, scope=SPARSE))
                    for _ in range(2)
                ]
                await asyncio.sleep(0.01)
        await asyncio.gather(*load)
    return statistics.median(alone), statistics.median(busy)


async def main(rows: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "bench.db"
        await build(db, rows)
        await word_cap(db)
        for readers in (1, 4):
            alone, busy = await tenants(db, readers)
            print(f"readers={readers}: B's one-word query alone {alone * 1e3:7.2f} ms | "
                  f"beside C's heavy queries {busy * 1e3:8.2f} ms | ratio {busy / alone:7.1f}")
            print(f"RESULT query_cost.readers{readers}_busy_over_alone={busy / alone:.3f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=20_000)
    args = parser.parse_args()
    asyncio.run(main(args.rows))
