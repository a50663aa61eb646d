"""What OpenTelemetry tracing adds to a composite query of 4 in-process sources.

The stack: CompositeMemory over a VectorMemory (InMemoryVectorStore, HashingEmbedder,
10,000 chunks: the scale the other benches here use), a JournalMemory (1,000 entries), a
ScratchpadMemory (200 keys) and a FileMemory (InMemoryFiles, 50 files): five spans per
query. What one span adds in absolute terms is printed too, since the ratio falls as the
sources get slower: most of it is the SDK's own span start and end. Both sides run the very same
code; the untraced side is the same classes with the tracing wrapper taken off (what a
process without ``opentelemetry-api`` runs, since the decorator then wraps nothing).

Lines:
- sdk: tracing on, an SDK TracerProvider with a SimpleSpanProcessor over an exporter that
  drops every span (so the spans are built, ended and handed to an exporter), vs
  untraced. Target <= 1.05x.
- api: opentelemetry-api installed but no tracer provider configured (the no-op tracer),
  vs untraced, measured in a child process since a process's provider is set once.
  Target <= 1.05x.
- floor: tracing on vs the least any instrumentation can do with the same SDK (a bare
  span started, made current and ended around each call): what this instrumentation
  costs beyond the SDK's own span. For context, no target.

Median of per-round wall-time ratios over interleaved rounds (``_paired``).

    python bench/tracing_overhead.py [--rounds N] [--calls N]
"""

from __future__ import annotations

import os

# One BLAS thread: a threaded matrix-vector product on a shared machine is noise.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse
import asyncio
import dataclasses
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agentkit.kernel import Ctx, Scope
from agentkit.state.context import WorkingContext
from agentkit.state.files import InMemoryFiles
from agentkit.state.journal import MutationJournal
from agentkit.state.memory import (
    CompositeMemory,
    FileMemory,
    JournalMemory,
    MemoryItem,
    ScratchpadMemory,
    VectorMemory,
)
from agentkit.vector import HashingEmbedder, InMemoryVectorStore

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _paired import Paired, paired_async, report

TARGET = 1.05
N_CHUNKS = 10_000
SPANS_PER_QUERY = 5
SCOPE = Scope("org", "domain")
QUERY = "which city did we plan the trip to"
WORDS = "trip city plan museum river lunch budget train hotel ticket weather paris lyon".split()


def _text(i: int) -> str:
    return " ".join(WORDS[(i * 7 + j * 3) % len(WORDS)] for j in range(12)) + f" note {i}"


def _untraced(cls: type[Any]) -> type[Any]:
    """The same class with the tracing wrapper taken off its methods."""
    plain = {
        name: fn.__wrapped__
        for name, fn in vars(cls).items()
        if hasattr(fn, "__agentkit_traced__")
    }
    return dataclasses.dataclass(type(cls.__name__, (cls,), plain))


@dataclasses.dataclass
class Entry:
    text: str
    role: str = "user"


def _bare(cls: type[Any]) -> type[Any]:
    """The same class with a minimal hand-written span around each traced method."""
    from opentelemetry import context, trace

    tracer = trace.get_tracer("bench.bare")

    def spanned(fn: Any, operation: str) -> Any:
        async def call(self: Any, *args: Any, **kwargs: Any) -> Any:
            span = tracer.start_span(operation)
            token = context.attach(trace.set_span_in_context(span))
            try:
                return await fn(self, *args, **kwargs)
            finally:
                context.detach(token)
                span.end()

        return call

    bare = {
        name: spanned(fn.__wrapped__, fn.__agentkit_traced__)
        for name, fn in vars(cls).items()
        if hasattr(fn, "__agentkit_traced__")
    }
    return dataclasses.dataclass(type(cls.__name__, (cls,), bare))


@dataclasses.dataclass
class Backends:
    """The data behind the sources, built once and shared by every variant, so both
    sides of a pair read the very same objects and only the wrappers differ."""

    store: InMemoryVectorStore
    journal: MutationJournal[Entry]
    context: WorkingContext
    files: InMemoryFiles


async def backends() -> Backends:
    store = InMemoryVectorStore(HashingEmbedder())
    seed = [MemoryItem(_text(i), "seed", id=f"c{i}") for i in range(N_CHUNKS)]
    await VectorMemory(store).write(seed, ctx=Ctx(SCOPE))
    journal: MutationJournal[Entry] = MutationJournal()
    for i in range(1000):
        journal.record(Entry(_text(i)))
    context = WorkingContext()
    for i in range(200):
        context.scratchpad[f"k{i}"] = _text(i)
    files = InMemoryFiles()
    for i in range(50):
        await files.create(f"/notes/n{i}.md", _text(i))
    return Backends(store, journal, context, files)


