"""OpenTelemetry spans for memory operations: names, attributes, nesting, failures, content.

Spans are read back through the SDK's InMemorySpanExporter on the global tracer provider
(the one a library's spans go to). The stores and sources are the real ones; only the
failing port and the never-answering tool are fakes, to inject the failure.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from agentkit.kernel import CompositeQueryError, Ctx, MemoryWriteRefused, Scope, ScopeViolation
from agentkit.observability import (
    CAPTURE_CONTENT_ENV,
    TRACING_AVAILABLE,
    content_capture_enabled,
    set_content_capture,
    set_tracer_provider,
    traced_memory,
)
from agentkit.state.context import WorkingContext
from agentkit.state.files import InMemoryFiles
from agentkit.state.journal import MutationJournal
from agentkit.state.memory import (
    CachedMemory,
    CompactedMemory,
    CompositeMemory,
    FileMemory,
    HybridMemory,
    JournalMemory,
    LexicalMemory,
    MemoryItem,
    PerScopeMemory,
    ReadOnlyMemory,
    ScopedMemory,
    ScratchpadMemory,
    SequentialMemory,
    ToolMemory,
    VectorMemory,
)
from agentkit.tools import FunctionTool
from agentkit.vector import HashingEmbedder, InMemoryVectorStore

os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

TENANT = Scope("org", "dom")
EXPORTER = InMemorySpanExporter()


# A provider of the tests' own, handed to agentkit alone: the process-wide one (settable
# once) stays untouched, so no other test in the run pays for spans.
PROVIDER = TracerProvider()
PROVIDER.add_span_processor(SimpleSpanProcessor(EXPORTER))
CALLER = PROVIDER.get_tracer("tests.caller")


@pytest.fixture(autouse=True)
def spans() -> Iterator[InMemorySpanExporter]:
    EXPORTER.clear()
    set_tracer_provider(PROVIDER)
    set_content_capture(False)
    yield EXPORTER
    set_content_capture(None)
    set_tracer_provider(None)
    EXPORTER.clear()


def finished() -> list[ReadableSpan]:
    return list(EXPORTER.get_finished_spans())


def memory_spans() -> list[ReadableSpan]:
    return [s for s in finished() if s.attributes and "gen_ai.operation.name" in s.attributes]


def of_type(source_type: str) -> list[ReadableSpan]:
    return [s for s in memory_spans() if s.attributes["agentkit.memory.source.type"] == source_type]


def one(source_type: str) -> ReadableSpan:
    found = of_type(source_type)
    assert len(found) == 1, [s.name for s in found]
    return found[0]


def parent_of(span: ReadableSpan) -> int | None:
    return span.parent.span_id if span.parent is not None else None


def children(span: ReadableSpan) -> list[ReadableSpan]:
    return [s for s in finished() if parent_of(s) == span.context.span_id]


# --- real stacks -------------------------------------------------------------------


@dataclass
class Entry:
    text: str
    role: str = "user"


async def vector_memory(name: str = "vector") -> VectorMemory:
    memory = VectorMemory(InMemoryVectorStore(HashingEmbedder()), name=name)
    await memory.write(
        [
            MemoryItem("the capital of France is Paris", "seed", id="v1"),
            MemoryItem("the ocean is salty", "seed", id="v2"),
            MemoryItem("Paris has many museums", "seed", id="v3"),
        ],
        ctx=Ctx(TENANT),
    )
    return memory


def journal_memory() -> JournalMemory[Entry]:
    journal: MutationJournal[Entry] = MutationJournal()
    journal.record(Entry("we talked about Paris"))
    journal.record(Entry("lunch was late"))
    return JournalMemory(journal, render=lambda e: e.text)


def scratchpad_memory() -> ScratchpadMemory:
    context = WorkingContext()
    context.scratchpad["city"] = "Paris in spring"
    return ScratchpadMemory(context)


async def file_memory() -> FileMemory:
    files = InMemoryFiles()
    await files.create("/notes/trip.md", "Paris trip notes")
    return FileMemory(files)


async def four_sources() -> CompositeMemory:
    return CompositeMemory(
        [await vector_memory(), journal_memory(), scratchpad_memory(), await file_memory()]
    )


class FailingPort:
    """A vector store that is down."""

    async def search(self, query: str, **_: Any) -> list[Any]:
        raise ConnectionError("store unreachable")

    async def upsert(self, chunks: Any, **_: Any) -> None:
        raise ConnectionError("store unreachable")


def never_answering_tool() -> ToolMemory:
    async def search(query: str, limit: int) -> list[str]:
        await asyncio.sleep(30)
        return []

    return ToolMemory(FunctionTool(search), name="slow-tool")


# --- names and attributes -----------------------------------------------------------


def test_tracing_is_available_in_the_test_environment() -> None:
    assert TRACING_AVAILABLE
    assert hasattr(VectorMemory.query, "__wrapped__")


async def test_without_a_provider_of_its_own_agentkit_uses_the_global_one() -> None:
    set_tracer_provider(None)
    await scratchpad_memory().query("Paris", k=1, ctx=Ctx(TENANT))
    assert finished() == []  # went to the process-wide provider, not to ours
    set_tracer_provider(PROVIDER)
    await scratchpad_memory().query("Paris", k=1, ctx=Ctx(TENANT))
    assert len(memory_spans()) == 1
    with pytest.raises(TypeError):
        set_tracer_provider("not a provider")


async def test_search_and_upsert_spans_follow_the_conventions() -> None:
    memory = await vector_memory()
    [upsert] = memory_spans()
    EXPORTER.clear()
    got = await memory.query("Paris", k=2, ctx=Ctx(TENANT))

    [search] = memory_spans()
    assert search.name == "search_memory"
    assert search.kind is SpanKind.CLIENT
    assert search.attributes["gen_ai.operation.name"] == "search_memory"
    assert search.attributes["gen_ai.memory.store.id"] == "vector"
    assert search.attributes["gen_ai.retrieval.top_k"] == 2
    assert search.attributes["gen_ai.memory.record.count"] == len(got) == 2
    assert search.attributes["agentkit.memory.source.type"] == "VectorMemory"
    assert search.status.status_code is StatusCode.UNSET

    assert upsert.name == "upsert_memory"
    assert upsert.attributes["gen_ai.operation.name"] == "upsert_memory"
    assert upsert.attributes["gen_ai.memory.record.count"] == 3
    assert upsert.attributes["agentkit.memory.accepts_writes"] is True


async def test_every_shipped_source_and_decorator_has_a_span() -> None:
    inner = await four_sources()
    stack = CachedMemory(ReadOnlyMemory(ScopedMemory(SequentialMemory([inner]))))
    EXPORTER.clear()
    await stack.query("Paris", k=3, ctx=Ctx(TENANT))
    kinds = {s.attributes["agentkit.memory.source.type"] for s in memory_spans()}
    assert kinds == {
        "CachedMemory",
        "ReadOnlyMemory",
        "ScopedMemory",
        "SequentialMemory",
        "CompositeMemory",
        "VectorMemory",
        "JournalMemory",
        "ScratchpadMemory",
        "FileMemory",
    }
    assert all(s.name == "search_memory" for s in memory_spans())
    assert one("JournalMemory").kind is SpanKind.INTERNAL


async def test_a_sampler_that_says_no_records_nothing_and_changes_nothing() -> None:
    from opentelemetry.sdk.trace.sampling import ALWAYS_OFF

    quiet = TracerProvider(sampler=ALWAYS_OFF)
    quiet.add_span_processor(SimpleSpanProcessor(EXPORTER))
    composite = await four_sources()
    expected = [i.content for i in await composite.query("Paris", k=4, ctx=Ctx(TENANT))]
    EXPORTER.clear()
    set_tracer_provider(quiet)
    got = await composite.query("Paris", k=4, ctx=Ctx(TENANT))
    assert [i.content for i in got] == expected
    assert finished() == []


# --- structure ----------------------------------------------------------------------


async def test_composite_members_are_children_of_the_composite_span() -> None:
    composite = await four_sources()
    EXPORTER.clear()
    with CALLER.start_as_current_span("agent turn") as turn:
        await composite.query("Paris", k=4, ctx=Ctx(TENANT))

    top = one("CompositeMemory")
    assert parent_of(top) == turn.get_span_context().span_id
    members = children(top)
    assert sorted(s.attributes["gen_ai.memory.store.id"] for s in members) == [
        "files",
        "journal",
        "scratchpad",
        "vector",
    ]
    assert all(s.context.trace_id == top.context.trace_id for s in members)
    # Concurrent, not one after another: every member starts before any of them ends
    # would be too strong for in-process sources; they share the composite's window.
    assert all(top.start_time <= s.start_time and s.end_time <= top.end_time for s in members)


async def test_nested_decorators_nest_their_spans() -> None:
    vector = await vector_memory()
    stack = CachedMemory(ScopedMemory(CompositeMemory([vector, journal_memory()])))
    EXPORTER.clear()
    await stack.query("Paris", k=2, ctx=Ctx(TENANT))
    cached, scoped, composite = one("CachedMemory"), one("ScopedMemory"), one("CompositeMemory")
    assert parent_of(scoped) == cached.context.span_id
    assert parent_of(composite) == scoped.context.span_id
    assert {parent_of(s) for s in of_type("VectorMemory") + of_type("JournalMemory")} == {
        composite.context.span_id
    }


async def test_cached_memory_records_miss_then_hit() -> None:
    cached = CachedMemory(await vector_memory())
    EXPORTER.clear()
    await cached.query("Paris", k=2, ctx=Ctx(TENANT))
    await cached.query("Paris", k=2, ctx=Ctx(TENANT))
    first, second = of_type("CachedMemory")
    assert first.attributes["agentkit.memory.cache.hit"] is False
    assert second.attributes["agentkit.memory.cache.hit"] is True
    assert len(children(first)) == 1 and children(second) == []


async def test_composite_write_has_one_span_per_member() -> None:
    composite = CompositeMemory([await vector_memory(), journal_memory()])
    EXPORTER.clear()
    await composite.write([MemoryItem("new fact", "agent")], ctx=Ctx(TENANT))
    top = one("CompositeMemory")
    assert top.name == "upsert_memory"
    assert top.attributes["gen_ai.memory.record.count"] == 1
    members = {s.attributes["gen_ai.memory.store.id"]: s for s in children(top)}
    assert set(members) == {"vector", "journal"}
    assert members["journal"].attributes["agentkit.memory.accepts_writes"] is False
    assert members["vector"].attributes["agentkit.memory.accepts_writes"] is True


async def test_a_write_from_a_generator_still_reaches_the_source_whole() -> None:
    memory = await vector_memory()
    EXPORTER.clear()
    await memory.write((MemoryItem(t, "agent") for t in ["a b c", "d e f"]), ctx=Ctx(TENANT))
    [upsert] = memory_spans()
    assert "gen_ai.memory.record.count" not in upsert.attributes  # not consumed to count
    assert len(await memory.query("a b c", k=10, ctx=Ctx(TENANT))) == 5


# --- failures and timeouts ----------------------------------------------------------


async def test_a_failing_member_is_recorded_on_its_span_and_the_composite() -> None:
    down = VectorMemory(FailingPort(), name="down")
    composite = CompositeMemory([down, journal_memory()])
    with pytest.raises(CompositeQueryError):
        await composite.query("Paris", k=2, ctx=Ctx(TENANT))

    member = one("VectorMemory")
    assert member.status.status_code is StatusCode.ERROR
    assert member.attributes["error.type"] == "ConnectionError"
    [event] = [e for e in member.events if e.name == "exception"]
    assert event.attributes["exception.type"] == "ConnectionError"
    top = one("CompositeMemory")
    assert top.status.status_code is StatusCode.ERROR
    assert top.attributes["error.type"] == "agentkit.kernel.errors.CompositeQueryError"
    assert parent_of(member) == top.context.span_id


async def test_a_skipped_failure_leaves_the_composite_span_ok() -> None:
    composite = CompositeMemory(
        [VectorMemory(FailingPort(), name="down"), journal_memory()], on_error="skip"
    )
    got = await composite.query("Paris", k=2, ctx=Ctx(TENANT))
    assert got
    assert one("VectorMemory").status.status_code is StatusCode.ERROR
    assert one("CompositeMemory").status.status_code is StatusCode.UNSET
    assert one("JournalMemory").status.status_code is StatusCode.UNSET


async def test_a_member_cut_off_by_the_composite_timeout_says_timeout() -> None:
    composite = CompositeMemory(
        [never_answering_tool(), journal_memory()], timeout=0.05, on_error="skip"
    )
    await composite.query("Paris", k=2, ctx=Ctx(TENANT))
    slow = one("ToolMemory")
    assert slow.status.status_code is StatusCode.ERROR
    assert slow.attributes["error.type"] == "timeout"
    assert one("CompositeMemory").status.status_code is StatusCode.UNSET

    EXPORTER.clear()
    strict = CompositeMemory([never_answering_tool()], timeout=0.05)
    with pytest.raises(CompositeQueryError):
        await strict.query("Paris", k=2, ctx=Ctx(TENANT))
    assert one("ToolMemory").attributes["error.type"] == "timeout"
    assert one("CompositeMemory").status.status_code is StatusCode.ERROR


async def test_a_cancelled_query_says_cancelled() -> None:
    task = asyncio.create_task(never_answering_tool().query("x", k=1, ctx=Ctx(TENANT)))
    await asyncio.sleep(0.02)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    span = one("ToolMemory")
    assert span.attributes["error.type"] == "cancelled"
    assert span.status.status_code is StatusCode.ERROR


async def test_a_refused_scope_and_a_refused_write_are_errors_and_the_inner_is_untouched() -> None:
    scoped = ScopedMemory(await vector_memory())
    EXPORTER.clear()
    with pytest.raises(ScopeViolation):
        await scoped.query("Paris", k=2, ctx=Ctx(Scope("org")))
    span = one("ScopedMemory")
    assert span.attributes["error.type"] == "agentkit.kernel.errors.ScopeViolation"
    assert of_type("VectorMemory") == []

    EXPORTER.clear()
    with pytest.raises(MemoryWriteRefused):
        await ReadOnlyMemory(journal_memory()).write([MemoryItem("x", "a")], ctx=Ctx(TENANT))
    refused = one("ReadOnlyMemory")
    assert refused.attributes["error.type"] == "agentkit.kernel.errors.MemoryWriteRefused"
    assert refused.attributes["agentkit.memory.accepts_writes"] is False


# --- content capture ----------------------------------------------------------------


async def test_no_content_without_the_opt_in() -> None:
    memory = await vector_memory()
    await memory.query("Paris", k=2, ctx=Ctx(TENANT))
    for span in memory_spans():
        assert "gen_ai.memory.query.text" not in span.attributes
        assert "gen_ai.memory.records" not in span.attributes
        assert "Paris" not in json.dumps(dict(span.attributes))


async def test_content_with_the_switch_on() -> None:
    set_content_capture(True)
    memory = await vector_memory()
    [upsert] = memory_spans()
    written = json.loads(str(upsert.attributes["gen_ai.memory.records"]))
    assert [r["content"] for r in written] == [
        "the capital of France is Paris",
        "the ocean is salty",
        "Paris has many museums",
    ]
    EXPORTER.clear()

    got = await memory.query("Paris", k=2, ctx=Ctx(TENANT))
    [search] = memory_spans()
    assert search.attributes["gen_ai.memory.query.text"] == "Paris"
    records = json.loads(str(search.attributes["gen_ai.memory.records"]))
    assert [(r["content"], r["id"], r["score"]) for r in records] == [
        (i.content, i.id, i.score) for i in got
    ]


async def test_the_environment_variable_switches_capture(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CAPTURE_CONTENT_ENV, "true")
    set_content_capture(None)  # drop the override: the environment decides
    assert content_capture_enabled()
    await scratchpad_memory().query("Paris", k=1, ctx=Ctx(TENANT))
    [span] = memory_spans()
    assert span.attributes["gen_ai.memory.query.text"] == "Paris"

    monkeypatch.setenv(CAPTURE_CONTENT_ENV, "false")
    set_content_capture(None)
    assert not content_capture_enabled()


# --- a third-party source -----------------------------------------------------------


@traced_memory(kind="client")
class NotesApi:
    """A user's own MemorySource, traced with the same decorator, delete included."""

    name = "notes-api"

    def __init__(self) -> None:
        self.rows: dict[str, str] = {}

    async def query(
        self, query: str, *, k: int, ctx: Ctx, where: dict[str, Any] | None = None
    ) -> list[MemoryItem]:
        return [MemoryItem(t, self.name, id=i) for i, t in self.rows.items() if query in t][:k]

    async def write(self, items: Sequence[MemoryItem], *, ctx: Ctx) -> None:
        for item in items:
            self.rows[item.id or str(len(self.rows))] = item.content

    async def delete(self, ids: Sequence[str], *, ctx: Ctx) -> None:
        for i in ids:
            self.rows.pop(i, None)

    async def forget(self, where: dict[str, Any], *, ctx: Ctx) -> int:
        gone = len(self.rows)
        self.rows.clear()
        return gone

    async def delete_scope(self, *, ctx: Ctx) -> int:
        return await self.forget({}, ctx=ctx)


