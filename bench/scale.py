"""The dense half at scale: ANN engines side by side on vectors shaped like real ones.

    python bench/scale.py [DIR] [--sizes 100000 1000000] [--engines usearch_i8 faiss ...]
                          [--queries 200]

DIR is a BEIR folder (default ``../shared/data/scifact``, read in place). Each record is
three of its sentences, its vector the normalised mean of their MiniLM vectors (encoded
once and cached, see ``_scale_data``), so recall means what it means on real data
(random vectors make every HNSW look broken; field notes).

Per size and engine: build rate (2 threads), then a fresh process reopens the saved index
(usearch memory-mapped with ``view=True``, FAISS with ``IO_FLAG_MMAP``, hnswlib loads it)
and reports the cold cost (import + open + first query, RSS), warm single-query p50/p99,
recall@10 against exact search, recall after rescoring 40 candidates by their float32
vectors (what the store does), and a filter keeping 1% of the rows: FAISS and hnswlib
filter during the graph walk, usearch (no predicate in its Python API) oversamples and
widens. Indexes are cached under the bench cache folder; a rerun reopens them.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import _scale_lance  # noqa: E402
import _scale_lexical  # noqa: E402
import _scale_store  # noqa: E402
import _scale_tenants  # noqa: E402
from _scale_data import (  # noqa: E402
    CACHE_DIR,
    DEFAULT_CORPUS,
    claim_vectors,
    claims,
    query_vectors,
    record_texts,
    record_vectors,
    sentence_vectors,
)

from agentkit.vector._dense_index import EXPANSION_SEARCH  # noqa: E402

K = 10
CANDIDATES = 40  # what the store rescores for k=10 (OVERSAMPLE x k)
FILTER_MOD = 100
EF = EXPANSION_SEARCH  # one search breadth for every engine: the store's
ENGINES = ("usearch_i8", "usearch_f16", "faiss", "hnswlib", "lancedb")
SECTIONS = ("store", "lexical", "tenants")


def exact_truth(
    vectors: npt.NDArray[np.float32], queries: npt.NDArray[np.float32], path: Path
) -> npt.NDArray[np.int64]:
    if path.exists():
        return np.load(path)
    best_s = np.full((len(queries), K), -np.inf, dtype=np.float32)
    best_i = np.zeros((len(queries), K), dtype=np.int64)
    step = 100_000
    for start in range(0, len(vectors), step):
        block = np.asarray(vectors[start : start + step])
        scores = queries @ block.T
        top = np.argpartition(-scores, min(K, scores.shape[1] - 1), axis=1)[:, :K]
        s = np.take_along_axis(scores, top, axis=1)
        all_s = np.concatenate([best_s, s], axis=1)
        all_i = np.concatenate([best_i, top + start], axis=1)
        keep = np.argsort(-all_s, axis=1, kind="stable")[:, :K]
        best_s = np.take_along_axis(all_s, keep, axis=1)
        best_i = np.take_along_axis(all_i, keep, axis=1)
    np.save(path, best_i)
    return best_i


def build(engine: str, vectors: npt.NDArray[np.float32], path: Path) -> float:
    """Build and save; returns records per second (0 when the index was cached)."""
    meta = path.with_suffix(".json")
    if path.exists() and meta.exists():
        return float(json.loads(meta.read_text())["rate"])
    n, dim = vectors.shape
    step = 50_000
    start = time.perf_counter()
    if engine.startswith("usearch"):
        from usearch.index import Index

        # usearch_<dtype>[_m<connectivity>]
        parts = engine.split("_")
        index = Index(
            ndim=dim,
            metric="ip",
            dtype=parts[1],
            connectivity=int(parts[2][1:]) if len(parts) > 2 else 16,
            expansion_add=128,
            expansion_search=EF,
        )
        for s in range(0, n, step):
            block = np.ascontiguousarray(vectors[s : s + step])
            index.add(np.arange(s, s + len(block), dtype=np.uint64), block, threads=2)
        rate = n / (time.perf_counter() - start)
        index.save(str(path))
    elif engine == "faiss":
        import faiss

        faiss.omp_set_num_threads(2)
        index = faiss.IndexHNSWFlat(dim, 32, faiss.METRIC_INNER_PRODUCT)
        for s in range(0, n, step):
            index.add(np.ascontiguousarray(vectors[s : s + step]))
        rate = n / (time.perf_counter() - start)
        faiss.write_index(index, str(path))
    elif engine == "hnswlib":
        import hnswlib

        index = hnswlib.Index(space="ip", dim=dim)
        index.init_index(max_elements=n, ef_construction=128, M=16)
        index.set_num_threads(2)
        for s in range(0, n, step):
            block = np.ascontiguousarray(vectors[s : s + step])
            index.add_items(block, np.arange(s, s + len(block)))
        rate = n / (time.perf_counter() - start)
        index.save_index(str(path))
    else:
        raise SystemExit(f"unknown engine {engine}")
    meta.write_text(json.dumps({"rate": rate}))
    return rate


def probe(engine: str, path: Path, vec_path: Path, q_path: Path, t_path: Path) -> dict[str, Any]:
    cmd = [
        sys.executable,
        str(HERE / "_ann_probe.py"),
        engine,
        str(path),
        str(vec_path),
        str(q_path),
        str(t_path),
        str(K),
        str(CANDIDATES),
        str(FILTER_MOD),
        str(EF),
    ]
    wall = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - wall
    if out.returncode != 0:
        raise SystemExit(f"{engine} probe failed: {out.stderr[-2000:]}")
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    result["wall_s"] = wall
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dir", nargs="?", default=str(DEFAULT_CORPUS))
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--engines", nargs="*", default=list(ENGINES))
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument(
        "--foreign-writes",
        type=int,
        default=100,
        metavar="N",
        help="one-record writes by other processes the store's reader watches",
    )
    parser.add_argument(
        "--no-store",
        action="store_true",
        help="the engines only, not the agentkit store beside them",
    )
    parser.add_argument(
        "--skip", nargs="*", default=[], choices=SECTIONS, help="store sections to leave out"
    )
    parser.add_argument("--lance-ivf", action="store_true", help="LanceDB's IVF-PQ too")
    parser.add_argument("--lance-queries", type=int, default=50, help="warm LanceDB queries")
    parser.add_argument("--claims", type=int, default=200, help="lexical and hybrid queries")
    parser.add_argument("--tenants", type=int, default=100, help="tenants in one file (0: none)")
    parser.add_argument("--tenant-size", type=int, default=10_000, help="records per tenant")
    args = parser.parse_args()
    skip = set(SECTIONS) if args.no_store else set(args.skip)

    texts, pool = sentence_vectors(Path(args.dir))
    print(f"sentence pool: {len(pool)} MiniLM vectors")
    queries = query_vectors(pool, args.queries)
    work = CACHE_DIR / "scale"
    work.mkdir(parents=True, exist_ok=True)
    q_path = work / f"queries-{len(pool)}-{args.queries}.npy"
    np.save(q_path, queries)
    for n in args.sizes:
        vectors = record_vectors(pool, n)
        vec_path = Path(vectors.filename)  # type: ignore[attr-defined]
        t_path = work / f"truth-{len(pool)}-{n}-{args.queries}.npy"
        exact_truth(vectors, queries, t_path)
        label = f"{n // 1000}k" if n < 1_000_000 else f"{n // 1_000_000}m"
        print(f"\n{n:,} records ({label}), {args.queries} queries, k={K}, ef={EF}")
        print(
            f"{'engine':<12} {'build/s':>8} {'cold s':>7} {'rss MB':>7} {'anon MB':>8} "
            f"{'p50 ms':>7} {'p99 ms':>7} {'recall':>7} {'rescored':>8} "
            f"{'1% p50':>7} {'1% rec':>7} {'short':>5}"
        )
        for engine in (e for e in args.engines if e != "lancedb"):
            path = work / f"{engine}-{len(pool)}-{n}.index"
            rate = build(engine, vectors, path)
            r = probe(engine, path, vec_path, q_path, t_path)
            print(
                f"{engine:<12} {rate:>8.0f} {r['open_s']:>7.2f} {r['rss_mb']:>7.0f} "
                f"{r['anon_mb']:>8.0f} {r['p50_ms']:>7.2f} {r['p99_ms']:>7.2f} "
                f"{r['recall']:>7.3f} {r['rescored_recall']:>8.3f} {r['filter_p50_ms']:>7.2f} "
                f"{r['filter_recall']:>7.3f} {r['filter_short']:>5}",
                flush=True,
            )
            stem = f"scale_{engine}_{label}"
            print(f"RESULT {stem}_build_per_s={rate:.0f}")
            print(f"RESULT {stem}_cold_s={r['open_s']:.3f}")
            print(f"RESULT {stem}_cold_rss_mb={r['rss_mb']:.0f}")
            print(f"RESULT {stem}_p50_ms={r['p50_ms']:.3f}")
            print(f"RESULT {stem}_p99_ms={r['p99_ms']:.3f}")
            print(f"RESULT {stem}_recall_at_10={r['rescored_recall']:.4f}")
            print(f"RESULT {stem}_filtered_recall_at_10={r['filter_recall']:.4f}")
        if "lancedb" in args.engines:
            _scale_lance.run(
                work / f"lancedb-{len(pool)}-{n}",
                vectors,
                q_path,
                t_path,
                label,
                args.lance_ivf,
                min(args.lance_queries, args.queries),
            )
        store = work / f"store-{len(pool)}-{n}.db"
        if "store" not in skip:
            print(f"\nagentkit SQLiteVectorStore, {n:,} records, the same queries")
            _scale_store.run(
                store,
                record_texts(texts, n),
                vectors,
                queries,
                np.load(t_path),
                label,
                args.foreign_writes,
            )
        if "lexical" not in skip:
            if not store.exists():
                asyncio.run(_scale_store.load(store, record_texts(texts, n), vectors))
            said = claims(Path(args.dir), args.claims)
            _scale_lexical.run(
                store,
                _scale_store.SCOPE,
                lambda n=n: record_texts(texts, n),
                said,
                claim_vectors(Path(args.dir), said),
                label,
                work,
            )
    if "tenants" not in skip and args.tenants > 0:
        n = args.tenants * args.tenant_size
        ref_n = min(args.sizes)
        ref_label = f"{ref_n // 1000}k" if ref_n < 1_000_000 else f"{ref_n // 1_000_000}m"
        reference = work / f"store-{len(pool)}-{ref_n}.db"
        ref_vectors = record_vectors(pool, ref_n)
        if not reference.exists():
            asyncio.run(_scale_store.load(reference, record_texts(texts, ref_n), ref_vectors))
        print(f"\n{args.tenants} tenants x {args.tenant_size:,} records in one store file")
        _scale_tenants.run(
            work / f"tenants-{len(pool)}-{args.tenants}x{args.tenant_size}.db",
            args.tenants,
            args.tenant_size,
            record_texts(texts, n),
            record_vectors(pool, n),
            reference,
            ref_label,
        )


if __name__ == "__main__":
    main()
