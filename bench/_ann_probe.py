"""One ANN engine reopened in a fresh process: the cold cost a CLI query pays, then warm
latency and recall (run by ``scale.py`` as a subprocess; not a bench itself).

    python bench/_ann_probe.py ENGINE INDEX VECTORS QUERIES TRUTH K CANDIDATES FILTER_MOD EF

Prints one JSON object: ``open_s`` (import + open + first query, the part a cold process
adds), ``rss_mb``/``anon_mb`` after the first query, ``p50_ms``/``p99_ms`` of single
queries, ``recall`` (the engine's own top-k vs exact) and ``rescored_recall`` (its top
CANDIDATES rescored by the memory-mapped float32 vectors, what the store does), and for a
filter keeping rows whose position % FILTER_MOD == 0: filtered p50 and recall.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

T0 = time.perf_counter()

import numpy as np  # noqa: E402


def _status() -> dict[str, float]:
    out: dict[str, float] = {}
    with open("/proc/self/status") as fh:
        for line in fh:
            key, _, rest = line.partition(":")
            if key in ("VmRSS", "RssAnon", "VmHWM"):
                out[key] = int(rest.split()[0]) / 1024
    return out


def _open(engine: str, path: str, dim: int, ef: int) -> Any:
    if engine.startswith("usearch"):
        from usearch.index import Index

        return Index.restore(path, view=True, expansion_search=ef)
    if engine == "faiss":
        import faiss

        faiss.omp_set_num_threads(1)
        index = faiss.read_index(path, faiss.IO_FLAG_MMAP)
        index.hnsw.efSearch = ef
        return index
    if engine == "hnswlib":
        import hnswlib

        index = hnswlib.Index(space="ip", dim=dim)
        index.load_index(path)
        index.set_ef(ef)
        index.set_num_threads(1)
        return index
    raise SystemExit(f"unknown engine {engine}")


EF = 64


def _search(engine: str, index: Any, q: np.ndarray, count: int, keep: Any = None) -> np.ndarray:
    if engine.startswith("usearch"):
        return np.asarray(index.search(q, count, threads=1).keys, dtype=np.int64)
    if engine == "faiss":
        if keep is not None:
            import faiss

            params = faiss.SearchParametersHNSW(sel=keep, efSearch=max(EF, count))
            _, ids = index.search(q[None, :], count, params=params)
        else:
            _, ids = index.search(q[None, :], count)
        return ids[0][ids[0] >= 0].astype(np.int64)
    if engine == "hnswlib":
        labels, _ = index.knn_query(q[None, :], k=count, filter=keep)
        return labels[0].astype(np.int64)
    raise SystemExit(engine)


def main() -> None:
    engine, path, vec_path, q_path, truth_path = sys.argv[1:6]
    k, cand, mod = int(sys.argv[6]), int(sys.argv[7]), int(sys.argv[8])
    global EF
    EF = int(sys.argv[9])
    queries = np.load(q_path)
    vectors = np.load(vec_path, mmap_mode="r")
    index = _open(engine, path, queries.shape[1], EF)
    _search(engine, index, queries[0], k)
    open_s = time.perf_counter() - T0
    first = _status()
    truth = np.load(truth_path)
    times, hits, rescored_hits = [], 0, 0
    for qi, q in enumerate(queries):
        t = time.perf_counter()
        found = _search(engine, index, q, cand)
        times.append(time.perf_counter() - t)
        hits += len(set(found[:k].tolist()) & set(truth[qi].tolist()))
        scores = np.asarray(vectors[np.sort(found)]) @ q
        best = np.sort(found)[np.argsort(-scores)[:k]]
        rescored_hits += len(set(best.tolist()) & set(truth[qi].tolist()))
    out: dict[str, Any] = {
        "open_s": open_s,
        "rss_mb": first["VmRSS"],
        "anon_mb": first["RssAnon"],
        "p50_ms": float(np.percentile(times, 50) * 1e3),
        "p99_ms": float(np.percentile(times, 99) * 1e3),
        "recall": hits / (k * len(queries)),
        "rescored_recall": rescored_hits / (k * len(queries)),
    }
    # A filter keeping 1/mod of the rows: exact truth, then what the engine returns.
    n = vectors.shape[0]
    allowed = np.arange(0, n, mod)
    keep: Any = None
    if engine == "faiss":
        import faiss

        bits = np.zeros((n + 7) // 8, dtype=np.uint8)
        bits[allowed >> 3] |= (1 << (allowed & 7)).astype(np.uint8)
        keep = faiss.IDSelectorBitmap(n, faiss.swig_ptr(bits))
    elif engine == "hnswlib":
        keep = lambda label: label % mod == 0  # noqa: E731
    ftimes, fhits, short = [], 0, 0
    sub = np.asarray(vectors[allowed])
    for q in queries[:50]:
        want = allowed[np.argsort(-(sub @ q))[:k]]
        t = time.perf_counter()
        if keep is None:  # no filter in the engine: oversample, post-check, widen
            count, found = cand, np.zeros(0, dtype=np.int64)
            while True:
                got = _search(engine, index, q, count)
                found = got[got % mod == 0][:k]
                if len(found) >= k or count >= n:
                    break
                count = min(n, count * 4)
        else:
            found = _search(engine, index, q, k, keep)
        ftimes.append(time.perf_counter() - t)
        short += int(len(found) < k)
        fhits += len(set(found.tolist()) & set(want.tolist()))
    out["filter_p50_ms"] = float(np.percentile(ftimes, 50) * 1e3)
    out["filter_recall"] = fhits / (k * 50)
    out["filter_short"] = short
    out["peak_rss_mb"] = _status()["VmHWM"]
    print(json.dumps(out))


if __name__ == "__main__":
    main()