async def test_delete_and_forget_are_delete_memory_spans() -> None:
    api = NotesApi()
    await api.write([MemoryItem("a", "x", id="1"), MemoryItem("b", "x", id="2")], ctx=Ctx())
    EXPORTER.clear()
    await api.delete(["1"], ctx=Ctx())
    await api.forget({"topic": "all"}, ctx=Ctx())
    deleted, forgot = memory_spans()
    assert deleted.name == forgot.name == "delete_memory"
    assert deleted.attributes["gen_ai.memory.record.count"] == 1
    assert forgot.attributes["gen_ai.memory.record.count"] == 1
    assert deleted.kind is SpanKind.CLIENT

    await api.write([MemoryItem("c", "x", id="3")], ctx=Ctx())
    EXPORTER.clear()
    await api.delete_scope(ctx=Ctx())
    outer, inner = sorted(memory_spans(), key=lambda s: s.start_time)
    assert outer.name == inner.name == "delete_memory"
    assert outer.attributes["gen_ai.memory.record.count"] == 1
    assert parent_of(inner) == outer.context.span_id


async def test_a_single_id_delete_names_the_record() -> None:
    """docs/tracing.md: ``gen_ai.memory.record.id`` on a delete of one id. Every shipped
    source takes a list, so a one-element list is the single-id delete."""
    memory = await vector_memory()
    ids = [item.id for item in await memory.query("Paris ocean", k=3, ctx=Ctx(TENANT))]
    assert len(ids) == 3 and all(isinstance(i, str) for i in ids)
    EXPORTER.clear()
    await memory.delete([ids[0]], ctx=Ctx(TENANT))
    await memory.delete(ids[1:], ctx=Ctx(TENANT))
    await memory.delete((ids[2], ids[2]), ctx=Ctx(TENANT))  # one record, named twice
    one, two, again = memory_spans()
    assert one.attributes["gen_ai.memory.record.id"] == ids[0]
    assert one.attributes["gen_ai.memory.record.count"] == 1
    assert "gen_ai.memory.record.id" not in two.attributes
    assert two.attributes["gen_ai.memory.record.count"] == 2
    assert again.attributes["gen_ai.memory.record.id"] == ids[2]


