"""memory.md: CompositeMemory — fan-out, dedupe, rerank, and the write split."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from spec_support import FakeSource, UpperCompactor, ctx, overlapped

from agentkit.kernel import AgentkitError
from agentkit.state.memory import (
    CachedMemory,
    CompactedMemory,
    CompositeMemory,
    CompositeWriteError,
    MemoryItem,
    MemoryWriteRefused,
    ReadOnlyMemory,
    ScopedMemory,
    SequentialMemory,
)


def it(content: str, source: str, score: float | None = None, id: str | None = None, **meta: Any):
    return MemoryItem(content, source, score, meta, id=id)


def stamps(item: MemoryItem) -> tuple[Any, Any]:
    return item.metadata.get("dedupe_sources"), item.metadata.get("dedupe_count")


# --- construction ----------------------------------------------------------------------


def test_defaults() -> None:
    c = CompositeMemory([FakeSource("a")])
    assert c.name == "composite"
    assert c.reranker is None
    assert c.dedupe == "id"


def test_positional_parameter_order() -> None:
    async def rr(query: str, items: list[MemoryItem], *, k: int) -> list[MemoryItem]:
        return items[:k]

    src = FakeSource("a")
    c = CompositeMemory([src], rr, "mine", "content")
    assert list(c.sources) == [src]
    assert c.reranker is rr
    assert c.name == "mine"
    assert c.dedupe == "content"
    assert CompositeMemory([src], dedupe=None).dedupe is None


# --- fan-out ---------------------------------------------------------------------------


async def test_query_fans_out_concurrently() -> None:
    sources = [FakeSource(n, [it(n, n, 0.5)], delay=0.2) for n in "abc"]
    out = await CompositeMemory(sources).query("q", k=10, ctx=ctx())
    assert sorted(i.content for i in out) == ["a", "b", "c"]
    intervals = [iv for s in sources for iv in s.intervals]
    assert len(intervals) == 3
    assert overlapped(intervals), "sources ran one after another, not concurrently"


async def test_every_source_sees_query_where_and_ctx() -> None:
    sources = [FakeSource(n) for n in "ab"]
    c = ctx("org1", "dom1")
    await CompositeMemory(sources).query("what", k=3, ctx=c, where={"lang": "en"})
    for s in sources:
        assert len(s.queries) == 1
        call = s.queries[0]
        assert call.query == "what"
        assert dict(call.where or {}) == {"lang": "en"}
        assert call.ctx.scope == c.scope


async def test_default_rerank_sorts_by_score_none_last_and_cuts_k() -> None:
    a = FakeSource("a", [it("a-low", "a", 0.2), it("a-none", "a", None)])
    b = FakeSource("b", [it("b-high", "b", 0.9), it("b-mid", "b", 0.5)])
    comp = CompositeMemory([a, b])
    out = await comp.query("q", k=3, ctx=ctx())
    assert [i.content for i in out] == ["b-high", "b-mid", "a-low"]
    out = await comp.query("q", k=10, ctx=ctx())
    assert [i.content for i in out] == ["b-high", "b-mid", "a-low", "a-none"]


async def test_custom_reranker_is_awaited_with_k_and_top_k_is_cut() -> None:
    seen: dict[str, Any] = {}

    async def reverse(query: str, items: list[MemoryItem], *, k: int) -> list[MemoryItem]:
        seen["query"], seen["k"], seen["n"] = query, k, len(items)
        return sorted(items, key=lambda i: i.score or 0.0)  # worst first, all of them

    a = FakeSource("a", [it("a1", "a", 0.1), it("a3", "a", 0.3)])
    b = FakeSource("b", [it("b2", "b", 0.2), it("b4", "b", 0.4)])
    out = await CompositeMemory([a, b], reranker=reverse).query("task", k=2, ctx=ctx())
    assert seen["query"] == "task" and seen["k"] == 2 and seen["n"] == 4
    assert [i.content for i in out] == ["a1", "b2"]


async def test_query_failure_under_default_policy_is_not_swallowed() -> None:
    bad = FakeSource("bad", fail_query=ConnectionError("down"))
    good = FakeSource("good", [it("x", "good", 1.0)])
    with pytest.raises(Exception) as info:
        await CompositeMemory([good, bad]).query("q", k=3, ctx=ctx())
    # Design decision (lead): on_error="raise" surfaces CompositeQueryError after all settle.
    from agentkit.kernel import CompositeQueryError

    assert isinstance(info.value, CompositeQueryError)
    assert set(info.value.failed) == {"bad"}
    assert [i.content for i in info.value.succeeded["good"]] == ["x"]


async def test_cancelling_a_query_cancels_every_child() -> None:
    sources = [FakeSource(n, delay=5.0) for n in "ab"]
    task = asyncio.create_task(CompositeMemory(sources).query("q", k=3, ctx=ctx()))
    await asyncio.sleep(0.1)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await asyncio.sleep(0)
    assert [s.cancelled for s in sources] == [1, 1], "a child task was left running"


# --- dedupe ("id", the default) --------------------------------------------------------


async def test_shared_id_merges_even_with_different_text() -> None:
    a = FakeSource("a", [it("old text", "a", 0.4, id="7")])
    b = FakeSource("b", [it("new text", "b", 0.8, id="7")])
    out = await CompositeMemory([a, b]).query("q", k=5, ctx=ctx())
    assert len(out) == 1
    assert out[0].content == "new text"  # the highest-scored copy survives


async def test_identical_content_merges_even_when_one_side_has_an_id() -> None:
    # The headline case: VectorMemory reports chunk ids, the journal has none.
    vec = FakeSource("vector", [it("the fact", "vector", 0.9, id="chunk-3")])
    jnl = FakeSource("journal", [it("the fact", "journal", None)])
    out = await CompositeMemory([vec, jnl]).query("q", k=5, ctx=ctx())
    assert len(out) == 1
    assert out[0].source == "vector" and out[0].id == "chunk-3"


async def test_identical_content_with_different_ids_merges_under_id_mode() -> None:
    a = FakeSource("a", [it("same", "a", 0.1, id="1")])
    b = FakeSource("b", [it("same", "b", 0.2, id="2")])
    out = await CompositeMemory([a, b]).query("q", k=5, ctx=ctx())
    assert len(out) == 1 and out[0].source == "b"


async def test_survivor_is_highest_score_and_stamped() -> None:
    a = FakeSource("a", [it("X", "a", 0.3, origin="a")])
    b = FakeSource("b", [it("X", "b", 0.9, id="1", origin="b")])
    c = FakeSource("c", [it("X", "c", None, origin="c")])
    out = await CompositeMemory([a, b, c]).query("q", k=5, ctx=ctx())
    assert len(out) == 1
    s = out[0]
    assert (s.content, s.source, s.score, s.id) == ("X", "b", 0.9, "1")
    assert s.metadata["origin"] == "b"
    assert s.metadata["dedupe_sources"] == ("a", "b", "c")
    assert s.metadata["dedupe_count"] == 3


async def test_survivor_tie_goes_to_first_in_source_order() -> None:
    a = FakeSource("a", [it("X", "a", 0.5, origin="a")])
    b = FakeSource("b", [it("X", "b", 0.5, origin="b")])
    out = await CompositeMemory([a, b]).query("q", k=5, ctx=ctx())
    assert len(out) == 1 and out[0].metadata["origin"] == "a"


async def test_survivor_none_score_ranks_lowest() -> None:
    a = FakeSource("a", [it("X", "a", None, origin="a")])
    b = FakeSource("b", [it("X", "b", -5.0, origin="b")])
    out = await CompositeMemory([a, b]).query("q", k=5, ctx=ctx())
    assert len(out) == 1 and out[0].metadata["origin"] == "b"
    assert out[0].score == -5.0


async def test_all_none_scores_first_copy_survives() -> None:
    a = FakeSource("a", [it("X", "a", None, origin="a")])
    b = FakeSource("b", [it("X", "b", None, origin="b")])
    out = await CompositeMemory([a, b]).query("q", k=5, ctx=ctx())
    assert len(out) == 1 and out[0].metadata["origin"] == "a"
    assert out[0].metadata["dedupe_sources"] == ("a", "b")


async def test_non_colliding_items_come_back_exactly_as_returned() -> None:
    x = it("only in a", "a", 0.7, id="1", tag="t")
    y = it("only in b", "b", 0.6)
    dup_a, dup_b = it("dup", "a", 0.1), it("dup", "b", 0.2)
    out = await CompositeMemory([FakeSource("a", [x, dup_a]), FakeSource("b", [y, dup_b])]).query(
        "q", k=5, ctx=ctx()
    )
    assert len(out) == 3
    by_content = {i.content: i for i in out}
    assert by_content["only in a"] is x
    assert by_content["only in b"] is y
    assert stamps(x) == (None, None) and stamps(y) == (None, None)
    assert by_content["dup"].metadata["dedupe_count"] == 2


async def test_duplicates_within_one_source_merge() -> None:
    a = FakeSource("a", [it("X", "a", 0.2), it("X", "a", 0.7), it("Y", "a", 0.1)])
    out = await CompositeMemory([a]).query("q", k=5, ctx=ctx())
    assert [i.content for i in out] == ["X", "Y"]
    assert out[0].score == 0.7
    assert stamps(out[0]) == (("a",), 2)


async def test_dedupe_is_transitive() -> None:
    # A~B by content, B~C by id: one group of three.
    a = FakeSource("a", [it("P", "a", 0.1)])
    b = FakeSource("b", [it("P", "b", 0.2, id="7")])
    c = FakeSource("c", [it("Q", "c", 0.3, id="7")])
    out = await CompositeMemory([a, b, c]).query("q", k=5, ctx=ctx())
    assert len(out) == 1
    assert out[0].content == "Q"
    assert stamps(out[0]) == (("a", "b", "c"), 3)


async def test_nested_composites_add_counts_and_union_sources() -> None:
    inner = CompositeMemory(
        [FakeSource("a", [it("X", "a", 0.1)]), FakeSource("b", [it("X", "b", 0.2)])],
        name="inner",
    )
    inner_out = await inner.query("q", k=5, ctx=ctx())
    assert stamps(inner_out[0]) == (("a", "b"), 2)
    outer = CompositeMemory([inner, FakeSource("c", [it("X", "c", 0.3)])])
    out = await outer.query("q", k=5, ctx=ctx())
    assert len(out) == 1
    sources, count = stamps(out[0])
    assert count == 3
    assert isinstance(sources, tuple)
    assert sorted(sources) == ["a", "b", "c"]
    assert len(sources) == len(set(sources))


async def test_nested_survivor_stamps_add_up_when_both_sides_collided() -> None:
    left = CompositeMemory(
        [FakeSource("a", [it("X", "a", 0.1)]), FakeSource("b", [it("X", "b", 0.2)])], name="L"
    )
    right = CompositeMemory(
        [FakeSource("b", [it("X", "b", 0.2)]), FakeSource("c", [it("X", "c", 0.9)])], name="R"
    )
    out = await CompositeMemory([left, right]).query("q", k=5, ctx=ctx())
    assert len(out) == 1
    sources, count = stamps(out[0])
    assert count == 4
    assert sorted(sources) == ["a", "b", "c"]


async def test_dedupe_runs_before_rerank() -> None:
    seen: list[list[str]] = []

    async def counting(query: str, items: list[MemoryItem], *, k: int) -> list[MemoryItem]:
        seen.append([i.content for i in items])
        return items[:k]

    a = FakeSource("a", [it("same passage", "a", 0.9), it("other", "a", 0.1)])
    b = FakeSource("b", [it("same passage", "b", 0.8)])
    out = await CompositeMemory([a, b], reranker=counting).query("q", k=2, ctx=ctx())
    assert len(seen) == 1
    assert sorted(seen[0]) == ["other", "same passage"]  # the reranker scored one copy
    assert sorted(i.content for i in out) == ["other", "same passage"]


# --- dedupe="content" and dedupe=None ------------------------------------------------


async def test_content_mode_keeps_shared_id_with_different_text() -> None:
    a = FakeSource("a", [it("fact one", "a", 0.5, id="1")])
    b = FakeSource("b", [it("fact two", "b", 0.4, id="1")])
    out = await CompositeMemory([a, b], dedupe="content").query("q", k=5, ctx=ctx())
    assert sorted(i.content for i in out) == ["fact one", "fact two"]


async def test_content_mode_merges_identical_content() -> None:
    a = FakeSource("a", [it("same", "a", 0.5, id="1")])
    b = FakeSource("b", [it("same", "b", 0.6, id="2")])
    out = await CompositeMemory([a, b], dedupe="content").query("q", k=5, ctx=ctx())
    assert len(out) == 1
    assert out[0].source == "b"
    assert stamps(out[0]) == (("a", "b"), 2)


async def test_content_mode_is_not_transitive_through_ids() -> None:
    a = FakeSource("a", [it("P", "a", 0.1)])
    b = FakeSource("b", [it("P", "b", 0.2, id="7")])
    c = FakeSource("c", [it("Q", "c", 0.3, id="7")])
    out = await CompositeMemory([a, b, c], dedupe="content").query("q", k=5, ctx=ctx())
    assert sorted(i.content for i in out) == ["P", "Q"]


async def test_dedupe_none_is_pure_concatenation() -> None:
    x1, x2, x3 = it("X", "a", 0.5, id="1"), it("X", "b", 0.4, id="1"), it("X", "b", 0.3)
    seen: list[int] = []

    async def counting(query: str, items: list[MemoryItem], *, k: int) -> list[MemoryItem]:
        seen.append(len(items))
        return items[:k]

    out = await CompositeMemory(
        [FakeSource("a", [x1]), FakeSource("b", [x2, x3])], reranker=counting, dedupe=None
    ).query("q", k=5, ctx=ctx())
    assert seen == [3]
    assert len(out) == 3
    assert all(any(o is x for x in (x1, x2, x3)) for o in out)
    assert all(stamps(o) == (None, None) for o in out)


# --- write: broadcast and the accepted / refused / failed split ---------------------


async def test_write_broadcasts_every_item_to_every_source() -> None:
    a, b = FakeSource("a"), FakeSource("b")
    items = [it("one", "x"), it("two", "x")]
    await CompositeMemory([a, b]).write((i for i in items), ctx=ctx())  # a one-shot iterable
    assert [[i.content for i in batch] for batch in a.writes] == [["one", "two"]]
    assert [[i.content for i in batch] for batch in b.writes] == [["one", "two"]]


async def test_write_fans_out_concurrently() -> None:
    sources = [FakeSource(n, delay=0.2) for n in "abc"]
    await CompositeMemory(sources).write([it("x", "x")], ctx=ctx())
    assert overlapped([iv for s in sources for iv in s.intervals])


async def test_write_split_accepted_refused_failed() -> None:
    ok = FakeSource("ok")
    down = FakeSource("down", fail_write=ConnectionError("db down"))
    ignored_inner = FakeSource("kb")
    ignored = ReadOnlyMemory(ignored_inner, on_write="ignore")
    refusing = ReadOnlyMemory(FakeSource("registry"))
    comp = CompositeMemory([ok, down, ignored, refusing])
    with pytest.raises(CompositeWriteError) as info:
        await comp.write([it("fact", "x")], ctx=ctx())
    err = info.value
    assert isinstance(err, AgentkitError) and isinstance(err, RuntimeError)
    assert list(err.accepted) == ["ok"]
    assert list(err.refused) == ["kb"]
    assert set(err.failed) == {"down", "registry"}
    assert isinstance(err.failed["down"], ConnectionError)
    assert isinstance(err.failed["registry"], MemoryWriteRefused)
    assert err.failed["registry"].source == "registry"
    assert ignored_inner.writes == []


async def test_write_with_only_an_ignoring_member_refused_is_not_an_error() -> None:
    ok = FakeSource("ok")
    inner = FakeSource("kb")
    ro = ReadOnlyMemory(inner, on_write="ignore")
    assert await CompositeMemory([ok, ro]).write([it("f", "x")], ctx=ctx()) is None
    assert len(ok.writes) == 1
    assert inner.writes == []
    assert ro.refused_writes == 1


async def test_every_source_is_attempted_even_after_one_fails() -> None:
    first = FakeSource("first", fail_write=RuntimeError("boom"))
    slow = FakeSource("slow", delay=0.1, store_writes=True)
    with pytest.raises(CompositeWriteError) as info:
        await CompositeMemory([first, slow]).write([it("f", "x")], ctx=ctx())
    assert [i.content for i in slow.items] == ["f"]
    assert list(info.value.accepted) == ["slow"]
    assert set(info.value.failed) == {"first"}


async def test_source_declaring_accepts_writes_false_is_refused_not_accepted() -> None:
    noop = FakeSource("tooly", accepts_writes=False)
    down = FakeSource("down", fail_write=RuntimeError("x"))
    with pytest.raises(CompositeWriteError) as info:
        await CompositeMemory([noop, down]).write([it("f", "x")], ctx=ctx())
    assert "tooly" not in info.value.accepted
    assert list(info.value.refused) == ["tooly"]


async def test_third_party_source_without_marker_is_accepted() -> None:
    plain = FakeSource("plain")  # no accepts_writes attribute at all
    assert not hasattr(plain, "accepts_writes")
    down = FakeSource("down", fail_write=RuntimeError("x"))
    with pytest.raises(CompositeWriteError) as info:
        await CompositeMemory([plain, down]).write([it("f", "x")], ctx=ctx())
    assert list(info.value.accepted) == ["plain"]
    assert not info.value.refused
    assert CompositeMemory([plain]).accepts_writes is True


async def test_nested_all_read_only_composite_is_refused_not_accepted() -> None:
    inner = CompositeMemory(
        [
            ReadOnlyMemory(FakeSource("x"), on_write="ignore"),
            ReadOnlyMemory(FakeSource("y"), on_write="ignore"),
        ],
        name="inner",
    )
    assert inner.accepts_writes is False
    ok = FakeSource("ok")
    down = FakeSource("down", fail_write=RuntimeError("x"))
    with pytest.raises(CompositeWriteError) as info:
        await CompositeMemory([inner, ok, down]).write([it("f", "x")], ctx=ctx())
    assert "inner" not in info.value.accepted
    assert list(info.value.refused) == ["inner"]
    assert list(info.value.accepted) == ["ok"]


def _ro() -> ReadOnlyMemory:
    return ReadOnlyMemory(FakeSource("ro"), on_write="ignore")


@pytest.mark.parametrize(
    "wrap",
    [
        lambda: SequentialMemory([_ro(), FakeSource("writable")], name="seq"),
        lambda: ScopedMemory(_ro()),
        lambda: CachedMemory(_ro()),
        lambda: CompactedMemory(_ro(), UpperCompactor()),
        lambda: CompositeMemory([_ro()], name="comp"),
    ],
    ids=["sequential", "scoped", "cached", "compacted", "composite"],
)
async def test_read_only_marker_survives_every_wrapper(wrap: Any) -> None:
    member = wrap()
    assert member.accepts_writes is False
    down = FakeSource("down", fail_write=RuntimeError("x"))
    with pytest.raises(CompositeWriteError) as info:
        await CompositeMemory([member, down]).write([it("f", "x")], ctx=ctx())
    assert list(info.value.refused) == [member.name]
    assert not info.value.accepted


def test_accepts_writes_is_any_member() -> None:
    ro = ReadOnlyMemory(FakeSource("r"), on_write="ignore")
    assert CompositeMemory([]).accepts_writes is False
    assert CompositeMemory([ro]).accepts_writes is False
    assert CompositeMemory([ReadOnlyMemory(FakeSource("r"))]).accepts_writes is False
    assert CompositeMemory([ro, FakeSource("plain")]).accepts_writes is True
    assert CompositeMemory([FakeSource("t", accepts_writes=True), ro]).accepts_writes is True


async def test_empty_write_short_circuits_before_any_source() -> None:
    plain = FakeSource("plain")
    refusing_inner = FakeSource("registry")
    refusing = ReadOnlyMemory(refusing_inner)
    comp = CompositeMemory([plain, refusing])
    await comp.write([], ctx=ctx())
    await comp.write(iter(()), ctx=ctx())
    assert plain.writes == []
    assert refusing.refused_writes == 0
