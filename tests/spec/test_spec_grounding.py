"""memory.md: rerankers and the grounding adapters; kernel.md: RequestBuilder, Compactor."""

from __future__ import annotations

import functools
import inspect
from typing import Any

import pytest
from spec_support import FakeSource, ctx

from agentkit.kernel import Message
from agentkit.state.memory import (
    CompactedMemory,
    CompositeMemory,
    MemoryItem,
    as_grounder,
    as_grounding_source,
    render_grounding,
    rrf_rerank,
    score_sort_rerank,
)


def it(content: str, source: str, score: float | None = None, **meta: Any) -> MemoryItem:
    return MemoryItem(content, source, score, meta)


# --- score_sort_rerank -----------------------------------------------------------------


async def test_score_sort_is_descending_stable_none_last_and_kept() -> None:
    items = [
        it("n1", "t", None),
        it("lo", "a", 0.1),
        it("tie1", "a", 0.5),
        it("hi", "b", 0.9),
        it("n2", "t", None),
        it("tie2", "b", 0.5),
    ]
    out = await score_sort_rerank("q", items, k=10)
    assert [i.content for i in out] == ["hi", "tie1", "tie2", "lo", "n1", "n2"]
    assert all(any(o is i for i in items) for o in out)


async def test_score_sort_returns_at_most_k() -> None:
    items = [it(str(i), "a", i / 10) for i in range(5)]
    out = await score_sort_rerank("q", items, k=2)
    assert [i.content for i in out] == ["4", "3"]


async def test_score_sort_keeps_unranked_items_in_top_k() -> None:
    items = [it("tool result", "tool", None)]
    assert [i.content for i in await score_sort_rerank("q", items, k=3)] == ["tool result"]


async def test_score_sort_does_not_mutate_input_order() -> None:
    items = [it("a", "s", 0.1), it("b", "s", 0.9)]
    await score_sort_rerank("q", items, k=2)
    assert [i.content for i in items] == ["a", "b"]


# --- rrf_rerank (issue 2: beyond the spec) -------------------------------------------


async def test_rrf_replaces_scores_with_fused_rank_scores() -> None:
    # Source a uses a huge scale; raw sorting would let it win every slot.
    items = [
        it("a1", "a", 900.0),
        it("a2", "a", 800.0),
        it("b1", "b", 0.9),
        it("b2", "b", 0.8),
    ]
    out = await rrf_rerank("q", items, k=4)
    assert {i.content for i in out[:2]} == {"a1", "b1"}
    assert {i.content for i in out[2:]} == {"a2", "b2"}
    assert out[0].score == pytest.approx(1 / 61)
    assert out[2].score == pytest.approx(1 / 62)
    assert len(await rrf_rerank("q", items, k=1)) == 1


async def test_rrf_per_source_weights_via_partial() -> None:
    items = [it("a1", "a", 0.9), it("b1", "b", 0.9)]
    weighted = functools.partial(rrf_rerank, weights={"b": 2.0, "a": 1.0})
    out = await weighted("q", items, k=2)
    assert [i.content for i in out] == ["b1", "a1"]
    assert out[0].score == pytest.approx(2 / 61)
    out2 = await CompositeMemory(
        [FakeSource("a", [items[0]]), FakeSource("b", [items[1]])], reranker=weighted
    ).query("q", k=2, ctx=ctx())
    assert [i.content for i in out2] == ["b1", "a1"]


def test_rerankers_document_the_scale_problem() -> None:
    # Issue 2: "Say so where each is documented."
    for fn in (rrf_rerank, score_sort_rerank):
        doc = (fn.__doc__ or "").lower()
        assert "scale" in doc or ("cosine" in doc and "bm25" in doc)


# --- as_grounder / as_grounding_source / render_grounding ----------------------------


def test_grounder_defaults() -> None:
    for adapter in (as_grounder, as_grounding_source):
        params = inspect.signature(adapter).parameters
        assert params["k"].default == 5
        assert params["k"].kind is inspect.Parameter.KEYWORD_ONLY
        assert params["where"].default is None
    assert inspect.signature(as_grounder).parameters["format"].default is None
    assert "format" not in inspect.signature(as_grounding_source).parameters