def test_delete_methods_the_shipped_classes_define_are_traced() -> None:
    # Sources grow delete/forget/delete_where...: whatever they define is wrapped.
    shipped = (
        VectorMemory,
        CachedMemory,
        CompositeMemory,
        SequentialMemory,
        ScopedMemory,
        ReadOnlyMemory,
        FileMemory,
        JournalMemory,
        ScratchpadMemory,
        ToolMemory,
        LexicalMemory,
        PerScopeMemory,
        CompactedMemory,
        HybridMemory,
    )
    for cls in shipped:
        for method, fn in vars(cls).items():
            verb = method in ("query", "write", "delete", "forget") or method.startswith(
                ("delete_", "forget_")
            )
            if verb and asyncio.iscoroutinefunction(fn):
                assert hasattr(fn, "__agentkit_traced__"), f"{cls.__name__}.{method}"
        assert all(hasattr(getattr(cls, m), "__agentkit_traced__") for m in ("query", "write"))


async def test_the_bridges_sources_have_spans_too() -> None:
    """LangChainMemory and LlamaIndexMemory over real framework retrievers, in a composite."""
    from agentkit_langchain import AgentkitEmbeddings, LangChainMemory
    from agentkit_llamaindex import AgentkitEmbedding, LlamaIndexMemory
    from langchain_core.documents import Document
    from langchain_core.vectorstores import InMemoryVectorStore as LangChainStore
    from llama_index.core import VectorStoreIndex
    from llama_index.core.schema import TextNode

    store = LangChainStore(AgentkitEmbeddings(HashingEmbedder()))
    store.add_documents([Document("Paris is in France", id="p"), Document("salt", id="s")])
    index = VectorStoreIndex(
        [TextNode(id_="p", text="Paris is in France"), TextNode(id_="s", text="salt")],
        embed_model=AgentkitEmbedding(HashingEmbedder()),
    )
    composite = CompositeMemory(
        [
            LangChainMemory(store.as_retriever(), name="langchain-docs"),
            LlamaIndexMemory(index.as_retriever(), name="llamaindex-docs"),
        ]
    )
    EXPORTER.clear()
    assert await composite.query("Paris", k=1, ctx=Ctx(TENANT))
    top = one("CompositeMemory")
    members = {s.attributes["agentkit.memory.source.type"]: s for s in children(top)}
    assert set(members) == {"LangChainMemory", "LlamaIndexMemory"}
    assert members["LangChainMemory"].attributes["gen_ai.memory.store.id"] == "langchain-docs"
    assert members["LlamaIndexMemory"].kind is SpanKind.CLIENT
    assert all(s.attributes["gen_ai.memory.record.count"] == 1 for s in members.values())


