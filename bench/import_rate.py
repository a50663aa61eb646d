"""Import throughput against the store's own floor, side by side in one process.

    python bench/import_rate.py [--n 100000] [--n-embed 600] [--n-hashing 20000] [--rounds 3]

1. Reused vectors: ``agentkit.migrate.copy`` of ``--n`` records that carry vectors of
   the store's model (declared), into a fresh SQLite store — checks, the writes and the
   final read-back verification of every id included — against the store's own bulk
   ingest of the same pre-embedded chunks (``SQLiteVectorStore.upsert_vectors``, 1000
   per call, nothing else). Target >= 0.8x.
2. Records needing embedding: ``copy`` of ``--n-embed`` records without vectors into a
   store whose embedder is the default one (the bundled MiniLM, what ``agentkit-memory
   import`` re-embeds with unless told ``--hashing``), against the raw encode rate of
   that model over the same texts in the same batches (``embed_sync``, 1000 per call).
   Target >= 0.9x: the embedder is the floor.
3. For context, no target: part 2 with the model-free HashingEmbedder (256 wide) over
   ``--n-hashing`` records, and the store's own ``upsert`` of them (embed + write, no
   import). That embedder is pure Python and holds the GIL the whole time it hashes, so
   every Python step of the write (checks, JSON, SQLite parameters, the lexical index's
   per-document calls) waits for it or makes it wait: there the embedder is not the
   floor, the interpreter is (RESULTS.md has the measurements).

Rounds alternate which side goes first, on fresh stores; the verdict is the median of
the per-round wall-time ratios. CPU time of the whole process (all threads) is shown
beside it: the machine is shared, and CPU time is far less disturbed by other load.
Texts are three sentences of words from a fixed vocabulary; vectors are seeded random
unit rows (a write's cost does not depend on what a vector means).
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import numpy as np

from agentkit.kernel import Scope
from agentkit.migrate import Record, copy
from agentkit.vector import Chunk, HashingEmbedder, SQLiteVectorStore

SCOPE = Scope("bench", "import")
DIM = 256
PAGE = 1000
Data = list[tuple[str, str, dict[str, object]]]
Timed = tuple[float, float]  # wall seconds, CPU seconds


def corpus(n: int, seed: int = 7) -> Data:
    rng = random.Random(seed)
    words = [f"w{i}{chr(97 + i % 26)}" for i in range(5000)]
    out: Data = []
    for i in range(n):
        text = ". ".join(" ".join(rng.choices(words, k=12)) for _ in range(3)) + "."
        out.append((f"rec-{i:06d}", text, {"source": f"/docs/file{i % 500}.md", "i": i}))
    return out


def vectors(n: int, seed: int = 11) -> np.ndarray:
    rows = np.random.default_rng(seed).standard_normal((n, DIM)).astype(np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    return rows


async def timed(work: Callable[[], Awaitable[None]]) -> Timed:
    wall, cpu = time.perf_counter(), time.process_time()
    await work()
    return time.perf_counter() - wall, time.process_time() - cpu


async def bulk(path: Path, data: Data, matrix: np.ndarray) -> Timed:
    chunks = [Chunk(i, t, m) for i, t, m in data]
    async with SQLiteVectorStore(path, embedder=HashingEmbedder(DIM)) as store:
        async def work() -> None:
            for at in range(0, len(chunks), PAGE):
                await store.upsert_vectors(chunks[at : at + PAGE], matrix[at : at + PAGE],
                                           scope=SCOPE)
        took = await timed(work)
        assert await store.count(scope=SCOPE) == len(chunks)
    return took


async def upsert(path: Path, data: Data, embedder: Any) -> Timed:
    chunks = [Chunk(i, t, m) for i, t, m in data]
    async with SQLiteVectorStore(path, embedder=embedder) as store:
        async def work() -> None:
            for at in range(0, len(chunks), PAGE):
                await store.upsert(chunks[at : at + PAGE], scope=SCOPE)
        return await timed(work)


async def imported(path: Path, data: Data, matrix: np.ndarray | None,
                   embedder: Any = None) -> Timed:
    records = [Record(i, t, m, None if matrix is None else matrix[n])
               for n, (i, t, m) in enumerate(data)]
    embedder = HashingEmbedder(DIM) if embedder is None else embedder
    reports = []
    async with SQLiteVectorStore(path, embedder=embedder) as store:
        async def work() -> None:
            reports.append(await copy(records, store, scope=SCOPE,
                                      source_embedder="hashing" if matrix is not None else None))
        took = await timed(work)
    report = reports[0]
    assert report.verified and report.new == len(data), report.lines()
    assert report.reused == (len(data) if matrix is not None else 0)
    return took


async def encode(texts: list[str], embedder: Any = None) -> Timed:
    embedder = HashingEmbedder(DIM) if embedder is None else embedder

    async def work() -> None:
        for at in range(0, len(texts), PAGE):
            embedder.embed_sync(texts[at : at + PAGE])
    return await timed(work)


async def paired(rounds: int, ours: Callable[[int], Awaitable[Timed]],
                 base: Callable[[int], Awaitable[Timed]]) -> tuple[list[Timed], list[Timed]]:
    a: list[Timed] = []
    b: list[Timed] = []
    for r in range(rounds):
        if r % 2:
            a.append(await ours(r))
            b.append(await base(r))
        else:
            b.append(await base(r))
            a.append(await ours(r))
    return a, b


def verdict(n: int, ours: list[Timed], base: list[Timed]) -> tuple[float, float, float, float]:
    """(ours rec/s, base rec/s, median wall ratio of rates, CPU ratio of rates)."""
    wall = statistics.median(b[0] / o[0] for o, b in zip(ours, base, strict=True))
    cpu = statistics.median(b[1] for b in base) / statistics.median(o[1] for o in ours)
    return (n / statistics.median(o[0] for o in ours),
            n / statistics.median(b[0] for b in base), wall, cpu)


def show(label: str, base_label: str, n: int, ours: list[Timed], base: list[Timed],
         target: float, key: str) -> None:
    o_rate, b_rate, ratio, cpu = verdict(n, ours, base)
    print(label)
    print(f"  {base_label:<34} {b_rate:>10,.1f} rec/s")
    print(f"  {'import (copy, verified)':<34} {o_rate:>10,.1f} rec/s   ratio {ratio:.2f}x "
          f"(CPU {cpu:.2f}x; target >= {target}x)")
    print(f"RESULT import_{key}_per_s={o_rate:.1f}")
    print(f"RESULT import_{key}_base_per_s={b_rate:.1f}")
    print(f"RESULT import_{key}_ratio={ratio:.4f}")
    print(f"RESULT import_{key}_cpu_ratio={cpu:.4f}")
    print(f"RESULT import_{key}_target_met={int(ratio >= target)}")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--n-embed", type=int, default=600)
    parser.add_argument("--n-hashing", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    data = corpus(max(args.n, args.n_embed, args.n_hashing))
    matrix = vectors(args.n)
    reuse, embed, hashed = data[: args.n], data[: args.n_embed], data[: args.n_hashing]
    with tempfile.TemporaryDirectory(prefix="agentkit-import-bench-") as tmp:
        root = Path(tmp)
        ours, base = await paired(
            args.rounds,
            lambda r: imported(root / f"reuse{r}.db", reuse, matrix),
            lambda r: bulk(root / f"bulk{r}.db", reuse, matrix),
        )
        show(f"records with reused vectors ({args.n:,}, {args.rounds} rounds):",
             "store bulk ingest (upsert_vectors)", args.n, ours, base, 0.8, "reuse")

        from agentkit.vector.sentence import SentenceTransformerEmbedder

        model = SentenceTransformerEmbedder()
        texts = [t for _, t, _ in embed]
        model.embed_sync(texts[:64])  # warm up
        ours, base = await paired(
            args.rounds,
            lambda r: imported(root / f"embed{r}.db", embed, None, model),
            lambda r: encode(texts, model),
        )
        show(f"records needing embedding ({args.n_embed:,}, the default embedder: bundled "
             f"MiniLM, {args.rounds} rounds):",
             "raw encode (embed_sync)", args.n_embed, ours, base, 0.9, "embed")

        texts = [t for _, t, _ in hashed]
        ours, base = await paired(
            args.rounds,
            lambda r: imported(root / f"hashing{r}.db", hashed, None),
            lambda r: encode(texts),
        )
        o_rate, b_rate, ratio, cpu = verdict(args.n_hashing, ours, base)
        own = [await upsert(root / f"own{r}.db", hashed, HashingEmbedder(DIM))
               for r in range(args.rounds)]
        _, _, vs_upsert, vs_cpu = verdict(args.n_hashing, ours, own)
        print(f"for context, no target: records needing embedding ({args.n_hashing:,}, "
              f"HashingEmbedder dim {DIM}, pure Python holding the GIL):")
        print(f"  {'raw encode (embed_sync)':<34} {b_rate:>10,.1f} rec/s")
        print(f"  {'import (copy, verified)':<34} {o_rate:>10,.1f} rec/s   ratio {ratio:.2f}x "
              f"(CPU {cpu:.2f}x)")
        print(f"  {'store upsert (embeds, then writes)':<34} "
              f"{args.n_hashing / statistics.median(t[0] for t in own):>10,.1f} rec/s   "
              f"import/upsert {vs_upsert:.2f}x (CPU {vs_cpu:.2f}x)")
        print(f"RESULT import_hashing_per_s={o_rate:.1f}")
        print(f"RESULT import_hashing_base_per_s={b_rate:.1f}")
        print(f"RESULT import_hashing_ratio={ratio:.4f}")
        print(f"RESULT import_hashing_cpu_ratio={cpu:.4f}")
        print(f"RESULT import_hashing_vs_upsert_ratio={vs_upsert:.4f}")


if __name__ == "__main__":
    asyncio.run(main())
