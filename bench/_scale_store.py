"""The agentkit SQLite store at scale, for ``scale.py`` (not a bench itself).

One store file per (pool, n) in the bench cache, loaded once with ``upsert_vectors``
(three real sentences of text per record, the cached MiniLM-mean vectors, a
``HashingEmbedder`` of the same width recorded so the CLI runs dense and hybrid without
a model, as in issue #25's probe). Then, side by side in one run:

- bulk load rate including the dense index (the folds the writer starts, waited for);
- a cold ``agentkit-memory query --dense`` and ``--lexical`` process each: wall time and
  peak RSS (``/usr/bin/time``-style, from ``wait4``), the ratio printed;
- warm dense p50/p99 (after a first pass over the queries, which maps the graph's pages
  and is printed apart) and recall@10 against exact; exact mode's p50;
- another process writes one record: this reader's next query (sees it?) and its RSS
  after 100 such writes.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from agentkit.kernel import Scope
from agentkit.vector import Chunk, HashingEmbedder, SQLiteVectorStore

SCOPE = Scope("bench", "scale")
BATCH = 5_000


def rss_mb(field: str = "VmRSS") -> float:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    return 0.0


class _Peaks:
    """The loading process's peak anonymous memory (the source vectors are a mapped
    file, so VmHWM would count them) and the WAL's largest size, sampled twice a second."""

    def __init__(self, wal: Path) -> None:
        self.wal, self.anon_mb, self.wal_mb = wal, 0.0, 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(0.5):
            self.anon_mb = max(self.anon_mb, rss_mb("RssAnon"))
            with contextlib.suppress(OSError):
                self.wal_mb = max(self.wal_mb, self.wal.stat().st_size / 2**20)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def loading(path: Path) -> Path:
    """The file a load writes before it becomes ``path``, left over files of an
    interrupted load removed; ``publish`` renames it and its side files into place."""
    tmp = path.with_name(path.name + ".loading")
    for leftover in tmp.parent.glob(tmp.name + "*"):
        if leftover.is_dir():
            shutil.rmtree(leftover)
        else:
            leftover.unlink()
    return tmp


def publish(tmp: Path, path: Path) -> None:
    for side in tmp.parent.glob(tmp.name + "*"):
        side.rename(side.with_name(side.name.replace(tmp.name, path.name, 1)))


async def load(path: Path, texts: Any, vectors: npt.NDArray[np.float32]) -> float:
    """Records per second into a fresh store, the dense index included."""
    tmp = loading(path)
    n, dim = vectors.shape
    peaks = _Peaks(tmp.with_name(tmp.name + "-wal"))
    start = time.perf_counter()
    async with SQLiteVectorStore(tmp, embedder=HashingEmbedder(dim=dim)) as store:
        for lo in range(0, n, BATCH):
            hi = min(n, lo + BATCH)
            chunks = [Chunk(f"r{i}", next(texts)) for i in range(lo, hi)]
            await store.upsert_vectors(chunks, np.asarray(vectors[lo:hi]), scope=SCOPE)
            if lo // BATCH % 20 == 0:
                print(
                    f"  loaded {hi:,}/{n:,} at {time.perf_counter() - start:.0f} s, "
                    f"anon {rss_mb('RssAnon'):,.0f} MB",
                    file=sys.stderr,
                    flush=True,
                )
        # close() waits for a fold under way; then make sure the base is current.
    async with SQLiteVectorStore(tmp, embedder=HashingEmbedder(dim=dim)) as store:
        await store.search_by_vector(np.asarray(vectors[0]), k=1, scope=SCOPE)
    rate = n / (time.perf_counter() - start)
    peaks.stop()
    print(
        f"  while loading: peak anonymous RSS {peaks.anon_mb:,.0f} MB, "
        f"largest WAL {peaks.wal_mb:,.0f} MB",
        file=sys.stderr,
    )
    publish(tmp, path)
    return rate