# --- nesting under the frameworks' runs ---------------------------------------------


def _our_root_parent() -> int | None:
    return parent_of(one("CompositeMemory"))


async def test_spans_nest_under_a_langchain_run_sync_and_async() -> None:
    from agentkit_langchain import AgentkitRetriever

    retriever = AgentkitRetriever(memory=await four_sources(), scope=TENANT)
    EXPORTER.clear()

    def sync_call() -> int:
        with CALLER.start_as_current_span("langchain run") as run:
            docs = retriever.invoke("Paris")
        assert docs
        return run.get_span_context().span_id

    run_id = await asyncio.to_thread(sync_call)  # invoke runs on the interop loop
    assert _our_root_parent() == run_id
    assert len(memory_spans()) == 5

    EXPORTER.clear()
    with CALLER.start_as_current_span("langchain arun") as run:
        assert await retriever.ainvoke("Paris")
    assert _our_root_parent() == run.get_span_context().span_id


async def test_spans_nest_under_a_llamaindex_run_sync_and_async() -> None:
    from agentkit_llamaindex import AgentkitRetriever

    retriever = AgentkitRetriever(await four_sources(), ctx=Ctx(TENANT))
    EXPORTER.clear()

    def sync_call() -> int:
        with CALLER.start_as_current_span("llamaindex run") as run:
            assert retriever.retrieve("Paris")
        return run.get_span_context().span_id

    run_id = await asyncio.to_thread(sync_call)
    assert _our_root_parent() == run_id

    EXPORTER.clear()
    with CALLER.start_as_current_span("llamaindex arun") as run:
        assert await retriever.aretrieve("Paris")
    assert _our_root_parent() == run.get_span_context().span_id


