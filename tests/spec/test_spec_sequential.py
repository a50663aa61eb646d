"""memory.md: SequentialMemory — cache-then-fallback, in declared order."""

from __future__ import annotations

from typing import Any

from spec_support import FakeSource, ctx

from agentkit.state.memory import CompositeMemory, MemoryItem, ReadOnlyMemory, SequentialMemory


def it(content: str, source: str, score: float | None = None) -> MemoryItem:
    return MemoryItem(content, source, score)


def test_defaults_and_positional_order() -> None:
    a = FakeSource("a")
    s = SequentialMemory([a])
    assert s.name == "sequential"
    assert list(s.sources) == [a]
    assert SequentialMemory([a], "chain").name == "chain"


async def test_second_source_not_hit_when_first_answered() -> None:
    fast = FakeSource("cache", [it(f"c{i}", "cache") for i in range(5)])
    slow = FakeSource("vector", [it("v", "vector")])
    out = await SequentialMemory([fast, slow]).query("q", k=3, ctx=ctx())
    assert [i.content for i in out] == ["c0", "c1", "c2"]
    assert slow.queries == []


async def test_asks_each_source_for_what_is_missing_in_declared_order() -> None:
    a = FakeSource("a", [it("a0", "a"), it("a1", "a")])
    b = FakeSource("b", [it("b0", "b", 0.99)])
    c = FakeSource("c", [it(f"c{i}", "c", 0.5) for i in range(10)])
    d = FakeSource("d", [it("d0", "d")])
    out = await SequentialMemory([a, b, c, d]).query("q", k=5, ctx=ctx())
    assert [call.k for call in a.queries] == [5]
    assert [call.k for call in b.queries] == [3]
    assert [call.k for call in c.queries] == [2]
    assert d.queries == []
    # Declared order, not score order: the cache hit beats the fresh fetch.
    assert [i.content for i in out] == ["a0", "a1", "b0", "c0", "c1"]


async def test_where_query_and_ctx_reach_each_tier() -> None:
    a = FakeSource("a")
    b = FakeSource("b")
    c = ctx("o", "d")
    await SequentialMemory([a, b]).query("what", k=2, ctx=c, where={"lang": "en"})
    for s in (a, b):
        assert s.queries[0].query == "what"
        assert dict(s.queries[0].where or {}) == {"lang": "en"}
        assert s.queries[0].ctx.scope == c.scope


async def test_no_dedupe_duplicates_reach_the_caller() -> None:
    a = FakeSource("a", [it("same", "a")])
    b = FakeSource("b", [it("same", "b")])
    out = await SequentialMemory([a, b]).query("q", k=2, ctx=ctx())
    assert [(i.content, i.source) for i in out] == [("same", "a"), ("same", "b")]
    assert all("dedupe_count" not in i.metadata for i in out)


async def test_short_of_k_returns_what_there_is() -> None:
    a = FakeSource("a", [it("a0", "a")])
    b = FakeSource("b", [])
    out = await SequentialMemory([a, b]).query("q", k=5, ctx=ctx())
    assert [i.content for i in out] == ["a0"]
    assert await SequentialMemory([]).query("q", k=5, ctx=ctx()) == []


async def test_write_goes_to_first_source_only() -> None:
    a, b = FakeSource("a"), FakeSource("b")
    items = [it("x", "x"), it("y", "x")]
    await SequentialMemory([a, b]).write((i for i in items), ctx=ctx())
    assert [[i.content for i in batch] for batch in a.writes] == [["x", "y"]]
    assert b.writes == []


def test_accepts_writes_mirrors_first_source() -> None:
    ro = ReadOnlyMemory(FakeSource("r"), on_write="ignore")
    plain = FakeSource("p")
    assert SequentialMemory([ro, plain]).accepts_writes is False
    assert SequentialMemory([plain, ro]).accepts_writes is True
    assert SequentialMemory([FakeSource("t", accepts_writes=False), plain]).accepts_writes is False
    assert SequentialMemory([]).accepts_writes is False


async def test_empty_write_short_circuits_before_the_first_source() -> None:
    inner = FakeSource("registry")
    ro = ReadOnlyMemory(inner)  # would raise on any write call, even an empty one
    plain = FakeSource("p")
    seq: Any = SequentialMemory([ro, plain])
    await seq.write([], ctx=ctx())
    assert ro.refused_writes == 0
    plain_first = SequentialMemory([plain])
    await plain_first.write([], ctx=ctx())
    assert plain.writes == []


async def test_single_arm_dedupe_by_wrapping_in_a_composite() -> None:
    # memory.md: "Wrap the chain in CompositeMemory(sources=[chain], dedupe="id")".
    a = FakeSource("cache", [it("same", "cache", 0.5)])
    b = FakeSource("vector", [it("same", "vector", 0.9), it("other", "vector", 0.1)])
    chain = SequentialMemory([a, b])
    out = await CompositeMemory(sources=[chain], dedupe="id").query("q", k=3, ctx=ctx())
    assert [i.content for i in out] == ["same", "other"]
    assert out[0].metadata["dedupe_count"] == 2
    assert out[0].metadata["dedupe_sources"] == ("cache", "vector")
