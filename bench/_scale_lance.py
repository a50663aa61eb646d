"""LanceDB as a peer at scale, for ``scale.py`` (not a bench itself).

    python bench/_scale_lance.py DB QUERIES TRUTH MODE COUNT   (the probe: one process)

The same record vectors go into a LanceDB table (id, vector) in the bench cache, once.
Then, each in a fresh process: a cold query (import + connect + open + one query; wall
and peak RSS by ``/usr/bin/time``), and a warm run (p50/p99 of single queries, recall@10
against exact), for its brute force (``bypass_vector_index``) and, with ``--lance-ivf``,
its IVF-PQ index (trained once, cached; searched with ``nprobes`` 20 and candidates
refined by their full vectors, ``refine_factor`` 10 -- LanceDB's answer to the store's
rescoring). lancedb is a bench-only dependency: without it the peer is skipped.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

K = 10
NPROBES = 20
REFINE = 10
TABLE = "records"
BLOCK = 100_000


def available() -> bool:
    try:
        import lancedb  # noqa: F401
    except ImportError:
        return False
    return True


def _query(table: Any, q: npt.NDArray[np.float32], mode: str) -> list[int]:
    search = table.search(q).distance_type("dot").limit(K).select(["id"])
    if mode == "brute":
        search = search.bypass_vector_index()
    else:
        search = search.nprobes(NPROBES).refine_factor(REFINE)
    return [int(i) for i in search.to_arrow()["id"].to_pylist()]


def build(folder: Path, vectors: npt.NDArray[np.float32], ivf: bool) -> dict[str, float]:
    """The table (and its IVF-PQ index when asked), cached: seconds each took."""
    import lancedb
    import pyarrow as pa

    meta_path = folder / "agentkit-bench.json"
    meta: dict[str, float] = json.loads(meta_path.read_text()) if meta_path.exists() else {}
    db = lancedb.connect(str(folder))
    n, dim = vectors.shape
    if "table_s" not in meta:
        start = time.perf_counter()
        table = None
        for lo in range(0, n, BLOCK):
            block = np.ascontiguousarray(vectors[lo : lo + BLOCK]).reshape(-1)
            data = pa.table(
                {
                    "id": pa.array(np.arange(lo, lo + len(block) // dim, dtype=np.int64)),
                    "vector": pa.FixedSizeListArray.from_arrays(pa.array(block), dim),
                }
            )
            if table is None:
                table = db.create_table(TABLE, data=data, mode="overwrite")
            else:
                table.add(data)
        meta["table_s"] = time.perf_counter() - start
        meta.pop("ivf_s", None)
        meta_path.write_text(json.dumps(meta))
    if ivf and "ivf_s" not in meta:
        from lancedb.index import IvfPq

        table = db.open_table(TABLE)
        start = time.perf_counter()
        partitions = max(1, int(np.sqrt(n)))
        table.create_index(
            "vector",
            config=IvfPq(distance_type="dot", num_partitions=partitions, num_sub_vectors=dim // 8),
        )
        meta["ivf_s"] = time.perf_counter() - start
        meta_path.write_text(json.dumps(meta))
    return meta


def cold(folder: Path, q_path: Path, mode: str) -> tuple[float, float]:
    """(wall s, peak RSS MB) of a fresh process that opens the table and asks one query."""
    report = folder / f"cold-{mode}.time"
    code = (
        "import sys, numpy as np, lancedb\n"
        "sys.path.insert(0, sys.argv[3])\n"
        "from _scale_lance import _query\n"
        "t = lancedb.connect(sys.argv[1]).open_table('records')\n"
        "_query(t, np.load(sys.argv[2])[0], sys.argv[4])\n"
    )
    here = str(Path(__file__).resolve().parent)
    cmd = ["/usr/bin/time", "-o", str(report), "-f", "%e %M", sys.executable, "-c", code,
           str(folder), str(q_path), here, mode]  # fmt: skip
    env = dict(os.environ, RUST_LOG="error")
    done = subprocess.run(cmd, capture_output=True, text=True, check=False, env=env)
    if done.returncode != 0:
        raise SystemExit(f"lancedb cold {mode} failed: {done.stderr[-2000:]}")
    wall, kb = report.read_text().split()[-2:]
    report.unlink()
    return float(wall), int(kb) / 1024


def warm(folder: Path, q_path: Path, t_path: Path, mode: str, count: int) -> dict[str, float]:
    cmd = [sys.executable, __file__, str(folder), str(q_path), str(t_path), mode, str(count)]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"lancedb warm {mode} failed: {done.stderr[-2000:]}")
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def run(
    folder: Path,
    vectors: npt.NDArray[np.float32],
    q_path: Path,
    t_path: Path,
    label: str,
    ivf: bool,
    count: int,
) -> None:
    if not available():
        print("lancedb: not installed (pip install --group bench), peer skipped")
        return
    meta = build(folder, vectors, ivf)
    import lancedb

    version = lancedb.__version__
    print(f"lancedb {version}: table written in {meta['table_s']:.0f} s", end="")
    print(f", IVF-PQ trained in {meta['ivf_s']:.0f} s" if "ivf_s" in meta else "")
    for mode in ("brute", "ivf_pq") if "ivf_s" in meta else ("brute",):
        wall, peak = cold(folder, q_path, mode)
        w = warm(folder, q_path, t_path, mode, count)
        name = "brute force" if mode == "brute" else f"IVF-PQ nprobes {NPROBES} refine {REFINE}"
        print(
            f"  lancedb {name}: cold {wall:.2f} s / {peak:.0f} MB peak; warm p50 "
            f"{w['p50_ms']:.1f} ms, p99 {w['p99_ms']:.1f} ms over {count} queries, "
            f"recall@10 {w['recall']:.3f}"
        )
        stem = f"scale_lancedb_{mode}_{label}"
        print(f"RESULT {stem}_cold_s={wall:.3f}")
        print(f"RESULT {stem}_cold_rss_mb={peak:.0f}")
        print(f"RESULT {stem}_p50_ms={w['p50_ms']:.3f}")
        print(f"RESULT {stem}_p99_ms={w['p99_ms']:.3f}")
        print(f"RESULT {stem}_recall_at_10={w['recall']:.4f}")


def _probe() -> None:
    import lancedb

    folder, q_path, t_path, mode, count = sys.argv[1:6]
    queries = np.load(q_path)[: int(count)]
    truth = np.load(t_path)
    table = lancedb.connect(folder).open_table(TABLE)
    _query(table, queries[0], mode)
    times, hits = [], 0
    for qi, q in enumerate(queries):
        t = time.perf_counter()
        found = _query(table, q, mode)
        times.append(time.perf_counter() - t)
        hits += len(set(found) & set(truth[qi].tolist()))
    print(
        json.dumps(
            {
                "p50_ms": float(np.percentile(times, 50) * 1e3),
                "p99_ms": float(np.percentile(times, 99) * 1e3),
                "recall": hits / (K * len(queries)),
            }
        )
    )


if __name__ == "__main__":
    os.environ.setdefault("RUST_LOG", "error")  # lance's deprecation notices, per query
    _probe()