async def test_spans_nest_under_langchain_runs_traced_by_openinference() -> None:
    """OpenInference's LangChain tracer: our spans sit under the retriever run's span."""
    from agentkit_langchain import AgentkitRetriever
    from openinference.instrumentation.langchain import LangChainInstrumentor

    instrumentor = LangChainInstrumentor()
    instrumentor.instrument(tracer_provider=PROVIDER)
    try:
        retriever = AgentkitRetriever(memory=await four_sources(), scope=TENANT)
        for call in (
            lambda: asyncio.to_thread(retriever.invoke, "Paris"),
            lambda: retriever.ainvoke("Paris"),
        ):
            EXPORTER.clear()
            assert await call()
            by_id = {s.context.span_id: s for s in finished()}
            run = by_id[_our_root_parent()]  # type: ignore[index]
            assert run.name == "AgentkitRetriever"
            assert len(memory_spans()) == 5
    finally:
        instrumentor.uninstrument()

    # Uninstrumented again: nothing is looked up, the memory's spans are roots.
    EXPORTER.clear()
    await retriever.ainvoke("Paris")
    assert _our_root_parent() is None


async def test_spans_nest_under_llamaindex_runs_traced_by_openinference() -> None:
    """The LlamaIndex instrumentation users run: its retrieve spans are our parents."""
    from agentkit_llamaindex import AgentkitRetriever
    from openinference.instrumentation.llama_index import LlamaIndexInstrumentor

    instrumentor = LlamaIndexInstrumentor()
    instrumentor.instrument(tracer_provider=PROVIDER)
    try:
        retriever = AgentkitRetriever(await four_sources(), ctx=Ctx(TENANT))
        EXPORTER.clear()
        await asyncio.to_thread(retriever.retrieve, "Paris")
        by_id = {s.context.span_id: s for s in finished()}
        parent = by_id[_our_root_parent()]  # type: ignore[index]
        assert "retrieve" in parent.name.lower()

        EXPORTER.clear()
        await retriever.aretrieve("Paris")
        by_id = {s.context.span_id: s for s in finished()}
        assert "retrieve" in by_id[_our_root_parent()].name.lower()  # type: ignore[index]
    finally:
        instrumentor.uninstrument()