async def test_as_grounder_default_k_query_is_task_and_renders_attributed() -> None:
    src = FakeSource("kb", [it("Paris is in France", "kb", 0.9), it("Rome", "kb", 0.5)])
    grounder = as_grounder(src)
    c = ctx()
    text = await grounder(c, "Where is Paris?")
    assert isinstance(text, str)
    call = src.queries[0]
    assert (call.query, call.k, call.where) == ("Where is Paris?", 5, None)
    assert call.ctx is c
    assert "[kb] Paris is in France" in text
    assert "[kb] Rome" in text


async def test_as_grounder_bakes_in_k_where_and_format() -> None:
    src = FakeSource("kb", [it("x", "kb"), it("y", "kb")])
    seen: list[list[MemoryItem]] = []

    def bullets(items: list[MemoryItem]) -> str:
        seen.append(list(items))
        return "\n".join(f"- {i.content}" for i in items)

    grounder = as_grounder(src, k=2, where={"lang": "en"}, format=bullets)
    assert await grounder(ctx(), "task") == "- x\n- y"
    assert [i.content for i in seen[0]] == ["x", "y"]
    assert src.queries[0].k == 2
    assert dict(src.queries[0].where or {}) == {"lang": "en"}


async def test_as_grounding_source_returns_items_unflattened() -> None:
    items = [it("a", "kb", 0.9), it("b", "kb", 0.1)]
    src = FakeSource("kb", items)
    source = as_grounding_source(src, where={"t": 1})
    out = await source(ctx(), "the task")
    assert [i.content for i in out] == ["a", "b"]
    assert all(isinstance(i, MemoryItem) for i in out)
    assert (src.queries[0].query, src.queries[0].k) == ("the task", 5)
    assert dict(src.queries[0].where or {}) == {"t": 1}
    await as_grounding_source(src, k=1)(ctx(), "t2")
    assert src.queries[1].k == 1


def test_render_grounding_attributes_each_item() -> None:
    text = render_grounding([it("first fact", "vector"), it("second fact", "journal")])
    assert isinstance(text, str)
    assert "first fact" in text and "second fact" in text
    assert "vector" in text and "journal" in text
    assert text.index("first fact") < text.index("second fact")


# --- RequestBuilder (kernel.md) --------------------------------------------------------


async def test_request_builder_fetches_admits_renders() -> None:
    from agentkit.capabilities import Grounder, GroundingSource, RequestBuilder

    assert RequestBuilder.Grounder is Grounder
    assert RequestBuilder.GroundingSource is GroundingSource
    src = FakeSource(
        "kb",
        [
            it("trusted fact", "kb", 0.9, author="human"),
            it("model musing", "kb", 0.8, author="model"),
        ],
    )
    rb = RequestBuilder(
        grounding=as_grounding_source(src),
        admit=lambda i: i.metadata.get("author") != "model",
        system="You are terse.",
    )
    messages = await rb.build(ctx(), "What do we know?")
    assert all(isinstance(m, Message) for m in messages)
    joined = "\n".join(m.content for m in messages)
    assert "trusted fact" in joined
    assert "model musing" not in joined
    assert "What do we know?" in joined
    assert "You are terse." in joined
    assert src.queries[0].query == "What do we know?"


async def test_request_builder_custom_render_sees_only_admitted() -> None:
    from agentkit.capabilities import RequestBuilder

    src = FakeSource("kb", [it("keep", "kb"), it("drop", "kb")])
    seen: list[list[str]] = []

    def render(items: Any) -> str:
        seen.append([i.content for i in items])
        return "RENDERED"

    rb = RequestBuilder(
        grounding=as_grounding_source(src), admit=lambda i: i.content == "keep", render=render
    )
    messages = await rb.build(ctx(), "task")
    assert seen == [["keep"]]
    assert any("RENDERED" in m.content for m in messages)


async def test_request_builder_without_grounding_still_builds() -> None:
    from agentkit.capabilities import RequestBuilder

    messages = await RequestBuilder().build(ctx(), "just the task")
    assert any("just the task" in m.content for m in messages)


# --- the shipped Compactor -------------------------------------------------------------


async def test_shipped_compactor_shrinks_items_through_compacted_memory() -> None:
    from agentkit.capabilities import Compactor, TruncatingCompactor

    comp = TruncatingCompactor(max_chars=20)
    assert isinstance(comp, Compactor)
    long = "word " * 50
    src = FakeSource("kb", [it(long, "kb", 0.5), it("short", "kb", 0.4)])
    out = await CompactedMemory(src, comp).query("q", k=5, ctx=ctx())
    assert len(out[0].content) <= 20 < len(long)
    assert out[1].content == "short"
    assert [i.source for i in out] == ["kb", "kb"]
