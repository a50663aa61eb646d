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
  drops every span (so every span is built, ended and handed to an exporter), vs
  untraced. Target <= 1.05x.
- sdk-batch: the same with a BatchSpanProcessor, the processor a deployment runs (spans
  go to a queue, a background thread hands them to the exporter). Target <= 1.05x.
- floor: the least any instrumentation of these five calls can cost with the same SDK
  (a bare span started, made current and ended around each, no attributes) vs
  untraced: what the SDK's own span machinery costs here. Context, no target.
- share: tracing on vs those bare spans: what this instrumentation adds beyond the
  SDK's span (attributes, record count, the wrapper). Context, no target.
- floor-conventions: bare spans carrying what the GenAI memory conventions ask of each
  span here (operation name, store id and top_k at start, record count at the end) vs
  untraced: the least a conventions-following instrumentation can cost with this SDK.
  Context, no target.
- share-conventions: tracing on vs those spans: this code's own part (its wrapper, the
  ``agentkit.memory.source.type`` attribute, the checks for capture, deadlines, caches).
  Context, no target.
- per span (``--per-span``, or after the lines above): one call of a source that does no
  work, in a hot loop, untraced / bare span / conventions span / ours, CPU per call, for
  each processor. The composite lines divide a few percent of a ~2 ms query by five, so
  their per-span figures swing by tens of microseconds between runs; these do not.
- api: opentelemetry-api installed but no tracer provider configured, vs untraced,
  measured in a child process since a process's provider is set once. Target <= 1.05x.

Median of per-round wall-time ratios over interleaved rounds (``_paired``).

    python bench/tracing_overhead.py [--rounds N] [--calls N] [--chunks N]
                                     [--hot-calls N] [--hot-rounds N]
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
from agentkit.observability import traced_memory
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
HOT_CALLS = 5000  # the per-span hot loop: calls per round, rounds
HOT_ROUNDS = 9
SPANS_PER_QUERY = 5
SCOPE = Scope("org", "domain")
QUERY = "which city did we plan the trip to"
WORDS = "trip city plan museum river lunch budget train hotel ticket weather paris lyon".split()


def _text(i: int) -> str:
    return " ".join(WORDS[(i * 7 + j * 3) % len(WORDS)] for j in range(12)) + f" note {i}"


def _untraced(cls: type[Any]) -> type[Any]:
    """The same class with the tracing wrapper taken off its methods."""
    plain = {
        name: fn.__wrapped__ for name, fn in vars(cls).items() if hasattr(fn, "__agentkit_traced__")
    }
    return dataclasses.dataclass(type(cls.__name__, (cls,), plain))


@dataclasses.dataclass
class Entry:
    text: str
    role: str = "user"


def _conventional(cls: type[Any], tracer: Any) -> type[Any]:
    """The same class with a hand-written span carrying the conventions' attributes."""
    from opentelemetry import context, trace

    def spanned(fn: Any, operation: str) -> Any:
        async def call(self: Any, *args: Any, **kwargs: Any) -> Any:
            attributes: dict[str, Any] = {
                "gen_ai.operation.name": operation,
                "gen_ai.memory.store.id": self.name,
            }
            if "k" in kwargs:
                attributes["gen_ai.retrieval.top_k"] = kwargs["k"]
            span = tracer.start_span(operation, attributes=attributes)
            token = context.attach(trace.set_span_in_context(span))
            try:
                result = await fn(self, *args, **kwargs)
                span.set_attribute("gen_ai.memory.record.count", len(result))
                return result
            finally:
                context.detach(token)
                span.end()

        return call

    spanned_methods = {
        name: spanned(fn.__wrapped__, fn.__agentkit_traced__)
        for name, fn in vars(cls).items()
        if hasattr(fn, "__agentkit_traced__")
    }
    return dataclasses.dataclass(type(cls.__name__, (cls,), spanned_methods))


def _bare(cls: type[Any], tracer: Any) -> type[Any]:
    """The same class with a minimal hand-written span around each traced method."""
    from opentelemetry import context, trace

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


async def backends(chunks: int = N_CHUNKS) -> Backends:
    store = InMemoryVectorStore(HashingEmbedder())
    seed = [MemoryItem(_text(i), "seed", id=f"c{i}") for i in range(chunks)]
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