# --- without OpenTelemetry ----------------------------------------------------------


def _run_python(code: str) -> str:
    env = dict(os.environ, ANONYMIZED_TELEMETRY="False")
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_without_opentelemetry_nothing_is_wrapped_and_everything_works() -> None:
    out = _run_python(
        """
        import sys
        sys.modules["opentelemetry"] = None  # as if the otel extra were not installed
        import asyncio
        from agentkit.kernel import Ctx
        from agentkit.observability import TRACING_AVAILABLE
        from agentkit.state.context import WorkingContext
        from agentkit.state.memory import (
            CachedMemory, CompositeMemory, ScratchpadMemory, VectorMemory,
        )
        from agentkit.vector import HashingEmbedder, InMemoryVectorStore

        assert not TRACING_AVAILABLE
        assert not hasattr(VectorMemory.query, "__wrapped__")
        assert not hasattr(CompositeMemory.write, "__wrapped__")
        assert not any(m.startswith("opentelemetry.") for m in sys.modules)
        wc = WorkingContext(); wc.scratchpad["city"] = "Paris"
        memory = CachedMemory(CompositeMemory([
            ScratchpadMemory(wc), VectorMemory(InMemoryVectorStore(HashingEmbedder())),
        ]))
        print([i.content for i in asyncio.run(memory.query("Paris", k=2, ctx=Ctx()))])
        """
    )
    assert out.strip() == "['Paris']"


