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


def _timed_sync(fn: Callable[[], Any]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


async def _timed_async(fn: Callable[[], Any]) -> float:
    start = time.perf_counter()
    await fn()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=21)
    parser.add_argument("--delay", type=float, default=0.05)
    args = parser.parse_args()

    retrievers = [SlowRetriever(label=f"r{i}", delay=args.delay) for i in range(FANOUT)]
    ours = AgentkitRetriever(
        memory=CompositeMemory([LangChainMemory(r, name=r.label) for r in retrievers]),
        k=FANOUT * 4,
    )
    ensemble = EnsembleRetriever(retrievers=retrievers, weights=[1 / FANOUT] * FANOUT)
    assert len(ours.invoke("q")) == FANOUT * 4 and len(ensemble.invoke("q")) == FANOUT * 4

    # Interleaved rounds: the ideal and each contender are timed back to back, so
    # machine noise hits all of them alike; ratios are per round, then the median.
    q = "fan out"
    rounds: dict[str, list[float]] = {name: [] for name in ("ideal", "ours", "ens")}
    ratios: dict[str, list[float]] = {"ours": [], "ens": []}
    for r in range(args.repeat):
        ideal = _timed_sync(lambda: retrievers[0].invoke(q))
        ours_t = _timed_sync(lambda: ours.invoke(q))
        rounds["ideal"].append(ideal)
        rounds["ours"].append(ours_t)
        ratios["ours"].append(ours_t / ideal)
        if r % 3 == 0:  # EnsembleRetriever.invoke is sequential (8x): sample it less
            ens_t = _timed_sync(lambda: ensemble.invoke(q))
            rounds["ens"].append(ens_t)
            ratios["ens"].append(ens_t / ideal)

    async def run_async() -> tuple[dict[str, list[float]], dict[str, list[float]]]:
        times: dict[str, list[float]] = {name: [] for name in ("ideal", "ours", "ens")}
        rel: dict[str, list[float]] = {"ours": [], "ens": []}
        for _ in range(args.repeat):
            ideal = await _timed_async(lambda: retrievers[0].ainvoke(q))
            ours_t = await _timed_async(lambda: ours.ainvoke(q))
            ens_t = await _timed_async(lambda: ensemble.ainvoke(q))
            for name, value in (("ideal", ideal), ("ours", ours_t), ("ens", ens_t)):
                times[name].append(value)
            rel["ours"].append(ours_t / ideal)
            rel["ens"].append(ens_t / ideal)
        return times, rel

    a_rounds, a_ratios = asyncio.run(run_async())
    med = statistics.median
    ideal, ideal_a = med(rounds["ideal"]), med(a_rounds["ideal"])
    ours_sync, ours_async = med(rounds["ours"]), med(a_rounds["ours"])
    ens_sync, ens_async = med(rounds["ens"]), med(a_rounds["ens"])
    r_ours_sync, r_ours_async = med(ratios["ours"]), med(a_ratios["ours"])
    r_ens_sync, r_ens_async = med(ratios["ens"]), med(a_ratios["ens"])

    cpus = os.cpu_count()
    print(f"{FANOUT} sync-only retrievers x {args.delay * 1000:.0f} ms, {cpus} CPUs")
    print(f"ideal (one retriever, invoke):   {ideal * 1000:7.1f} ms")
    print(f"ideal (one retriever, ainvoke):  {ideal_a * 1000:7.1f} ms")
    rows = [
        ("agentkit invoke", ours_sync, r_ours_sync),
        ("agentkit ainvoke", ours_async, r_ours_async),
        ("EnsembleRetriever invoke", ens_sync, r_ens_sync),
        ("EnsembleRetriever ainvoke", ens_async, r_ens_async),
    ]
    for label, value, ratio in rows:
        print(f"{label:28s} {value * 1000:7.1f} ms  = {ratio:5.2f}x ideal (median per-round ratio)")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"target: agentkit <= 1.15x ideal, both ways (1-min load average {load:.1f})")
    print(f"RESULT langchain_fanout_ours_invoke_ratio={r_ours_sync:.4f}")
    print(f"RESULT langchain_fanout_ours_ainvoke_ratio={r_ours_async:.4f}")
    print(f"RESULT langchain_fanout_ensemble_invoke_ratio={r_ens_sync:.4f}")
    print(f"RESULT langchain_fanout_ensemble_ainvoke_ratio={r_ens_async:.4f}")


if __name__ == "__main__":
    main()
