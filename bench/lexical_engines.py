"""Lexical search: ours beside bm25s and raw tantivy, same texts, one process.

    python bench/lexical_engines.py [DIR] [--n 100000 (0: SciFact only)] [--queries 300]

Every engine answers every query in turn (interleaved, the order rotating), so load
from other processes on a shared machine hits all of them alike.

Corpora: SciFact (DIR, default ``../shared/data/scifact``; 5,183 records, title + text,
as ``eval`` ingests them) and a synthetic ``--n`` chunks of three random SciFact
sentences each (seed 7, as ingest_query.py builds them). Queries: SciFact claims, one
at a time, k=10.

- ours: ``SQLiteVectorStore.lexical_search`` through its public async API (a fresh
  store in a temporary directory; the row reads, snapshot and thread hop included).
- ours-nohop (diagnostic): the same snapshot read called directly, without the hop to
  a reader thread and back (the public API always makes it; the event loop never blocks).
- bm25s: ``bm25s.BM25`` defaults with PyStemmer's English stemmer; the query is
  tokenised inside the timing.
- tantivy: an in-memory index, ``en_stem`` tokenizer, the same term-query shape as
  ours, and each hit's stored text read back.
- hybrid (100k only): HybridMemory, the CLI's hybrid (dense + lexical, RRF) over our store,
  with ingest_query.py's seeded 384-wide vectors (query encoding is ~free here).

Targets (issue 13): ours p50 <= 1.5x tantivy's on both corpora, p99 <= 10 ms at 100k,
hybrid p50 <= 20 ms at 100k. Prints a table and ``RESULT name=value`` lines.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import re
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from ingest_query import SeededEmbedder, pct, records  # noqa: E402

from agentkit.cli import _ingest  # noqa: E402
from agentkit.kernel import Ctx, Scope  # noqa: E402
from agentkit.state.memory import HybridMemory  # noqa: E402
from agentkit.vector import Chunk, SQLiteVectorStore  # noqa: E402
from agentkit.vector._lexical_text import query_terms  # noqa: E402

SCOPE = Scope("bench", "lexical")
K = 10


def scifact_texts(corpus: Path) -> list[str]:
    return [_ingest.beir_text(str(r.get("title") or "").strip(), str(r.get("text") or "").strip())
            for r in records(corpus)]


def synthetic_texts(corpus: Path, n: int) -> list[str]:
    sentences = [s for r in records(corpus) for s in re.split(r"(?<=\.)\s+", r["text"]) if s]
    rng = random.Random(7)
    return [" ".join(rng.choice(sentences) for _ in range(3)) for _ in range(n)]


def timed(fn: Callable[[str], Any], queries: list[str]) -> dict[str, float]:
    for q in queries[:10]:
        fn(q)
    times = []
    for q in queries:
        start = time.perf_counter()
        fn(q)
        times.append((time.perf_counter() - start) * 1000)
    return {"p50": pct(times, 0.5), "p99": pct(times, 0.99)}


def bm25s_engine(texts: list[str]) -> Callable[[str], Any]:
    import bm25s
    import Stemmer

    stemmer = Stemmer.Stemmer("english")
    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize(texts, stemmer=stemmer, show_progress=False),
                    show_progress=False)

    def run(q: str) -> Any:
        tokens = bm25s.tokenize([q], stemmer=stemmer, show_progress=False)
        if not tokens.vocab:
            return []
        return retriever.retrieve(tokens, k=K, show_progress=False, n_threads=1)

    return run


def tantivy_engine(texts: list[str]) -> Callable[[str], Any]:
    import tantivy

    builder = tantivy.SchemaBuilder()
    builder.add_text_field("text", stored=True, tokenizer_name="en_stem")
    schema = builder.build()
    index = tantivy.Index(schema)
    writer = index.writer(200_000_000, 1)
    for text in texts:
        writer.add_document(tantivy.Document(text=text))
    writer.commit()
    writer.wait_merging_threads()
    index.reload()
    searcher = index.searcher()

    def run(q: str) -> Any:
        clauses = [(tantivy.Occur.Should, tantivy.Query.term_query(schema, "text", t))
                   for t in query_terms(q)]
        hits = searcher.search(tantivy.Query.boolean_query(clauses), K).hits
        return [searcher.doc(addr)["text"][0] for _, addr in hits]

    return run


async def measure(
    db: Path, texts: list[str], queries: list[str], hybrid: bool
) -> dict[str, dict[str, float]]:
    """Every engine on every query, interleaved (the order rotates per query), so a
    burst of load on the shared machine lands on all of them alike."""
    async with SQLiteVectorStore(db, embedder=SeededEmbedder()) as store:
        for start in range(0, len(texts), 5000):
            await store.upsert(
                [Chunk(f"d{i}", texts[i]) for i in range(start, min(len(texts), start + 5000))],
                scope=SCOPE,
            )
        hybrid = HybridMemory(store, depth=50)
        ctx = Ctx(SCOPE)

        async def ours(q: str) -> Any:
            return await store.lexical_search(q, k=K, scope=SCOPE)

        async def fused(q: str) -> Any:
            return await hybrid.query(q, k=K, ctx=ctx)

        bucket = (SCOPE.org_id or "", SCOPE.domain_id or "")

        def in_thread(q: str) -> Any:
            # Diagnostic, private API: the same read minus the hop to a reader thread
            # and back, which is what load on a shared machine inflates most.
            return store._in_snapshot(store._lexical_sync, bucket, query_terms(q), K, None)

        peers = {"bm25s": bm25s_engine(texts), "tantivy": tantivy_engine(texts)}
        engines: dict[str, Callable[[str], Any]] = {"ours": ours, "ours-nohop": in_thread, **peers}
        if hybrid:
            engines["hybrid"] = fused
        times: dict[str, list[float]] = {name: [] for name in engines}
        names = list(engines)
        for n, q in enumerate(queries[:10] + queries):
            for j in range(len(names)):
                name = names[(n + j) % len(names)]
                t0 = time.perf_counter()
                result = engines[name](q)
                if asyncio.iscoroutine(result):
                    await result
                if n >= 10:  # the first ten warm every engine up
                    times[name].append((time.perf_counter() - t0) * 1000)
    return {name: {"p50": pct(t, 0.5), "p99": pct(t, 0.99)} for name, t in times.items()}


def corpus_run(
    label: str, texts: list[str], queries: list[str], hybrid: bool
) -> dict[str, dict[str, float]]:
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        stats = asyncio.run(measure(Path(tmp) / "ours.db", texts, queries, hybrid))
        print(f"  {label}: built and queried in {time.perf_counter() - t0:.0f}s", flush=True)
    return stats


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("dir", nargs="?", default=str(ROOT.parent / "shared" / "data" / "scifact"))
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=300)
    args = parser.parse_args()
    data = Path(args.dir)
    corpus = _ingest.beir_corpus_file(data)
    if corpus is None:
        print(f"no SciFact corpus in {str(data)!r}", file=sys.stderr)
        return 2
    with (data / "queries.jsonl").open(encoding="utf-8") as fh:
        queries = [json.loads(line)["text"] for line in fh if line.strip()][: args.queries]

    runs = {"5k": corpus_run("5k", scifact_texts(corpus), queries, hybrid=False)}
    if args.n > 0:  # --n 0: SciFact only
        label = f"{args.n // 1000}k"
        runs[label] = corpus_run(label, synthetic_texts(corpus, args.n), queries, hybrid=True)
    print(f"{'corpus':<6} {'engine':<10} {'p50 ms':>8} {'p99 ms':>8} {'p50/tantivy':>12}")
    for label, stats in runs.items():
        base = stats["tantivy"]["p50"]
        for engine, s in stats.items():
            print(f"{label:<6} {engine:<10} {s['p50']:8.2f} {s['p99']:8.2f} "
                  f"{s['p50'] / base:12.2f}")
    for label, stats in runs.items():
        for engine, s in stats.items():
            engine = engine.replace("-", "_")
            print(f"RESULT lexical_{label}_{engine}_p50_ms={s['p50']:.3f}")
            print(f"RESULT lexical_{label}_{engine}_p99_ms={s['p99']:.3f}")
        ratio = stats["ours"]["p50"] / stats["tantivy"]["p50"]
        print(f"RESULT lexical_{label}_ours_over_tantivy_p50={ratio:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
