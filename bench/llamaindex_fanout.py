"""Fan-out over eight sync-only LlamaIndex retrievers, 50 ms each.

Ours: ``AgentkitRetriever(CompositeMemory([LlamaIndexMemory(r) ...]))``. Theirs:
``QueryFusionRetriever(use_async=True, mode="reciprocal_rerank")`` over the same
eight. Ratios are to the ideal: one retriever's own latency, which a perfectly
concurrent fan-out would match. Target for ours: <= 1.15x from retrieve and aretrieve.

LlamaIndex's default ``_aretrieve`` runs a sync retriever on the event loop, so the
fusion retriever's gather runs the eight one after another; ours runs each on the
agentkit.interop thread pool (blocking_pool).

Run: .venv/bin/python bench/llamaindex_fanout.py [--rounds N]
Prints human lines, then machine lines ``RESULT name=value``.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import Awaitable, Callable

from agentkit_llamaindex import AgentkitRetriever, LlamaIndexMemory
from llama_index.core.llms import MockLLM
from llama_index.core.retrievers import BaseRetriever, QueryFusionRetriever
from llama_index.core.retrievers.fusion_retriever import FUSION_MODES
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

from agentkit.state.memory import CompositeMemory

TARGET = 1.15
FANOUT = 8
LATENCY = 0.050


class Sleepy(BaseRetriever):
    """A sync-only retriever with 50 ms of latency (a remote call, say)."""

    def __init__(self, label: str) -> None:
        super().__init__()
        self.label = label

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        time.sleep(LATENCY)
        return [
            NodeWithScore(
                node=TextNode(id_=f"{self.label}-{i}", text=f"{self.label} doc {i}"),
                score=1 - i / 10,
            )
            for i in range(3)
        ]


def _time_sync(fn: Callable[[], object], rounds: int) -> list[float]:
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return samples


def _time_async(fn: Callable[[], Awaitable[object]], rounds: int) -> list[float]:
    async def run() -> list[float]:
        samples = []
        for _ in range(rounds):
            start = time.perf_counter()
            await fn()
            samples.append(time.perf_counter() - start)
        return samples

    return asyncio.run(run())


def main() -> None:
    parser = argparse.ArgumentParser(description="fan-out over 8 sync retrievers")
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()

    retrievers = [Sleepy(f"r{i}") for i in range(FANOUT)]
    ours = AgentkitRetriever(
        CompositeMemory([LlamaIndexMemory(r, name=r.label) for r in retrievers]), k=10
    )
    fusion = QueryFusionRetriever(
        list(retrievers),
        llm=MockLLM(),
        mode=FUSION_MODES.RECIPROCAL_RANK,
        num_queries=1,
        use_async=True,
        similarity_top_k=10,
    )
    for r in (ours, fusion):  # warm up (thread pools, the interop loop)
        r.retrieve("warm up")

    ideal_samples = _time_sync(lambda: retrievers[0].retrieve("q"), args.rounds)
    samples = {
        "ours_retrieve": _time_sync(lambda: ours.retrieve("q"), args.rounds),
        "ours_aretrieve": _time_async(lambda: ours.aretrieve("q"), args.rounds),
        "fusion_retrieve": _time_sync(lambda: fusion.retrieve("q"), args.rounds),
        "fusion_aretrieve": _time_async(lambda: fusion.aretrieve("q"), args.rounds),
    }
    ideal = statistics.median(ideal_samples)
    timings = {name: statistics.median(runs) for name, runs in samples.items()}
    best = {name: min(runs) / min(ideal_samples) for name, runs in samples.items()}
    print(f"{FANOUT} sync-only retrievers x {LATENCY * 1000:.0f} ms, median of {args.rounds}")
    print(f"ideal (one retriever)           : {ideal * 1000:7.1f} ms   1.00x")
    for name, seconds in timings.items():
        side, call = name.split("_")
        label = f"{'AgentkitRetriever' if side == 'ours' else 'QueryFusionRetriever'} {call}"
        ratio = seconds / ideal
        print(f"{label:32}: {seconds * 1000:7.1f} ms  {ratio:5.2f}x  (best {best[name]:.2f}x)")
    ok = all(timings[n] / ideal <= TARGET for n in ("ours_retrieve", "ours_aretrieve"))
    print(f"target for ours <= {TARGET:.2f}x (medians): {'met' if ok else 'MISSED'}")
    print(f"RESULT fanout_ideal_ms={ideal * 1000:.1f}")
    for name, seconds in timings.items():
        print(f"RESULT fanout_{name}_ms={seconds * 1000:.1f}")
        print(f"RESULT fanout_{name}_ratio={seconds / ideal:.3f}")
        print(f"RESULT fanout_{name}_best_ratio={best[name]:.3f}")
    print(f"RESULT fanout_target_met={int(ok)}")


if __name__ == "__main__":
    main()
