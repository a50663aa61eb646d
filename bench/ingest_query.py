"""Ingest throughput against the raw model, and query latency at 5k and 100k chunks.

    python bench/ingest_query.py [DIR] [--n 600] [--queries 200] [--skip-ingest]

1. Ingest throughput: the first ``--n`` SciFact records (from DIR, default
   ``../shared/data/scifact``) ingested into a fresh SQLite store with the real MiniLM
   (no cache), against MiniLM encoding the very same texts directly
   (``SentenceTransformerEmbedder.embed_sync``, batch 64). Raw encoding is timed before
   and after the ingest and averaged, since the machine may be shared. Target: >= 0.9x.
2. Query latency, sequential queries, SciFact claims as query texts:
   - 5k: the SciFact store of quality.py (5,183 chunks, MiniLM vectors from the cache).
     Dense and hybrid times include encoding the query with MiniLM.
   - 100k: synthetic chunks (three random SciFact sentences each, so the vocabulary is
     real) with seeded random unit vectors of width 384 from a bench-local embedder —
     dense cost depends only on count and width, so the vectors' meaning is irrelevant
     to latency. Query encoding is therefore ~free here: add the 5k row's encode time
     for a model-backed figure. The store is cached in bench/.cache/.

Prints a table and ``RESULT name=value`` lines (see run_all.py).
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import json
import random
import re
import statistics
import sys
import tempfile
import time
import typing
import zlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from _embed_cache import CACHE_DIR, CachedEmbedder, cache_path, file_hash  # noqa: E402

from agentkit.cli import _ingest  # noqa: E402
from agentkit.kernel import Ctx, Scope  # noqa: E402
from agentkit.state.memory import HybridMemory, HybridMode  # noqa: E402
from agentkit.vector import Chunk, SQLiteVectorStore  # noqa: E402
from agentkit.vector.sentence import SentenceTransformerEmbedder  # noqa: E402

SCOPE = Scope("bench", "scifact")
SYN_SCOPE = Scope("bench", "synthetic")
MODES: tuple[HybridMode, ...] = typing.get_args(HybridMode)


class SeededEmbedder:
    """Unit vectors seeded by the text's crc32: deterministic, ~free, meaningless."""

    model_name = "bench-seeded-random-384"
    dim = 384

    def embed_sync(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            rng = np.random.default_rng(zlib.crc32(text.encode()))
            row = rng.standard_normal(self.dim).astype(np.float32)
            out[i] = row / np.linalg.norm(row)
        return out

    async def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        return await asyncio.to_thread(self.embed_sync, list(texts))


def records(corpus: Path, n: int | None = None) -> list[dict[str, str]]:
    out = []
    with gzip.open(corpus, "rt", encoding="utf-8") as fh:
        for line in fh:
            out.append(json.loads(line))
            if n is not None and len(out) >= n:
                break
    return out


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def ingest_throughput(corpus: Path, n: int) -> dict[str, float]:
    recs = records(corpus, n)
    texts = [_ingest.beir_text(r.get("title", "").strip(), r.get("text", "").strip())
             for r in recs]
    model = SentenceTransformerEmbedder()
    model.embed_sync(texts[:64])  # warm-up: first-call costs belong to neither side

    def raw() -> float:
        start = time.perf_counter()
        model.embed_sync(texts)
        return time.perf_counter() - start

    raw_before = raw()
    with tempfile.TemporaryDirectory() as tmp:
        sub = Path(tmp) / "subset" / "corpus.jsonl"
        sub.parent.mkdir()
        sub.write_text("".join(json.dumps(r) + "\n" for r in recs), encoding="utf-8")
        async with SQLiteVectorStore(Path(tmp) / "ingest.db", embedder=model) as store:
            start = time.perf_counter()
            stats = await _ingest.ingest(store, SCOPE, [str(sub)])
            ingest_s = time.perf_counter() - start
            assert await store.count(scope=SCOPE) == len(recs) == stats.written
    raw_after = raw()
    raw_s = (raw_before + raw_after) / 2
    return {
        "docs": float(len(recs)),
        "raw_docs_per_s": len(recs) / raw_s,
        "ingest_docs_per_s": len(recs) / ingest_s,
        "ratio": raw_s / ingest_s,
        "raw_spread": abs(raw_before - raw_after) / raw_s,
    }


async def latency(
    store: SQLiteVectorStore, scope: Scope, queries: list[str]
) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    ctx = Ctx(scope)
    for mode in MODES:
        memory = HybridMemory(store, mode=mode, depth=50)
        for q in queries[:10]:  # warm-up: loads the scope's matrix, compiles statements
            await memory.query(q, k=10, ctx=ctx)
        times = []
        for q in queries:
            start = time.perf_counter()
            items = await memory.query(q, k=10, ctx=ctx)
            times.append((time.perf_counter() - start) * 1000)
            assert items
        out[mode] = {"p50": pct(times, 0.5), "p99": pct(times, 0.99),
                     "mean": statistics.fmean(times)}
    return out


async def build_5k(corpus: Path) -> SQLiteVectorStore:
    model = SentenceTransformerEmbedder()
    embedder = CachedEmbedder(model, cache_path(model.model_name, file_hash(corpus)))
    store = SQLiteVectorStore(CACHE_DIR / "scifact.db", embedder=embedder)
    await _ingest.ingest(store, SCOPE, [str(corpus)])
    embedder.save()
    return store


async def build_100k(corpus: Path, n: int) -> SQLiteVectorStore:
    store = SQLiteVectorStore(CACHE_DIR / f"synthetic{n}.db", embedder=SeededEmbedder())
    have = await store.count(scope=SYN_SCOPE)
    if have >= n:
        return store
    sentences = [s for r in records(corpus) for s in re.split(r"(?<=\.)\s+", r["text"]) if s]
    rng = random.Random(7)
    for start in range(have, n, 2000):
        batch = [
            Chunk(f"syn{i}", " ".join(rng.choice(sentences) for _ in range(3)), {"i": i})
            for i in range(start, min(n, start + 2000))
        ]
        await store.upsert(batch, scope=SYN_SCOPE)
    return store


def row(label: str, stats: dict[str, dict[str, float]]) -> list[str]:
    return [f"{label:<5} {m:<8} p50 {stats[m]['p50']:7.2f} ms   p99 {stats[m]['p99']:7.2f} ms"
            for m in MODES]


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dir", nargs="?", default=str(ROOT.parent / "shared" / "data" / "scifact"))
    parser.add_argument("--n", type=int, default=600, help="records for the ingest test")
    parser.add_argument("--queries", type=int, default=200, help="timed queries per mode")
    parser.add_argument("--big", type=int, default=100_000, help="chunks in the large store")
    parser.add_argument("--skip-ingest", action="store_true")
    args = parser.parse_args()
    root = Path(args.dir)
    corpus = root / "corpus.jsonl.gz"
    queries = [json.loads(line)["text"] for line in (root / "queries.jsonl").open()]
    queries = queries[: args.queries]
    lines: list[str] = []
    results: dict[str, float] = {}

    if not args.skip_ingest:
        ing = await ingest_throughput(corpus, args.n)
        lines.append(
            f"ingest {int(ing['docs'])} SciFact docs with MiniLM: "
            f"{ing['ingest_docs_per_s']:.1f} docs/s; raw encode {ing['raw_docs_per_s']:.1f} "
            f"docs/s (before/after spread {ing['raw_spread']:.0%}); ratio {ing['ratio']:.3f} "
            f"(target >= 0.9)"
        )
        results["ingest_docs_per_s"] = ing["ingest_docs_per_s"]
        results["ingest_raw_encode_docs_per_s"] = ing["raw_docs_per_s"]
        results["ingest_vs_encode_ratio"] = ing["ratio"]
        print(lines[-1], flush=True)

    small = await build_5k(corpus)
    async with small:
        n_small = await small.count(scope=SCOPE)
        lat5 = await latency(small, SCOPE, queries)
    big = await build_100k(corpus, args.big)
    async with big:
        n_big = await big.count(scope=SYN_SCOPE)
        lat100 = await latency(big, SYN_SCOPE, queries)
    lines.append(f"query latency, {len(queries)} sequential queries per mode, k=10, "
                 "each half read 50 deep:")
    lines += row(f"{n_small // 1000}k", lat5)
    lines += row(f"{n_big // 1000}k", lat100)
    print("\n".join(lines[-7:]))
    for label, stats in ((f"{n_small // 1000}k", lat5), (f"{n_big // 1000}k", lat100)):
        for mode in MODES:
            for q in ("p50", "p99"):
                results[f"latency_{label}_{mode}_{q}_ms"] = stats[mode][q]
    for name, value in results.items():
        print(f"RESULT {name}={value:.4g}")
    return 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
