"""Lexical and hybrid search over the scale store, for ``scale.py`` (not a bench itself).

Issue #25's last two targets, side by side in one run, with the same SciFact claims as
queries:

- the store's ``lexical_search`` against tantivy's own search on the same texts, two
  plain tantivy indexes built over the records' texts in this run: one with tantivy's
  defaults (default tokenizer, the writer's default heap and threads, the query parsed
  by tantivy, matches counted), one with the store's analyzer and query (the same
  terms, top-k only), which leaves only the store's own overhead in the ratio. All
  return the ten best records' texts; the three are timed query by query in turns.
  Target: the store at most 1.5x tantivy. The store's segment count is printed beside
  it (the issue saw it grow with the load; a query pays per segment).
- hybrid p50 through ``HybridMemory`` (the CLI's path) with each claim's vector made
  beforehand, so the query's encoding is not in it. Target: 30 ms at 1M.
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from agentkit.kernel import Ctx, Scope
from agentkit.state.memory import HybridMemory
from agentkit.vector import HashingEmbedder, SQLiteVectorStore
from agentkit.vector._lexical_text import ANALYZER, analyzer, query_terms

_WORDS = re.compile(r"[^\w]+")

K = 10
WARM = 10  # queries run once before timing (page cache, searcher, first-call costs)


def _p50_ms(times: list[float]) -> float:
    return float(np.percentile(times, 50) * 1e3)


def _p99_ms(times: list[float]) -> float:
    return float(np.percentile(times, 99) * 1e3)


def store_segments(path: Path) -> int:
    """Segments in the store's lexical indexes (tantivy's ``meta.json`` of each scope)."""
    total = 0
    for meta in path.with_name(path.name + ".lexical").glob("*/meta.json"):
        total += len(json.loads(meta.read_text())["segments"])
    return total


def plain_tantivy(folder: Path, texts: Iterable[str], *, ours: bool) -> tuple[Any, float]:
    """A tantivy index over ``texts`` with tantivy's defaults (``ours``: with the store's
    analyzer instead, so both hold the same terms): (index, seconds to build)."""
    import tantivy

    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    builder = tantivy.SchemaBuilder()
    builder.add_integer_field("id", stored=True)
    if ours:
        builder.add_text_field("text", stored=True, tokenizer_name=ANALYZER)
    else:
        builder.add_text_field("text", stored=True)
    index = tantivy.Index(builder.build(), path=str(folder))
    if ours:
        index.register_tokenizer(ANALYZER, analyzer())
    start = time.perf_counter()
    writer = index.writer()
    for i, text in enumerate(texts):
        writer.add_document(tantivy.Document(id=i, text=text))
    writer.commit()
    writer.wait_merging_threads()
    index.reload()
    return index, time.perf_counter() - start


def tantivy_search(index: Any, *, ours: bool) -> Callable[[str], int]:
    """One query against a plain index: make it, search, read the hits' texts.

    Defaults: tantivy's own parser over the claim's words (punctuation dropped, so no
    phrase or field syntax: a disjunction of words, as the store searches) and its
    ``search`` as called by default (which also counts every match). ``ours``: the
    store's terms, one term query each, top-k only (``count=False``, as the store asks:
    tantivy can then skip blocks that cannot reach the top k).
    """
    import tantivy

    searcher = index.searcher()
    schema = index.schema

    def one(text: str) -> int:
        if ours:
            query = tantivy.Query.boolean_query(
                [
                    (tantivy.Occur.Should, tantivy.Query.term_query(schema, "text", term))
                    for term in query_terms(text)
                ]
            )
            hits = searcher.search(query, K, count=False).hits
        else:
            hits = searcher.search(index.parse_query(_WORDS.sub(" ", text), ["text"]), K).hits
        return len([searcher.doc(addr)["text"] for _, addr in hits])

    return one


async def time_all(
    path: Path,
    scope: Scope,
    queries: list[str],
    vectors: npt.NDArray[np.float32],
    plain: dict[str, Callable[[str], int]],
) -> dict[str, list[float]]:
    """The store's lexical search and each plain index's, query by query in turns (so
    the machine's load falls on each alike); then HybridMemory over the same claims."""
    dim = int(vectors.shape[1])
    out: dict[str, list[float]] = {"store": [], **{name: [] for name in plain}}
    async with SQLiteVectorStore(path, embedder=HashingEmbedder(dim=dim)) as store:

        async def lexical(text: str) -> int:
            return len(await store.lexical_search(text, k=K, scope=scope))

        for text in queries[:WARM]:
            await lexical(text)
            for one in plain.values():
                one(text)
        for qi, text in enumerate(queries):
            turns = ["store", *plain]
            turns = turns[qi % len(turns) :] + turns[: qi % len(turns)]
            for name in turns:
                t = time.perf_counter()
                if name == "store":
                    await lexical(text)
                else:
                    plain[name](text)
                out[name].append(time.perf_counter() - t)
        memory = HybridMemory(store)
        ctx = Ctx(scope)
        for text, vec in zip(queries[:WARM], vectors, strict=False):
            await memory.search(text, k=K, ctx=ctx, vector=vec)
        times, dense, lexical_half = [], [], []
        for text, vec in zip(queries, vectors, strict=True):
            t = time.perf_counter()
            found = await memory.search(text, k=K, ctx=ctx, vector=vec)
            times.append(time.perf_counter() - t)
            halves = {h.name: h.seconds for h in found.halves}
            dense.append(halves["dense"])
            lexical_half.append(halves["lexical"])
        out["hybrid"], out["hybrid_dense"], out["hybrid_lexical"] = times, dense, lexical_half
    return out


def run(
    path: Path,
    scope: Scope,
    texts: Any,
    queries: list[str],
    vectors: npt.NDArray[np.float32],
    label: str,
    work: Path,
) -> None:
    """``texts``: a callable giving the records' texts afresh (each plain index reads them)."""
    segments = store_segments(path)
    plain: dict[str, Callable[[str], int]] = {}
    built: dict[str, tuple[float, int]] = {}
    for ours, name in ((False, "defaults"), (True, "same_terms")):
        index, build_s = plain_tantivy(work / f"tantivy-{name}-{label}", texts(), ours=ours)
        plain[name] = tantivy_search(index, ours=ours)
        built[name] = (build_s, index.searcher().num_segments)
    got = asyncio.run(time_all(path, scope, queries, vectors, plain))
    plain.clear()
    for name in built:
        shutil.rmtree(work / f"tantivy-{name}-{label}", ignore_errors=True)
    store_ms = _p50_ms(got["store"])
    print(
        f"lexical, {len(queries)} SciFact claims, k={K}: store p50 {store_ms:.2f} ms "
        f"(p99 {_p99_ms(got['store']):.1f}, {segments} segments)"
    )
    stem = f"scale_store_{label}"
    print(f"RESULT {stem}_lexical_p50_ms={store_ms:.3f}")
    print(f"RESULT {stem}_lexical_segments={segments}")
    for name, (build_s, plain_segments) in built.items():
        plain_ms = _p50_ms(got[name])
        paired = float(np.median(np.array(got["store"]) / np.array(got[name])))
        what = "tantivy's defaults" if name == "defaults" else "the store's terms, top-k only"
        print(
            f"  plain tantivy, {what}: p50 {plain_ms:.2f} ms (p99 {_p99_ms(got[name]):.1f}, "
            f"{plain_segments} segments, built in {build_s:.0f} s); store/tantivy p50 "
            f"{store_ms / plain_ms:.2f}x, per query median {paired:.2f}x (target <= 1.5x)"
        )
        print(f"RESULT scale_tantivy_{name}_{label}_p50_ms={plain_ms:.3f}")
        print(f"RESULT {stem}_lexical_vs_tantivy_{name}_ratio={store_ms / plain_ms:.3f}")
    hybrid_ms = _p50_ms(got["hybrid"])
    print(
        f"hybrid (HybridMemory, depth 50, the claim's vector made beforehand): p50 "
        f"{hybrid_ms:.2f} ms, p99 {_p99_ms(got['hybrid']):.1f} ms (target p50 <= 30 ms); "
        f"its halves' p50: dense {_p50_ms(got['hybrid_dense']):.2f} ms, lexical "
        f"{_p50_ms(got['hybrid_lexical']):.2f} ms"
    )
    print(f"RESULT {stem}_hybrid_p50_ms={hybrid_ms:.3f}")
    print(f"RESULT {stem}_hybrid_p99_ms={_p99_ms(got['hybrid']):.3f}")
