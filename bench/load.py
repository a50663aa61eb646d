"""Load: 1,000 concurrent queries on a 4-source composite, then a 10,000-op soak.

The composite is the hybrid stack a user runs: an in-memory vector store, a SQLite
store's dense and lexical halves (one file on disk), and the run's journal, fused by
``rrf_rerank`` with the default id dedupe. HashingEmbedder keeps it offline and makes
the numbers about the memory layer rather than a model.

1. Burst: 1,000 queries started at once from one event loop. Latency is per query from
   the moment all were launched, so queueing counts. Run twice: once plain (latency),
   once under tracemalloc (peak Python heap); peak RSS from getrusage.
2. Soak: 10,000 mixed operations (80% queries, 20% writes of which a quarter rewrite an
   existing id), at most 64 in flight. Every write goes through the composite (the
   lexical half and the journal file themselves under ``refused``), and is recorded in
   the journal as an app would. At the end the SQLite and in-memory row counts must
   equal the seed plus the distinct new ids, exactly.

Any error fails the run (non-zero exit). Prints human lines and ``RESULT name=value``.
Run: ``python bench/load.py [--seed-docs 2000] [--burst 1000] [--soak 10000]``.
"""

from __future__ import annotations

import os

# One BLAS thread per search: the concurrency here is across queries, and BLAS's own
# thread pool on top of that oversubscribes the cores (measured 30x slower per matvec
# on a loaded 2-core box). Must be set before numpy loads.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse
import asyncio
import random
import resource
import sys
import tempfile
import time
import tracemalloc
from dataclasses import dataclass
from pathlib import Path

from agentkit.kernel import Ctx, Scope
from agentkit.state.journal import MutationJournal
from agentkit.state.memory import (
    CompositeMemory,
    JournalMemory,
    LexicalMemory,
    MemoryItem,
    VectorMemory,
    rrf_rerank,
)
from agentkit.vector import Chunk, HashingEmbedder, InMemoryVectorStore, SQLiteVectorStore

SEED_DOCS = 2_000
BURST = 1_000
SOAK = 10_000
IN_FLIGHT = 64
K = 10
DIM = 256
SCOPE = Scope("acme", "load")
CTX = Ctx(SCOPE)
VOCAB = [
    "".join(
        random.Random(i).choices("abcdefghijklmnopqrstuvwxyz", k=random.Random(-i).randint(3, 8))
    )
    for i in range(800)
]


@dataclass(frozen=True)
class Entry:
    """A journal entry with its own id, so the composite dedupes it against the stores."""

    id: str
    text: str


def sentence(rng: random.Random, n: int = 12) -> str:
    return " ".join(rng.choices(VOCAB, k=n))


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))]


async def build(
    root: Path, seed_docs: int = SEED_DOCS
) -> tuple[CompositeMemory, SQLiteVectorStore, InMemoryVectorStore, MutationJournal[Entry]]:
    rng = random.Random(7)
    emb = HashingEmbedder(dim=DIM)
    sqlite = SQLiteVectorStore(root / "load.db", embedder=emb)
    inmem = InMemoryVectorStore(emb)
    journal: MutationJournal[Entry] = MutationJournal()
    chunks = [Chunk(f"doc-{i}", sentence(rng), {"n": i}) for i in range(seed_docs)]
    await sqlite.upsert(chunks, scope=SCOPE)
    await inmem.upsert(chunks, scope=SCOPE)
    for c in chunks:
        journal.record(Entry(c.id, c.text))
    composite = CompositeMemory(
        [
            VectorMemory(inmem, name="memvec"),
            VectorMemory(sqlite, name="dense"),
            LexicalMemory(sqlite, name="lexical"),
            JournalMemory(journal, render=lambda e: e.text, name="journal"),
        ],
        reranker=rrf_rerank,
    )
    return composite, sqlite, inmem, journal


async def burst(composite: CompositeMemory, queries: list[str]) -> tuple[list[float], int, float]:
    start = time.perf_counter()

    async def one(q: str) -> float:
        items = await composite.query(q, k=K, ctx=CTX)
        assert len(items) <= K
        return time.perf_counter() - start

    results = await asyncio.gather(*(one(q) for q in queries), return_exceptions=True)
    wall = time.perf_counter() - start
    errors = [r for r in results if isinstance(r, BaseException)]
    for e in errors[:3]:
        print(f"  error: {type(e).__name__}: {e}")
    return [r for r in results if isinstance(r, float)], len(errors), wall


