"""Fan-out: eight sync-only LangChain retrievers (50 ms each) queried as one.

Ours: ``AgentkitRetriever(memory=CompositeMemory([LangChainMemory(r) for r in eight]))``.
Theirs: ``EnsembleRetriever(retrievers=eight)`` from langchain-classic.
Both through ``invoke`` and ``ainvoke``; every latency is reported as a ratio to
the ideal, one retriever's own latency (measured in the same run). Target for
ours: <= 1.15x both ways.

EnsembleRetriever's ``invoke`` runs its retrievers one after another, and its
``ainvoke`` hands sync-only retrievers to the default thread pool, which has
``min(32, cpu + 4)`` threads (6 on a 2-core machine) - so eight take two rounds.

    python bench/langchain_fanout.py [--repeat N] [--delay SECONDS]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time
from collections.abc import Callable
from typing import Any

from agentkit_langchain import AgentkitRetriever, LangChainMemory
from langchain_classic.retrievers import EnsembleRetriever
from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever

from agentkit.state.memory import CompositeMemory

FANOUT = 8


class SlowRetriever(BaseRetriever):
    """Sync-only (no async override), like most hand-written and legacy retrievers."""

    label: str
    delay: float

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        time.sleep(self.delay)
        return [Document(page_content=f"{self.label}: {query} #{i}") for i in range(4)]


def _median_sync(fn: Callable[[], Any], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


async def _median_async(fn: Callable[[], Any], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        await fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--delay", type=float, default=0.05)
    args = parser.parse_args()

    retrievers = [SlowRetriever(label=f"r{i}", delay=args.delay) for i in range(FANOUT)]
    ours = AgentkitRetriever(
        memory=CompositeMemory([LangChainMemory(r, name=r.label) for r in retrievers]),
        k=FANOUT * 4,
    )
    ensemble = EnsembleRetriever(retrievers=retrievers, weights=[1 / FANOUT] * FANOUT)
    assert len(ours.invoke("q")) == FANOUT * 4 and len(ensemble.invoke("q")) == FANOUT * 4

    q = "fan out"
    ideal = _median_sync(lambda: retrievers[0].invoke(q), args.repeat)
    ours_sync = _median_sync(lambda: ours.invoke(q), args.repeat)
    ens_sync = _median_sync(lambda: ensemble.invoke(q), max(3, args.repeat // 3))

    async def run_async() -> tuple[float, float, float]:
        ideal_a = await _median_async(lambda: retrievers[0].ainvoke(q), args.repeat)
        ours_a = await _median_async(lambda: ours.ainvoke(q), args.repeat)
        ens_a = await _median_async(lambda: ensemble.ainvoke(q), args.repeat)
        return ideal_a, ours_a, ens_a

    ideal_a, ours_async, ens_async = asyncio.run(run_async())

    cpus = os.cpu_count()
    print(f"{FANOUT} sync-only retrievers x {args.delay * 1000:.0f} ms, {cpus} CPUs")
    print(f"ideal (one retriever, invoke):   {ideal * 1000:7.1f} ms")
    print(f"ideal (one retriever, ainvoke):  {ideal_a * 1000:7.1f} ms")
    rows = [
        ("agentkit invoke", ours_sync, ideal),
        ("agentkit ainvoke", ours_async, ideal_a),
        ("EnsembleRetriever invoke", ens_sync, ideal),
        ("EnsembleRetriever ainvoke", ens_async, ideal_a),
    ]
    for label, value, base in rows:
        print(f"{label:28s} {value * 1000:7.1f} ms  = {value / base:5.2f}x ideal")
    print("target: agentkit <= 1.15x ideal, both ways")
    print(f"RESULT langchain_fanout_ours_invoke_ratio={ours_sync / ideal:.4f}")
    print(f"RESULT langchain_fanout_ours_ainvoke_ratio={ours_async / ideal_a:.4f}")
    print(f"RESULT langchain_fanout_ensemble_invoke_ratio={ens_sync / ideal:.4f}")
    print(f"RESULT langchain_fanout_ensemble_ainvoke_ratio={ens_async / ideal_a:.4f}")


if __name__ == "__main__":
    main()
