"""LangGraphStoreMemory is traced like every other source: its spans follow the conventions.

A real LangGraph InMemoryStore with a deterministic embedding; spans are read back
through the SDK's InMemorySpanExporter on a provider handed to agentkit alone.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import pytest
from agentkit_langchain import LangGraphStoreMemory
from langgraph.store.memory import InMemoryStore
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from agentkit.kernel import Ctx, Scope
from agentkit.observability import set_content_capture, set_tracer_provider
from agentkit.state.memory import CompositeMemory, MemoryItem
from agentkit.vector import HashingEmbedder

DIM = 64
_HASH = HashingEmbedder(dim=DIM)
TENANT = Scope("org", "dom")
EXPORTER = InMemorySpanExporter()
PROVIDER = TracerProvider()
PROVIDER.add_span_processor(SimpleSpanProcessor(EXPORTER))


def fake_embed(texts: Iterable[str]) -> list[list[float]]:
    return [[float(x) for x in row] for row in _HASH.embed_sync(list(texts))]


@pytest.fixture(autouse=True)
def spans() -> Iterator[InMemorySpanExporter]:
    EXPORTER.clear()
    set_tracer_provider(PROVIDER)
    set_content_capture(False)
    yield EXPORTER
    set_content_capture(None)
    set_tracer_provider(None)
    EXPORTER.clear()


def memory_spans() -> list[ReadableSpan]:
    return [
        s
        for s in EXPORTER.get_finished_spans()
        if s.attributes and "gen_ai.operation.name" in s.attributes
    ]


async def agent_memories() -> LangGraphStoreMemory:
    index: dict[str, Any] = {"dims": DIM, "embed": fake_embed, "fields": ["text"]}
    memory = LangGraphStoreMemory(InMemoryStore(index=index), ("memories",), name="agent-mem")
    await memory.write(
        [
            MemoryItem("the cat sat on the mat", "seed", metadata={"id": "cat"}),
            MemoryItem("dogs bark at the mailman", "seed", metadata={"id": "dog"}),
            MemoryItem("goldfish swim in circles", "seed", metadata={"id": "fish"}),
        ],
        ctx=Ctx(TENANT),
    )
    return memory


async def test_a_query_is_a_search_memory_span() -> None:
    memory = await agent_memories()
    [upsert] = memory_spans()
    assert upsert.name == "upsert_memory"
    assert upsert.attributes is not None
    assert upsert.attributes["gen_ai.memory.record.count"] == 3
    EXPORTER.clear()

    got = await memory.query("cat", k=2, ctx=Ctx(TENANT))

    [search] = memory_spans()
    assert search.name == "search_memory"
    assert search.kind is SpanKind.CLIENT  # a source over a backend
    attrs = search.attributes
    assert attrs is not None
    assert attrs["gen_ai.operation.name"] == "search_memory"
    assert attrs["gen_ai.memory.store.id"] == "agent-mem"
    assert attrs["gen_ai.retrieval.top_k"] == 2
    assert attrs["gen_ai.memory.record.count"] == len(got) == 2
    assert attrs["agentkit.memory.source.type"] == "LangGraphStoreMemory"
    assert not any("cat" in str(v) for v in attrs.values())  # no content without opt-in


async def test_in_a_composite_its_span_is_a_child_of_the_composites() -> None:
    composite = CompositeMemory([await agent_memories()])
    EXPORTER.clear()
    await composite.query("cat", k=1, ctx=Ctx(TENANT))
    by_type = {s.attributes["agentkit.memory.source.type"]: s for s in memory_spans()
               if s.attributes is not None}
    member, top = by_type["LangGraphStoreMemory"], by_type["CompositeMemory"]
    assert member.parent is not None
    assert member.parent.span_id == top.context.span_id