def build(data: Backends, variant: str, tracer: Any = None) -> CompositeMemory:
    pick = {
        "traced": lambda c: c,
        "plain": _untraced,
        "bare": lambda c: _bare(c, tracer),
        "conventions": lambda c: _conventional(c, tracer),
    }[variant]
    sources: Sequence[Any] = [
        pick(VectorMemory)(data.store),
        pick(JournalMemory)(data.journal, render=lambda e: e.text),
        pick(ScratchpadMemory)(data.context),
        pick(FileMemory)(data.files),
    ]
    return pick(CompositeMemory)(list(sources))  # type: ignore[no-any-return]


def measure(
    rounds: int,
    calls: int,
    ours: str = "traced",
    base: str = "plain",
    tracer: Any = None,
    chunks: int = N_CHUNKS,
) -> Paired:
    data = asyncio.run(backends(chunks))
    traced, plain = build(data, ours, tracer), build(data, base, tracer)
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


def _provider(batch: bool) -> tuple[Any, list[int]]:
    """An SDK TracerProvider whose exporter counts the spans it is handed and drops them."""
    from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
    from opentelemetry.sdk.trace.export import (
        BatchSpanProcessor,
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
    processor = BatchSpanProcessor(Drop()) if batch else SimpleSpanProcessor(Drop())
    provider.add_span_processor(processor)
    return provider, exported


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--api-only", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument(
        "--per-span", action="store_true", help="only the hot-loop per-span diagnostic"
    )
    parser.add_argument("--chunks", type=int, default=N_CHUNKS, help="vector store size")
    parser.add_argument("--hot-calls", type=int, default=HOT_CALLS, help="per-span loop calls")
    parser.add_argument("--hot-rounds", type=int, default=HOT_ROUNDS, help="per-span loop rounds")
    args = parser.parse_args()

    if args.api_only:  # the child: API present, no provider, print the Paired fields
        result = measure(args.rounds, args.calls, chunks=args.chunks)
        print(*dataclasses.astuple(result))
        return

    from opentelemetry import trace

    from agentkit.observability import set_tracer_provider

    simple, exported = _provider(batch=False)
    trace.set_tracer_provider(simple)  # the global one, as an application sets it
    if args.per_span:
        _per_span_hot(args.hot_calls, args.hot_rounds)
        return
    print(f"{args.rounds} interleaved rounds x {args.calls} composite queries, 4 sources, k=4")
    sdk = measure(args.rounds, args.calls, chunks=args.chunks)
    ok_sdk = report(
        "tracing_overhead_sdk",
        "tracing on (SDK, SimpleSpanProcessor, dropping exporter) vs untraced",
        sdk,
        TARGET,
    )
    per_query = exported[0] / max(1, _queries(args))
    print(f"  spans exported: {exported[0]} ({per_query:.1f} per query)")
    _per_span("tracing_overhead_sdk", sdk)

    batch, _ = _provider(batch=True)
    set_tracer_provider(batch)
    sdk_batch = measure(args.rounds, args.calls, chunks=args.chunks)
    set_tracer_provider(None)
    batch.shutdown()
    ok_batch = report(
        "tracing_overhead_sdk_batch",
        "tracing on (SDK, BatchSpanProcessor, dropping exporter) vs untraced",
        sdk_batch,
        TARGET,
    )
    _per_span("tracing_overhead_sdk_batch", sdk_batch)

    bare_tracer = simple.get_tracer("bench.bare")
    floor = measure(args.rounds, args.calls, ours="bare", tracer=bare_tracer, chunks=args.chunks)
    _context("tracing_overhead_floor", "bare SDK spans (SimpleSpanProcessor) vs untraced", floor)
    share = measure(args.rounds, args.calls, base="bare", tracer=bare_tracer, chunks=args.chunks)
    _context("tracing_overhead_share", "tracing on vs bare SDK spans (this code's own share)",
             share)
    conventions = measure(
        args.rounds, args.calls, ours="conventions", tracer=bare_tracer, chunks=args.chunks
    )
    _context(
        "tracing_overhead_floor_conventions",
        "SDK spans with the conventions' attributes (SimpleSpanProcessor) vs untraced",
        conventions,
    )
    mine = measure(
        args.rounds, args.calls, base="conventions", tracer=bare_tracer, chunks=args.chunks
    )
    _context(
        "tracing_overhead_share_conventions",
        "tracing on vs SDK spans with the conventions' attributes (this code's own part)",
        mine,
    )
    _per_span_hot(args.hot_calls, args.hot_rounds)

    child = subprocess.run(
        [sys.executable, __file__, "--api-only", "--rounds", str(args.rounds),
         "--calls", str(args.calls), "--chunks", str(args.chunks)],
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
    print(f"RESULT tracing_overhead_target_met={int(ok_sdk and ok_batch and ok_api)}")


def _context(prefix: str, label: str, result: Paired) -> None:
    """A line printed for reading the others by, without a verdict."""
    print(label)
    print(f"  baseline : {result.base_us:8.1f} us wall  {result.base_cpu_us:8.1f} us cpu")
    print(f"  ours     : {result.ours_us:8.1f} us wall  {result.ours_cpu_us:8.1f} us cpu")
    print(f"  ratio    : {result.ratio:8.3f}x wall (no target)   {result.cpu_ratio:.3f}x cpu")
    print(f"RESULT {prefix}_ratio={result.ratio:.4f}")
    print(f"RESULT {prefix}_cpu_ratio={result.cpu_ratio:.4f}")
    _per_span(prefix, result)


def _per_span(prefix: str, result: Paired) -> None:
    """CPU added per span: steadier than wall time on a shared machine."""
    added = (result.ours_cpu_us - result.base_cpu_us) / SPANS_PER_QUERY
    print(f"  added per span: {added:.1f} us cpu")
    print(f"RESULT {prefix}_per_span_us={added:.2f}")


@traced_memory
@dataclasses.dataclass
class _Fixed:
    """A source that does no work: what a call costs is then the span around it."""

    items: list[MemoryItem]
    name: str = "fixed"

    async def query(self, query: str, *, k: int = 4, ctx: Ctx) -> list[MemoryItem]:
        return self.items[:k]


def _per_span_hot(calls: int = HOT_CALLS, rounds: int = HOT_ROUNDS) -> None:
    """CPU per call of a no-work source: untraced, bare span, conventions span, ours.

    Each processor gets its own provider (the memory spans through
    ``set_tracer_provider``, the hand-written ones through the same provider's tracer);
    the variants take turns within a round, in a rotating order, GC off as in
    ``_paired``.
    """
    import gc
    import statistics
    import time

    from agentkit.observability import set_tracer_provider

    items = [MemoryItem(f"item {i}", "fixed", id=f"i{i}") for i in range(4)]
    ctx = Ctx(SCOPE)
    print("per span, hot loop: one call of a source that does no work (cpu us per call)")
    for batch in (False, True):
        provider, _ = _provider(batch=batch)
        tracer = provider.get_tracer("bench.bare")
        set_tracer_provider(provider)
        variants = {
            "untraced": _untraced(_Fixed)(items),
            "bare": _bare(_Fixed, tracer)(items),
            "conventions": _conventional(_Fixed, tracer)(items),
            "ours": _Fixed(items),
        }

        async def run(source: Any, n: int) -> float:
            cpu = time.process_time()
            for _ in range(n):
                await source.query(QUERY, k=4, ctx=ctx)
            return (time.process_time() - cpu) / n * 1e6

        async def rounds_of(variants: dict[str, Any]) -> dict[str, float]:
            for source in variants.values():
                await run(source, calls // 5)
            samples: dict[str, list[float]] = {name: [] for name in variants}
            names = list(variants)
            gc.collect()
            gc.disable()
            try:
                for r in range(rounds):
                    for name in names[r % len(names):] + names[: r % len(names)]:
                        samples[name].append(await run(variants[name], calls))
            finally:
                gc.enable()
            return {name: statistics.median(v) for name, v in samples.items()}

        cpu = asyncio.run(rounds_of(variants))
        set_tracer_provider(None)
        provider.shutdown()
        kind = "batch" if batch else "simple"
        base = cpu["untraced"]
        print(
            f"  {kind:6s}: untraced {base:5.1f}   bare span +{cpu['bare'] - base:5.1f}   "
            f"conventions span +{cpu['conventions'] - base:5.1f}   ours +{cpu['ours'] - base:5.1f}"
        )
        for name in ("bare", "conventions", "ours"):
            print(f"RESULT tracing_overhead_hot_{kind}_{name}_us={cpu[name] - base:.2f}")


def _queries(args: argparse.Namespace) -> int:
    # paired_async: 3 warm-up batches and `rounds` measured ones per side, plus the check.
    return (args.rounds + 3) * args.calls + 1


if __name__ == "__main__":
    main()