def test_with_the_api_but_no_sdk_calls_go_straight_through() -> None:
    out = _run_python(
        """
        import asyncio
        from opentelemetry import trace
        from agentkit.kernel import Ctx
        from agentkit.state.context import WorkingContext
        from agentkit.state.memory import CompositeMemory, ScratchpadMemory

        wc = WorkingContext(); wc.scratchpad["city"] = "Paris"
        memory = CompositeMemory([ScratchpadMemory(wc)])
        assert hasattr(CompositeMemory.query, "__wrapped__")
        got = asyncio.run(memory.query("Paris", k=2, ctx=Ctx()))
        assert not trace.get_current_span().get_span_context().is_valid
        print([i.content for i in got])
        """
    )
    assert out.strip() == "['Paris']"


def test_a_global_provider_set_after_the_first_call_still_gets_the_spans() -> None:
    """No provider yet means no span, and nothing about that is remembered: an
    application that configures OpenTelemetry after a first memory call loses nothing."""
    out = _run_python(
        """
        import asyncio
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
            InMemorySpanExporter,
        )
        from agentkit.kernel import Ctx
        from agentkit.state.context import WorkingContext
        from agentkit.state.memory import CompositeMemory, ScratchpadMemory

        wc = WorkingContext(); wc.scratchpad["city"] = "Paris"
        memory = CompositeMemory([ScratchpadMemory(wc)])
        asyncio.run(memory.query("Paris", k=1, ctx=Ctx()))
        exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        trace.set_tracer_provider(provider)
        asyncio.run(memory.query("Paris", k=1, ctx=Ctx()))
        spans = exporter.get_finished_spans()
        print(sorted(s.attributes["agentkit.memory.source.type"] for s in spans))
        """
    )
    assert out.strip() == "['CompositeMemory', 'ScratchpadMemory']"
