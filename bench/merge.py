"""What CompositeMemory's merge costs per item, next to what the sources cost.

8 in-process sources x 100 items of ~1 KB; half of every source's items are copies of
facts another source also holds (some matched by a shared id, some by identical text).
Each source builds fresh MemoryItems from stored rows on every query, decoding the text
the way a database driver would, so string hashes are never pre-computed for the merge.

Printed:
- sources: the sources' own cost per item (each called directly, one after another);
- merge: what CompositeMemory does with the pooled 800 items between the fan-out and
  its answer (dedupe, the default score_sort_rerank, the cut to k, stamping the
  survivors that made the cut), per item: the figure the ~1 us target is about, and
  its ratio to the sources' cost. It is timed through the composite's own function;
- with a custom reranker (here rrf_rerank) every survivor is stamped first, since the
  reranker may read the stamps: that path per item, for context;
- composite: the whole query per item (fan-out, merge, rerank), for context.

Run: ``python bench/merge.py [--rounds 500]``.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import time
from collections.abc import Iterable
from typing import Any

from agentkit.kernel import Ctx
from agentkit.state.memory import CompositeMemory, MemoryItem, rrf_rerank
from agentkit.state.memory._composite import _rank

N_SOURCES = 8
PER_SOURCE = 100
ITEM_BYTES = 1024
ROUNDS = 500


def _text(rng: random.Random, label: str) -> bytes:
    words = []
    size = len(label) + 1
    while size < ITEM_BYTES:
        word = "".join(rng.choices("abcdefghijklmnopqrstuvwxyz", k=rng.randint(3, 9)))
        words.append(word)
        size += len(word) + 1
    return (label + " " + " ".join(words))[:ITEM_BYTES].encode()


class RowSource:
    """An in-process backend: rows of (utf-8 text, id or None, score)."""

    def __init__(self, name: str, rows: list[tuple[bytes, str | None, float]]) -> None:
        self.name = name
        self.rows = rows

    async def query(
        self, query: str, *, k: int, ctx: Ctx, where: dict[str, Any] | None = None
    ) -> list[MemoryItem]:
        name = self.name
        return [
            MemoryItem(text.decode(), name, score, id=row_id)
            for text, row_id, score in self.rows[:k]
        ]

    async def write(self, items: Iterable[MemoryItem], *, ctx: Ctx) -> None:
        return None


def build_sources(seed: int = 7) -> list[RowSource]:
    rng = random.Random(seed)
    n_shared = N_SOURCES * (PER_SOURCE // 2) // 2  # every shared fact lives in 2 sources
    shared = [(_text(rng, f"shared-{i}"), f"doc-{i}" if i % 2 else None) for i in range(n_shared)]
    slots = [i for i in range(n_shared) for _ in range(2)]
    rng.shuffle(slots)
    sources = []
    for s in range(N_SOURCES):
        rows: list[tuple[bytes, str | None, float]] = []
        for u in range(PER_SOURCE // 2):
            rows.append((_text(rng, f"s{s}-unique-{u}"), f"s{s}-{u}" if u % 2 else None,
                         rng.random()))
        for i in slots[s * (PER_SOURCE // 2):(s + 1) * (PER_SOURCE // 2)]:
            text, row_id = shared[i]
            if row_id is not None and rng.random() < 0.5:
                text = text[:-8] + b"-edited-"  # same id, different text: id match only
            rows.append((text, row_id, rng.random()))
        rng.shuffle(rows)
        rows.sort(key=lambda r: -r[2])
        sources.append(RowSource(f"source-{s}", rows))
    return sources


async def fresh_batches(sources: list[RowSource], ctx: Ctx) -> list[list[MemoryItem]]:
    return [await s.query("q", k=PER_SOURCE, ctx=ctx) for s in sources]


def per_item_us(samples: list[float], n_items: int) -> float:
    # The fastest decile, not the median: on a shared machine the slow samples measure
    # the neighbours, not the code.
    ordered = sorted(samples)
    return statistics.mean(ordered[: max(1, len(ordered) // 10)]) / n_items * 1e6


async def main(rounds: int = ROUNDS) -> None:
    ctx = Ctx()
    sources = build_sources()
    n_items = N_SOURCES * PER_SOURCE
    k = PER_SOURCE  # each source is asked for k, so every row takes part
    composite = CompositeMemory(list(sources))
    timings: dict[str, list[float]] = {
        name: [] for name in ("sources", "hash", "merge", "rrf", "composite")
    }
    answer: list[MemoryItem] | None = []

    def clock(name: str, start: float) -> None:
        timings[name].append(time.perf_counter() - start)

    # Interleaved, so a noisy neighbour slows every measurement alike.
    for _ in range(rounds):
        t = time.perf_counter()
        await fresh_batches(sources, ctx)  # the sources' own cost, called directly
        clock("sources", t)

        # The floor: hashing each fresh ~1 KB text once, which a dedupe keyed on the
        # whole text pays.
        pool = [item for batch in await fresh_batches(sources, ctx) for item in batch]
        t = time.perf_counter()
        {item.content for item in pool}
        clock("hash", t)

        # Each merge runs on batches whose strings were just built (hashes not cached).
        # What earlier steps left is dropped first, as a server drops the last query's
        # results: freeing it is not this merge's cost, and holding it would make the
        # new batches land in colder memory than they do in steady state.
        pool = []
        answer = None
        batches = await fresh_batches(sources, ctx)
        t = time.perf_counter()
        answer = await _rank("q", batches, k, "id", None)
        clock("merge", t)
        assert len(answer) == k

        answer = None
        batches = await fresh_batches(sources, ctx)
        t = time.perf_counter()
        answer = await _rank("q", batches, k, "id", rrf_rerank)
        clock("rrf", t)

        answer = None
        t = time.perf_counter()
        answer = await composite.query("q", k=k, ctx=ctx)
        clock("composite", t)
        assert len(answer) == k

    merged_len = len(await _rank("q", batches, n_items, "id", None))
    us = {name: per_item_us(samples, n_items) for name, samples in timings.items()}
    merge = us["merge"]
    print(f"pool: {N_SOURCES} sources x {PER_SOURCE} items x ~{ITEM_BYTES} B "
          f"-> {merged_len} after dedupe ({n_items - merged_len} copies collapsed), "
          f"k={k}")
    print(f"sources: {us['sources']:.2f} us/item (their own cost, called directly)")
    print(f"merge: {merge:.2f} us/item (target ~1 us): dedupe + score_sort_rerank + cut "
          f"+ stamping the survivors in the top {k}")
    print(f"  floor: hashing each text once would cost {us['hash']:.2f} us/item")
    print(f"merge/sources ratio: {merge / us['sources']:.2f}x")
    print(f"with rrf_rerank (every survivor stamped, per-source ranks built): "
          f"{us['rrf']:.2f} us/item")
    print(f"composite end-to-end: {us['composite']:.2f} us/item "
          f"(sources + fan-out + merge + rerank; the fan-out's task scheduling is the "
          f"noisiest part on a busy machine)")
    print(f"RESULT merge_us_per_item={merge:.3f}")
    print(f"RESULT merge_sources_us_per_item={us['sources']:.3f}")
    print(f"RESULT merge_to_sources_ratio={merge / us['sources']:.3f}")
    print(f"RESULT merge_rrf_us_per_item={us['rrf']:.3f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    asyncio.run(main(parser.parse_args().rounds))