def build(data: Backends, variant: str) -> CompositeMemory:
    pick = {"traced": lambda c: c, "plain": _untraced, "bare": _bare}[variant]
    sources: Sequence[Any] = [
        pick(VectorMemory)(data.store),
        pick(JournalMemory)(data.journal, render=lambda e: e.text),
        pick(ScratchpadMemory)(data.context),
        pick(FileMemory)(data.files),
    ]
    return pick(CompositeMemory)(list(sources))  # type: ignore[no-any-return]


def measure(rounds: int, calls: int, base: str = "plain") -> Paired:
    data = asyncio.run(backends())
    traced, plain = build(data, "traced"), build(data, base)
    ctx = Ctx(SCOPE)
    first = asyncio.run(traced.query(QUERY, k=4, ctx=ctx))
    assert [i.content for i in first] == [
        i.content for i in asyncio.run(plain.query(QUERY, k=4, ctx=ctx))
    ]
    return paired_async(
        lambda: traced.query(QUERY, k=4, ctx=ctx),
        lambda: plain.query(QUERY, k=4, ctx=ctx),
        rounds=rounds,
        calls=calls,
    )


def _install_sdk() -> list[int]:
    from opentelemetry import trace
    from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
    from opentelemetry.sdk.trace.export import (
        SimpleSpanProcessor,
        SpanExporter,
        SpanExportResult,
    )

    exported = [0]

    class Drop(SpanExporter):
        def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
            exported[0] += len(spans)
            return SpanExportResult.SUCCESS

    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(Drop()))
    trace.set_tracer_provider(provider)
    return exported


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--api-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.api_only:  # the child: API present, no provider, print the Paired fields
        result = measure(args.rounds, args.calls)
        print(*dataclasses.astuple(result))
        return

    exported = _install_sdk()
    print(f"{args.rounds} interleaved rounds x {args.calls} composite queries, 4 sources, k=4")
    sdk = measure(args.rounds, args.calls)
    ok_sdk = report(
        "tracing_overhead_sdk",
        "tracing on (SDK, SimpleSpanProcessor, dropping exporter) vs untraced",
        sdk,
        TARGET,
    )
    per_query = exported[0] / max(1, _queries(args))
    print(f"  spans exported: {exported[0]} ({per_query:.1f} per query)")
    _per_span("tracing_overhead_sdk", sdk)
    floor = measure(args.rounds, args.calls, base="bare")
    print("tracing on vs bare SDK spans around the same calls (this code's own share)")
    print(f"  bare     : {floor.base_us:8.1f} us wall  {floor.base_cpu_us:8.1f} us cpu")
    print(f"  ours     : {floor.ours_us:8.1f} us wall  {floor.ours_cpu_us:8.1f} us cpu")
    print(f"  ratio    : {floor.ratio:8.3f}x wall (no target)   {floor.cpu_ratio:.3f}x cpu")
    print(f"RESULT tracing_overhead_floor_ratio={floor.ratio:.4f}")
    print(f"RESULT tracing_overhead_floor_cpu_ratio={floor.cpu_ratio:.4f}")
    _per_span("tracing_overhead_floor", floor)

    child = subprocess.run(
        [sys.executable, __file__, "--api-only", "--rounds", str(args.rounds),
         "--calls", str(args.calls)],
        capture_output=True, text=True,
    )
    if child.returncode != 0:
        sys.exit(f"the api-only child failed:\n{child.stderr}")
    api = Paired(*(float(x) for x in child.stdout.split()))
    ok_api = report(
        "tracing_overhead_api",
        "opentelemetry-api without a tracer provider (no-op tracer) vs untraced",
        api,
        TARGET,
    )
    _per_span("tracing_overhead_api", api)
    print(f"RESULT tracing_overhead_target_met={int(ok_sdk and ok_api)}")


def _per_span(prefix: str, result: Paired) -> None:
    """CPU added per span: steadier than wall time on a shared machine."""
    added = (result.ours_cpu_us - result.base_cpu_us) / SPANS_PER_QUERY
    print(f"  added per span: {added:.1f} us cpu")
    print(f"RESULT {prefix}_per_span_us={added:.2f}")


def _queries(args: argparse.Namespace) -> int:
    # paired_async: 3 warm-up batches and `rounds` measured ones per side, plus the check.
    return (args.rounds + 3) * args.calls + 1


if __name__ == "__main__":
    main()
