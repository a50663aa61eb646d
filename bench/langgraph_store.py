"""AgentkitStore.search with a query vs LangGraph's InMemoryStore and SqliteStore.

10,000 items ``{"text": ..., "n": i}`` under ten namespaces ``("bench", "uK")``, indexed
on ``text`` with the same embedding everywhere (agentkit's HashingEmbedder, 256 wide,
handed to LangGraph's stores as their ``embed`` function, so both sides embed the query
with the same code). Each call is ``store.search(("bench",), query=q, limit=10)``
through the sync API (SqliteStore has no other), over 20 rotating queries.

Ours is measured on two backends: the in-memory agentkit store (dense only: it has no
lexical index) and the SQLite agentkit store (hybrid: dense and lexical, RRF-fused, read
deep enough that the page is exact). LangGraph's SqliteStore needs sqlite-vec, which
this interpreter's sqlite3 cannot load, so it gets a pysqlite3 connection.

Rounds interleave the stores and rotate who goes first; the figure per store is the
median per-call wall time over the rounds, and the ratios are ours / theirs (target:
below 1.0 against both).

    python bench/langgraph_store.py [--items N] [--rounds N] [--calls N]
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse
import random
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pysqlite3.dbapi2 as pysqlite3
from agentkit_langchain import AgentkitStore
from langgraph.store.base import BaseStore, PutOp
from langgraph.store.memory import InMemoryStore
from langgraph.store.sqlite import SqliteStore

from agentkit.vector import HashingEmbedder, InMemoryVectorStore
from agentkit.vector.sqlite import SQLiteVectorStore

DIM = 256
EMBEDDER = HashingEmbedder(dim=DIM)
PREFIX = ("bench",)


def embed(texts: Iterable[str]) -> list[list[float]]:
    """LangGraph's embed function: the very rows agentkit's stores compute."""
    return EMBEDDER.embed_sync(list(texts)).tolist()  # type: ignore[no-any-return]


def corpus(n: int, seed: int = 7) -> tuple[list[PutOp], list[str]]:
    rng = random.Random(seed)
    vocab = [f"w{i}" for i in range(3000)]
    weights = [1.0 / (i + 1) for i in range(len(vocab))]  # Zipf-like word frequencies
    ops = []
    for i in range(n):
        words = rng.choices(vocab, weights, k=rng.randint(8, 24))
        ops.append(PutOp(("bench", f"u{i % 10}"), f"item-{i}", {"text": " ".join(words), "n": i}))
    queries = [" ".join(rng.choices(vocab[:800], k=rng.randint(2, 5))) for _ in range(20)]
    return ops, queries


def load(store: BaseStore, ops: list[PutOp]) -> None:
    for start in range(0, len(ops), 1000):
        store.batch(ops[start : start + 1000])


def timed(fn: Callable[[str], Any], queries: list[str], calls: int, offset: int) -> float:
    start = time.perf_counter()
    for i in range(calls):
        fn(queries[(offset + i) % len(queries)])
    return (time.perf_counter() - start) / calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--calls", type=int, default=20)
    args = parser.parse_args()

    ops, queries = corpus(args.items)
    index: Any = {"dims": DIM, "embed": embed, "fields": ["text"], "text_fields": ["text"]}
    tmp = Path(tempfile.mkdtemp(prefix="lgbench-"))
    conn = pysqlite3.connect(str(tmp / "lg.db"), check_same_thread=False, isolation_level=None)
    lg_sqlite = SqliteStore(conn, index=index)  # type: ignore[arg-type]
    lg_sqlite.setup()
    stores: dict[str, BaseStore] = {
        "LangGraph InMemoryStore": InMemoryStore(index=index),
        "LangGraph SqliteStore": lg_sqlite,
    }
    ours_sqlite = SQLiteVectorStore(tmp / "ours.db", embedder=EMBEDDER)
    stores["AgentkitStore (in-memory)"] = AgentkitStore(
        InMemoryVectorStore(EMBEDDER), index={"fields": ["text"]}
    )
    stores["AgentkitStore (SQLite, hybrid)"] = AgentkitStore(
        ours_sqlite, index={"fields": ["text"]}
    )
    for name, store in stores.items():
        start = time.perf_counter()
        load(store, ops)
        print(f"loaded {args.items:,} items into {name} in {time.perf_counter() - start:.1f} s")

    # Same items, same embedding: the dense rankings must agree before timing means much.
    same_order = same_set = 0
    for q in queries:
        a = stores["AgentkitStore (in-memory)"].search(PREFIX, query=q, limit=10)
        b = stores["LangGraph InMemoryStore"].search(PREFIX, query=q, limit=10)
        same_order += [i.key for i in a] == [i.key for i in b]
        # Equal cosines may be listed in either order (we break ties by key), and ours
        # are float32: the scores agree to 1e-4, position by position.
        same_set += len(a) == len(b) and all(
            abs((x.score or 0.0) - (y.score or 0.0)) < 1e-4 for x, y in zip(a, b, strict=True)
        )
    print(
        f"top-10 vs InMemoryStore (same embedding): same order {same_order}/{len(queries)}, "
        f"same scores (1e-4) {same_set}/{len(queries)}"
    )

    searches = {
        name: (lambda q, s=store: s.search(PREFIX, query=q, limit=10))
        for name, store in stores.items()
    }
    for fn in searches.values():  # warm-up: caches, lazily built indexes
        timed(fn, queries, len(queries), 0)
    per_round: dict[str, list[float]] = {name: [] for name in searches}
    names = list(searches)
    for r in range(args.rounds):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            per_round[name].append(timed(searches[name], queries, args.calls, r))
    ms = {name: statistics.median(v) * 1e3 for name, v in per_round.items()}
    keys = {  # RESULT names (run_all.py): no spaces or brackets
        "LangGraph InMemoryStore": "langgraph_inmemory",
        "LangGraph SqliteStore": "langgraph_sqlite",
        "AgentkitStore (in-memory)": "ours_inmemory",
        "AgentkitStore (SQLite, hybrid)": "ours_sqlite_hybrid",
    }

    print(
        f"\nsearch(('bench',), query=..., limit=10) over {args.items:,} items, dim {DIM}, "
        f"{args.rounds} rounds x {args.calls} calls (median ms per call)"
    )
    for name, value in ms.items():
        print(f"  {name:34s} {value:8.2f} ms")
    print()
    for ours in ("AgentkitStore (in-memory)", "AgentkitStore (SQLite, hybrid)"):
        for theirs in ("LangGraph InMemoryStore", "LangGraph SqliteStore"):
            ratio = ms[ours] / ms[theirs]
            verdict = "met" if ratio < 1.0 else "NOT met"
            print(f"  {ours} / {theirs}: {ratio:.3f}x  (target < 1.0: {verdict})")
    for name, value in ms.items():
        print(f"RESULT langgraph_store_{keys[name]}_ms={value:.3f}")
    for ours in ("AgentkitStore (in-memory)", "AgentkitStore (SQLite, hybrid)"):
        for theirs in ("LangGraph InMemoryStore", "LangGraph SqliteStore"):
            print(f"RESULT langgraph_store_{keys[ours]}_over_{keys[theirs]}_ratio="
                  f"{ms[ours] / ms[theirs]:.4f}")
    print(f"RESULT langgraph_store_same_scores_ratio={same_set / len(queries):.4f}")
    conn.close()
    import asyncio

    asyncio.run(ours_sqlite.close())
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