async def soak(
    composite: CompositeMemory,
    journal: MutationJournal[Entry],
    rng: random.Random,
    ops: int = SOAK,
    seed_docs: int = SEED_DOCS,
) -> tuple[list[float], list[float], int, set[str], float]:
    gate = asyncio.Semaphore(IN_FLIGHT)
    reads: list[float] = []
    writes: list[float] = []
    errors: list[BaseException] = []
    new_ids: set[str] = set()
    plan: list[tuple[str, str, str | None]] = []
    fresh = 0
    for _ in range(ops):
        r = rng.random()
        if r < 0.8:
            plan.append(("read", " ".join(rng.choices(VOCAB, k=rng.randint(1, 4))), None))
        elif r < 0.95:
            plan.append(("write", sentence(rng), f"new-{fresh}"))
            fresh += 1
        else:  # rewrite an existing row: the count must not grow
            plan.append(("write", sentence(rng), f"doc-{rng.randrange(seed_docs)}"))

    async def run(kind: str, text: str, row_id: str | None) -> None:
        async with gate:
            t = time.perf_counter()
            try:
                if kind == "read":
                    await composite.query(text, k=K, ctx=CTX)
                    reads.append(time.perf_counter() - t)
                else:
                    assert row_id is not None
                    await composite.write(
                        [MemoryItem(text, "app", metadata={"id": row_id})], ctx=CTX
                    )
                    journal.record(Entry(row_id, text))
                    if row_id.startswith("new-"):
                        new_ids.add(row_id)
                    writes.append(time.perf_counter() - t)
            except Exception as exc:  # counted and reported, never hidden
                errors.append(exc)

    start = time.perf_counter()
    await asyncio.gather(*(run(*op) for op in plan))
    wall = time.perf_counter() - start
    for e in errors[:3]:
        print(f"  error: {type(e).__name__}: {e}")
    return reads, writes, len(errors), new_ids, wall


async def main(seed_docs: int = SEED_DOCS, burst_n: int = BURST, soak_n: int = SOAK) -> int:
    rng = random.Random(42)
    failed = False
    with tempfile.TemporaryDirectory() as tmp:
        composite, sqlite, inmem, journal = await build(Path(tmp), seed_docs)
        try:
            queries = [" ".join(rng.choices(VOCAB, k=rng.randint(1, 4))) for _ in range(burst_n)]
            await composite.query(queries[0], k=K, ctx=CTX)  # warm caches, open the file
            rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

            lat, errors, wall = await burst(composite, queries)
            tracemalloc.start()
            _, errors2, _ = await burst(composite, queries)
            _, heap_peak = tracemalloc.get_traced_memory()
            tracemalloc.stop()
            rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            print(f"burst: {burst_n} concurrent queries on 4 sources ({seed_docs} docs each)")
            print(f"  errors {errors + errors2}, wall {wall:.2f}s, {burst_n / wall:.0f} queries/s")
            print(
                f"  latency p50 {pct(lat, 50) * 1e3:.1f} ms, p99 {pct(lat, 99) * 1e3:.1f} ms "
                f"(from launch of all {burst_n})"
            )
            print(
                f"  peak Python heap during the burst {heap_peak / 2**20:.1f} MiB, "
                f"peak RSS {rss:.0f} MiB (before the burst {rss0:.0f} MiB)"
            )
            failed |= errors + errors2 > 0 or len(lat) != burst_n

            reads, writes, soak_errors, new_ids, soak_wall = await soak(
                composite, journal, rng, soak_n, seed_docs
            )
            expected = seed_docs + len(new_ids)
            rows = await sqlite.count(scope=SCOPE)
            mem_rows = await inmem.count(scope=SCOPE)
            print(
                f"soak: {soak_n} ops ({len(reads)} reads, {len(writes)} writes), "
                f"{IN_FLIGHT} in flight, {soak_wall:.1f}s, {soak_n / soak_wall:.0f} ops/s"
            )
            print(
                f"  errors {soak_errors}; read p50 {pct(reads, 50) * 1e3:.1f} ms "
                f"p99 {pct(reads, 99) * 1e3:.1f} ms; write p50 {pct(writes, 50) * 1e3:.1f} ms "
                f"p99 {pct(writes, 99) * 1e3:.1f} ms"
            )
            ok_rows = rows == expected and mem_rows == expected
            print(
                f"  rows: sqlite {rows}, in-memory {mem_rows}, expected {expected} "
                f"({'ok' if ok_rows else 'MISMATCH'})"
            )
            failed |= soak_errors > 0 or not ok_rows or len(reads) + len(writes) != soak_n

            print(f"RESULT load_burst_errors={errors + errors2}")
            print(f"RESULT load_burst_p50_ms={pct(lat, 50) * 1e3:.3f}")
            print(f"RESULT load_burst_p99_ms={pct(lat, 99) * 1e3:.3f}")
            print(f"RESULT load_burst_qps_per_s={burst_n / wall:.1f}")
            print(f"RESULT load_burst_heap_peak_mib={heap_peak / 2**20:.2f}")
            print(f"RESULT load_peak_rss_mib={rss:.1f}")
            print(f"RESULT load_soak_errors={soak_errors}")
            print(f"RESULT load_soak_ops_per_s={soak_n / soak_wall:.1f}")
            print(f"RESULT load_soak_read_p99_ms={pct(reads, 99) * 1e3:.3f}")
            print(f"RESULT load_soak_write_p99_ms={pct(writes, 99) * 1e3:.3f}")
            print(f"RESULT load_soak_rows_ok={int(ok_rows)}")
        finally:
            await sqlite.close()
    return 1 if failed else 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed-docs", type=int, default=SEED_DOCS, help="rows in each store")
    parser.add_argument("--burst", type=int, default=BURST, help="concurrent queries")
    parser.add_argument("--soak", type=int, default=SOAK, help="mixed operations")
    args = parser.parse_args()
    sys.exit(asyncio.run(main(args.seed_docs, args.burst, args.soak)))
