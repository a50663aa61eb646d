"""Many tenants in one store file, for ``scale.py`` (not a bench itself).

Issue #25: "100 tenants x 10k records in one file: each tenant's first cold query <= the
100k figure". One file holds ``tenants`` scopes of ``size`` records each (the first
``tenants x size`` scale records, tenant ``t`` taking rows ``t*size ..``), loaded once
and kept in the bench cache. Then each tenant's first dense query is a fresh
``agentkit-memory query --dense`` process on its own scope (wall and peak RSS), and the
reference, the cold dense query on the single-scope store of the reference size, is
measured in between (once every ``REF_EVERY`` tenants), so both see the same machine.
"""

from __future__ import annotations

import asyncio
import shutil
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import numpy.typing as npt
from _scale_store import BATCH, cold

from agentkit.kernel import Scope
from agentkit.vector import Chunk, HashingEmbedder, SQLiteVectorStore

REF_EVERY = 10
QUERY = "cell biology of cancer"


def tenant(t: int) -> Scope:
    return Scope("bench", f"tenant-{t:03d}")


async def load(
    path: Path, tenants: int, size: int, texts: Iterator[str], vectors: npt.NDArray[np.float32]
) -> float:
    """Records per second into a fresh file, tenant after tenant."""
    tmp = path.with_name(path.name + ".loading")
    for leftover in tmp.parent.glob(tmp.name + "*"):
        if leftover.is_dir():
            shutil.rmtree(leftover)
        else:
            leftover.unlink()
    dim = int(vectors.shape[1])
    start = time.perf_counter()
    async with SQLiteVectorStore(tmp, embedder=HashingEmbedder(dim=dim)) as store:
        for t in range(tenants):
            for lo in range(t * size, (t + 1) * size, BATCH):
                hi = min((t + 1) * size, lo + BATCH)
                chunks = [Chunk(f"r{i}", next(texts)) for i in range(lo, hi)]
                await store.upsert_vectors(chunks, np.asarray(vectors[lo:hi]), scope=tenant(t))
            if t % 10 == 0:
                print(f"  loaded tenant {t + 1}/{tenants}", file=sys.stderr, flush=True)
    rate = tenants * size / (time.perf_counter() - start)
    for side in tmp.parent.glob(tmp.name + "*"):
        side.rename(side.with_name(side.name.replace(tmp.name, path.name, 1)))
    return rate


def run(
    path: Path,
    tenants: int,
    size: int,
    texts: Iterator[str],
    vectors: npt.NDArray[np.float32],
    reference: Path,
    ref_label: str,
) -> None:
    if not path.exists():
        rate = asyncio.run(load(path, tenants, size, texts, vectors))
        print(f"loaded {tenants} tenants x {size:,} records in one file: {rate:,.0f} rec/s")
    walls, peaks, refs = [], [], []
    for t in range(tenants):
        if t % REF_EVERY == 0:
            refs.append(cold(reference, "dense", QUERY)[0])
        wall, peak = cold(path, "dense", QUERY, scope=tenant(t))
        walls.append(wall)
        peaks.append(peak)
    refs.append(cold(reference, "dense", QUERY)[0])
    ref = float(np.median(refs))
    p50, worst = float(np.median(walls)), max(walls)
    over = sum(w > ref for w in walls)
    print(
        f"{tenants} tenants x {size:,} in one file, each tenant's first cold "
        f"`query --dense`: p50 {p50:.2f} s, max {worst:.2f} s, peak RSS max "
        f"{max(peaks):.0f} MB; the {ref_label} store's cold dense query (median of "
        f"{len(refs)}, between them) {ref:.2f} s: p50 {p50 / ref:.2f}x, max "
        f"{worst / ref:.2f}x (target: each <= 1x; {over} of {tenants} over)"
    )
    stem = f"scale_tenants_{tenants}x{size}"
    print(f"RESULT {stem}_cold_dense_p50_s={p50:.3f}")
    print(f"RESULT {stem}_cold_dense_max_s={worst:.3f}")
    print(f"RESULT {stem}_cold_dense_rss_max_mb={max(peaks):.0f}")
    print(f"RESULT {stem}_reference_cold_dense_s={ref:.3f}")
    print(f"RESULT {stem}_p50_vs_reference_ratio={p50 / ref:.3f}")
    print(f"RESULT {stem}_max_vs_reference_ratio={worst / ref:.3f}")