def cold(path: Path, mode: str, text: str, scope: Scope = SCOPE) -> tuple[float, float]:
    """(wall seconds, peak RSS MB) of one ``agentkit-memory query`` process, measured by
    ``/usr/bin/time`` (a child forked from this big process would count our pages)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTKIT_")}
    env["AGENTKIT_EMBEDDER"] = "hashing"
    report = path.with_name(path.name + f".{mode}.time")
    cmd = [
        "/usr/bin/time", "-o", str(report), "-f", "%e %M",
        sys.executable, "-m", "agentkit.cli", "query", text, f"--{mode}", "-k", "10",
        "--store", str(path), "--scope", f"{scope.org_id}/{scope.domain_id}",
    ]  # fmt: skip
    done = subprocess.run(
        cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, check=False
    )
    if done.returncode != 0:
        raise SystemExit(f"query --{mode} failed: {done.stderr}")
    wall, kb = report.read_text().split()[-2:]
    report.unlink()
    return float(wall), int(kb) / 1024


def _write_one(path: Path, dim: int, cid: str, vector: npt.NDArray[np.float32]) -> None:
    """One record written by another process (a fresh interpreter)."""
    code = (
        "import asyncio, sys, numpy as np\n"
        "from agentkit.kernel import Scope\n"
        "from agentkit.vector import Chunk, HashingEmbedder, SQLiteVectorStore\n"
        "async def main():\n"
        "    emb = HashingEmbedder(dim=int(sys.argv[2]))\n"
        "    async with SQLiteVectorStore(sys.argv[1], embedder=emb) as s:\n"
        "        vec = np.array([[float(x) for x in sys.argv[4].split(',')]], np.float32)\n"
        "        await s.upsert_vectors([Chunk(sys.argv[3], 'fresh record')], vec,\n"
        f"            scope=Scope({SCOPE.org_id!r}, {SCOPE.domain_id!r}))\n"
        "asyncio.run(main())\n"
    )
    values = ",".join(repr(float(x)) for x in vector)
    subprocess.run([sys.executable, "-c", code, str(path), str(dim), cid, values], check=True)


async def warm(
    path: Path,
    queries: npt.NDArray[np.float32],
    truth: npt.NDArray[np.int64],
    dim: int,
    writes: int,
) -> dict[str, float]:
    out: dict[str, float] = {}
    async with SQLiteVectorStore(path, embedder=HashingEmbedder(dim=dim)) as store:
        # The first pass maps the graph's pages into this process (a new reader's
        # first few hundred queries); "warm" is the reader after that, timed apart.
        first = []
        for q in queries:
            t = time.perf_counter()
            await store.search_by_vector(q, k=10, scope=SCOPE)
            first.append(time.perf_counter() - t)
        out["first_pass_p50_ms"] = float(np.percentile(first, 50) * 1e3)
        out["first_pass_p99_ms"] = float(np.percentile(first, 99) * 1e3)
        times, hits = [], 0
        for qi, q in enumerate(queries):
            t = time.perf_counter()
            got = await store.search_by_vector(q, k=10, scope=SCOPE)
            times.append(time.perf_counter() - t)
            want = {f"r{i}" for i in truth[qi]}
            hits += len({c.id for _, c in got} & want)
        out["p50_ms"] = float(np.percentile(times, 50) * 1e3)
        out["p99_ms"] = float(np.percentile(times, 99) * 1e3)
        out["recall"] = hits / (10 * len(queries))
        times = []
        for q in queries[:20]:
            t = time.perf_counter()
            await store.search_by_vector(q, k=10, scope=SCOPE, exact=True)
            times.append(time.perf_counter() - t)
        out["exact_p50_ms"] = float(np.percentile(times, 50) * 1e3)
        # Another process writes one record, a hundred times; this reader looks each time.
        base_rss = rss_mb()
        seen, after = 0, []
        rng = np.random.default_rng(1)
        for i in range(writes):
            # A vector of its own (so its best match is itself), near a real query.
            fresh = queries[i % len(queries)] + 0.05 * rng.standard_normal(dim)
            fresh = (fresh / np.linalg.norm(fresh)).astype(np.float32)
            await asyncio.to_thread(_write_one, path, dim, f"new{i}", fresh)
            t = time.perf_counter()
            got = await store.search_by_vector(fresh, k=1, scope=SCOPE)
            after.append(time.perf_counter() - t)
            seen += int(bool(got) and got[0][1].id == f"new{i}")
        out["after_write_ms"] = float(np.percentile(after, 50) * 1e3)
        out["after_write_seen"] = seen / writes
        out["rss_growth"] = rss_mb() / base_rss
        await store.delete([f"new{i}" for i in range(writes)], scope=SCOPE)
    return out


def one_core_product_ms(vectors: npt.NDArray[np.float32], q: npt.NDArray[np.float32]) -> float:
    block = np.ascontiguousarray(vectors)
    times = []
    for _ in range(10):
        t = time.perf_counter()
        scores = np.einsum("ij,j->i", block, q)
        np.argpartition(-scores, 10)[:10]
        times.append(time.perf_counter() - t)
    return float(np.percentile(times, 50) * 1e3)


def run(
    path: Path, texts: Any, vectors: Any, queries: Any, truth: Any, label: str, writes: int = 100
) -> None:
    dim = int(vectors.shape[1])
    rate = 0.0 if path.exists() else asyncio.run(load(path, texts, vectors))
    if rate:
        print(f"bulk load with vectors, dense index included: {rate:,.0f} rec/s")
        print(f"RESULT scale_store_{label}_load_per_s={rate:.0f}")
    dense_wall, dense_rss = cold(path, "dense", "cell biology of cancer")
    lex_wall, lex_rss = cold(path, "lexical", "cell biology of cancer")
    print(
        f"cold CLI query --dense {dense_wall:.2f} s / {dense_rss:.0f} MB peak; "
        f"--lexical {lex_wall:.2f} s / {lex_rss:.0f} MB; ratio {dense_wall / lex_wall:.2f}x"
    )
    w = asyncio.run(warm(path, queries, truth, dim, writes))
    numpy_ms = one_core_product_ms(np.asarray(vectors), queries[0])
    print(
        f"a new reader's first pass over the queries: p50 {w['first_pass_p50_ms']:.2f} ms, "
        f"p99 {w['first_pass_p99_ms']:.2f} ms\n"
        f"warm dense p50 {w['p50_ms']:.2f} ms, p99 {w['p99_ms']:.2f} ms, "
        f"recall@10 {w['recall']:.3f}; exact p50 {w['exact_p50_ms']:.1f} ms "
        f"({w['exact_p50_ms'] / numpy_ms:.2f}x numpy's one-core product, {numpy_ms:.1f} ms)"
    )
    print(
        f"after another process writes one record: next query {w['after_write_ms']:.1f} ms, "
        f"saw it {w['after_write_seen']:.0%}; reader RSS after {writes} writes "
        f"x{w['rss_growth']:.3f}"
    )
    stem = f"scale_store_{label}"
    print(f"RESULT {stem}_cold_dense_s={dense_wall:.3f}")
    print(f"RESULT {stem}_cold_dense_rss_mb={dense_rss:.0f}")
    print(f"RESULT {stem}_cold_lexical_s={lex_wall:.3f}")
    print(f"RESULT {stem}_cold_dense_vs_lexical_ratio={dense_wall / lex_wall:.3f}")
    print(f"RESULT {stem}_warm_p50_ms={w['p50_ms']:.3f}")
    print(f"RESULT {stem}_warm_p99_ms={w['p99_ms']:.3f}")
    print(f"RESULT {stem}_recall_at_10={w['recall']:.4f}")
    print(f"RESULT {stem}_exact_vs_numpy_ratio={w['exact_p50_ms'] / numpy_ms:.3f}")
    print(f"RESULT {stem}_after_foreign_write_ms={w['after_write_ms']:.3f}")
    print(f"RESULT {stem}_rss_growth_ratio={w['rss_growth']:.4f}")
