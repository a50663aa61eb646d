"""memory.md: the decorators — CachedMemory, CompactedMemory, ReadOnlyMemory, ScopedMemory."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from spec_support import FakeSource, UpperCompactor, ctx

from agentkit.kernel import AgentkitError, Ctx, Message, Scope
from agentkit.state.memory import (
    CachedMemory,
    CompactedMemory,
    MemoryItem,
    MemoryWriteRefused,
    ReadOnlyMemory,
    ScopedMemory,
)


def it(content: str, source: str = "inner", score: float | None = None, **meta: Any):
    return MemoryItem(content, source, score, meta)


def inner_with(*contents: str, name: str = "inner") -> FakeSource:
    return FakeSource(name, [it(c, name, 1.0 - i / 10) for i, c in enumerate(contents)])


# --- names mirror the wrapped source ---------------------------------------------------


@pytest.mark.parametrize(
    "make",
    [
        lambda s: CachedMemory(s),
        lambda s: CompactedMemory(s, UpperCompactor()),
        lambda s: ReadOnlyMemory(s),
        lambda s: ScopedMemory(s),
    ],
    ids=["cached", "compacted", "readonly", "scoped"],
)
def test_decorator_name_mirrors_wrapped_source(make: Any) -> None:
    assert make(FakeSource("kb")).name == "kb"


# --- CachedMemory ----------------------------------------------------------------------


def test_cached_defaults_and_positional_order() -> None:
    inner = FakeSource("kb")
    c = CachedMemory(inner)
    assert c.inner is inner
    assert c.ttl_seconds == 60.0
    assert c.max_entries == 256
    assert c.strict_scope is False
    c2 = CachedMemory(inner, 5.0, 10, "named", True)
    assert (c2.ttl_seconds, c2.max_entries, c2.name, c2.strict_scope) == (5.0, 10, "named", True)


async def test_cache_hit_does_not_touch_inner() -> None:
    inner = inner_with("a", "b")
    cache = CachedMemory(inner)
    c = ctx()
    first = await cache.query("q", k=2, ctx=c)
    second = await cache.query("q", k=2, ctx=c)
    assert len(inner.queries) == 1
    assert [i.content for i in second] == [i.content for i in first] == ["a", "b"]


async def test_cache_key_includes_query_and_k() -> None:
    inner = inner_with("a", "b")
    cache = CachedMemory(inner)
    c = ctx()
    await cache.query("q", k=2, ctx=c)
    await cache.query("other", k=2, ctx=c)
    await cache.query("q", k=1, ctx=c)
    assert [(call.query, call.k) for call in inner.queries] == [("q", 2), ("other", 2), ("q", 1)]


async def test_cache_key_includes_where_values_canonically() -> None:
    inner = inner_with("a")
    cache = CachedMemory(inner)
    c = ctx()
    await cache.query("q", k=1, ctx=c, where={"lang": "en", "tag": "x"})
    await cache.query("q", k=1, ctx=c, where={"tag": "x", "lang": "en"})  # key order irrelevant
    assert len(inner.queries) == 1
    await cache.query("q", k=1, ctx=c, where={"lang": "fr", "tag": "x"})  # different value
    assert len(inner.queries) == 2
    await cache.query("q", k=1, ctx=c)  # no filter is its own entry
    assert len(inner.queries) == 3


async def test_cache_where_list_values_allowed() -> None:
    inner = inner_with("a")
    cache = CachedMemory(inner)
    c = ctx()
    await cache.query("q", k=1, ctx=c, where={"lang": ["en", "fr"]})
    await cache.query("q", k=1, ctx=c, where={"lang": ["en", "fr"]})
    assert len(inner.queries) == 1
    await cache.query("q", k=1, ctx=c, where={"lang": ["en", "de"]})
    assert len(inner.queries) == 2
    assert dict(inner.queries[0].where or {}) == {"lang": ["en", "fr"]}


async def test_cache_never_serves_one_tenant_to_another() -> None:
    inner = inner_with("a")
    cache = CachedMemory(inner)
    await cache.query("q", k=1, ctx=ctx("acme", "one"))
    await cache.query("q", k=1, ctx=ctx("globex", "one"))
    assert len(inner.queries) == 2
    assert inner.queries[1].ctx.scope == Scope("globex", "one")
    await cache.query("q", k=1, ctx=ctx("acme", "one"))
    assert len(inner.queries) == 2


async def test_cache_ttl_expires_entries() -> None:
    inner = inner_with("a")
    cache = CachedMemory(inner, ttl_seconds=0.1)
    c = ctx()
    await cache.query("q", k=1, ctx=c)
    await cache.query("q", k=1, ctx=c)
    assert len(inner.queries) == 1
    await asyncio.sleep(0.25)
    await cache.query("q", k=1, ctx=c)
    assert len(inner.queries) == 2


async def test_cache_evicts_oldest_when_full() -> None:
    inner = inner_with("a")
    cache = CachedMemory(inner, max_entries=2)
    c = ctx()
    for q in ("q1", "q2", "q3"):
        await cache.query(q, k=1, ctx=c)
    assert len(inner.queries) == 3
    await cache.query("q3", k=1, ctx=c)
    await cache.query("q2", k=1, ctx=c)
    assert len(inner.queries) == 3  # the two newest are still cached
    await cache.query("q1", k=1, ctx=c)
    assert len(inner.queries) == 4  # the oldest was dropped


async def test_cache_write_forwards_and_invalidates() -> None:
    inner = inner_with("a")
    cache = CachedMemory(inner)
    c = ctx()
    await cache.query("q", k=1, ctx=c)
    item = it("new")
    await cache.write([item], ctx=c)
    assert [[i.content for i in batch] for batch in inner.writes] == [["new"]]
    await cache.query("q", k=1, ctx=c)
    assert len(inner.queries) == 2


async def test_cache_strict_scope_refuses_incomplete_scope_without_touching_inner() -> None:
    inner = inner_with("a")
    cache = CachedMemory(inner, strict_scope=True)
    for scope in (Scope(), Scope("acme", None), Scope(None, "d"), Scope("acme", "")):
        with pytest.raises(PermissionError) as info:
            await cache.query("q", k=1, ctx=Ctx(scope))
        assert isinstance(info.value, AgentkitError)
    assert inner.queries == []
    assert [i.content for i in await cache.query("q", k=1, ctx=ctx())] == ["a"]


async def test_cache_default_allows_incomplete_scope() -> None:
    inner = inner_with("a")
    out = await CachedMemory(inner).query("q", k=1, ctx=Ctx())
    assert [i.content for i in out] == ["a"]


def test_cache_accepts_writes_mirrors_inner() -> None:
    assert CachedMemory(FakeSource("p")).accepts_writes is True
    assert CachedMemory(FakeSource("p", accepts_writes=False)).accepts_writes is False
    assert CachedMemory(ReadOnlyMemory(FakeSource("p"))).accepts_writes is False


# --- CompactedMemory ---------------------------------------------------------------------


def test_compacted_defaults() -> None:
    inner = FakeSource("kb")
    comp = UpperCompactor()
    c = CompactedMemory(inner, comp)
    assert c.inner is inner and c.compactor is comp
    assert c.max_items is None


async def test_compacted_wraps_each_item_as_one_message() -> None:
    inner = FakeSource(
        "kb",
        [
            MemoryItem("first passage", "kb", 0.9, {"path": "/a"}),
            MemoryItem("second passage", "kb", 0.5, id="2"),
        ],
    )
    comp = UpperCompactor(limit=5)
    out = await CompactedMemory(inner, comp).query("q", k=5, ctx=ctx())
    assert len(comp.calls) == 2
    assert all(len(call) == 1 and isinstance(call[0], Message) for call in comp.calls)
    assert sorted(call[0].content for call in comp.calls) == ["first passage", "second passage"]
    assert [i.content for i in out] == ["FIRST", "SECON"]
    assert [i.source for i in out] == ["kb", "kb"]
    assert [i.score for i in out] == [0.9, 0.5]
    assert out[0].metadata["path"] == "/a"
    assert out[1].id == "2"


async def test_compacted_max_items_caps_the_list() -> None:
    inner = inner_with("a", "b", "c", "d", name="kb")
    out = await CompactedMemory(inner, UpperCompactor(), max_items=2).query("q", k=4, ctx=ctx())
    assert [i.content for i in out] == ["A", "B"]
    out = await CompactedMemory(inner, UpperCompactor()).query("q", k=4, ctx=ctx())
    assert len(out) == 4


async def test_compacted_write_is_a_pass_through() -> None:
    inner = FakeSource("kb")
    comp = UpperCompactor()
    item = it("long original text")
    await CompactedMemory(inner, comp).write([item], ctx=ctx())
    assert [[i.content for i in batch] for batch in inner.writes] == [["long original text"]]
    assert comp.calls == []


def test_compacted_accepts_writes_mirrors_inner() -> None:
    assert CompactedMemory(FakeSource("p"), UpperCompactor()).accepts_writes is True
    ro = ReadOnlyMemory(FakeSource("p"), on_write="ignore")
    assert CompactedMemory(ro, UpperCompactor()).accepts_writes is False


# --- ReadOnlyMemory --------------------------------------------------------------------


def test_readonly_defaults() -> None:
    inner = FakeSource("kb")
    ro = ReadOnlyMemory(inner)
    assert ro.inner is inner
    assert ro.on_write == "refuse"
    assert ro.refused_writes == 0


async def test_readonly_query_is_untouched_pass_through() -> None:
    items = [it("a", "kb", 0.5, tag="t"), it("b", "kb", None)]
    inner = FakeSource("kb", items)
    c = ctx()
    out = await ReadOnlyMemory(inner).query("q", k=7, ctx=c, where={"tag": "t"})
    assert len(inner.queries) == 1
    call = inner.queries[0]
    assert (call.query, call.k, dict(call.where or {})) == ("q", 7, {"tag": "t"})
    assert call.ctx is c
    assert len(out) == 2 and out[0] is items[0] and out[1] is items[1]


async def test_readonly_refuse_raises_named_error_and_never_calls_inner() -> None:
    inner = FakeSource("registry", fail_write=AssertionError("inner write reached"))
    ro = ReadOnlyMemory(inner)
    with pytest.raises(MemoryWriteRefused) as info:
        await ro.write((i for i in [it("a"), it("b"), it("c")]), ctx=ctx())
    err = info.value
    assert isinstance(err, AgentkitError)
    assert not isinstance(err, PermissionError)
    assert err.source == "registry"
    assert err.n == 3
    assert "registry" in str(err)
    assert inner.writes == []
    assert ro.refused_writes == 1


async def test_readonly_empty_write_still_refuses() -> None:
    inner = FakeSource("registry")
    ro = ReadOnlyMemory(inner)
    with pytest.raises(MemoryWriteRefused) as info:
        await ro.write([], ctx=ctx())
    assert info.value.n == 0
    assert inner.writes == []


async def test_readonly_ignore_drops_counts_and_observes() -> None:
    inner = FakeSource("kb", fail_write=AssertionError("inner write reached"))
    ro = ReadOnlyMemory(inner, on_write="ignore")
    c = ctx()
    assert await ro.write([it("a"), it("b")], ctx=c) is None
    assert await ro.write([], ctx=c) is None
    assert inner.writes == []
    assert ro.refused_writes == 2
    obs = c.timeline.of("memory.write_refused")
    assert [(o.data["source"], o.data["n"]) for o in obs] == [("kb", 2), ("kb", 0)]


def test_readonly_accepts_writes_false_under_both_policies() -> None:
    assert ReadOnlyMemory(FakeSource("a")).accepts_writes is False
    assert ReadOnlyMemory(FakeSource("a"), on_write="ignore").accepts_writes is False
    assert ReadOnlyMemory(FakeSource("a", accepts_writes=True)).accepts_writes is False


async def test_readonly_outside_scoped_refuses_before_tenant_guard() -> None:
    inner = FakeSource("kb")
    stack = ReadOnlyMemory(ScopedMemory(inner))
    with pytest.raises(MemoryWriteRefused):
        await stack.write([it("a")], ctx=Ctx())  # incomplete scope, but refusal wins
    assert inner.writes == []


async def test_scoped_outside_readonly_checks_tenant_first() -> None:
    inner = FakeSource("kb")
    ro = ReadOnlyMemory(inner)
    stack = ScopedMemory(ro)
    with pytest.raises(PermissionError):
        await stack.write([it("a")], ctx=Ctx())
    assert ro.refused_writes == 0
    with pytest.raises(MemoryWriteRefused):
        await stack.write([it("a")], ctx=ctx())
    assert inner.writes == []


async def test_readonly_double_wrap_outer_refuses_inner_never_runs() -> None:
    innermost = FakeSource("kb")
    inner_ro = ReadOnlyMemory(innermost, on_write="ignore")
    outer = ReadOnlyMemory(inner_ro)
    with pytest.raises(MemoryWriteRefused):
        await outer.write([it("a")], ctx=ctx())
    assert inner_ro.refused_writes == 0
    assert outer.refused_writes == 1
    assert outer.name == "kb"


# --- ScopedMemory ----------------------------------------------------------------------


def test_scoped_defaults() -> None:
    inner = FakeSource("kb")
    s = ScopedMemory(inner)
    assert s.inner is inner and s.enforce is None


@pytest.mark.parametrize(
    "scope",
    [Scope(), Scope("acme", None), Scope(None, "support"), Scope("acme", ""), Scope("", "x")],
)
async def test_scoped_default_check_requires_both_ids(scope: Scope) -> None:
    inner = inner_with("a", name="kb")
    guard = ScopedMemory(inner)
    with pytest.raises(PermissionError) as info:
        await guard.query("q", k=1, ctx=Ctx(scope))
    assert isinstance(info.value, AgentkitError)
    with pytest.raises(PermissionError):
        await guard.write([it("a")], ctx=Ctx(scope))
    assert inner.queries == [] and inner.writes == []


async def test_scoped_happy_path_is_invisible() -> None:
    items = [it("a", "kb", 0.5)]
    inner = FakeSource("kb", items)
    guard = ScopedMemory(inner)
    c = ctx()
    out = await guard.query("q", k=1, ctx=c, where={"x": 1})
    assert [(i.content, i.source) for i in out] == [("a", "kb")]
    assert inner.queries[0].ctx.scope == c.scope
    assert dict(inner.queries[0].where or {}) == {"x": 1}
    await guard.write([it("w")], ctx=c)
    assert [[i.content for i in b] for b in inner.writes] == [["w"]]


@pytest.mark.parametrize("verdict", [False, None, 0, ""])
async def test_scoped_custom_enforce_falsy_is_permission_error(verdict: Any) -> None:
    inner = FakeSource("kb")
    seen: list[Ctx] = []

    def enforce(c: Ctx) -> Any:
        seen.append(c)
        return verdict

    guard = ScopedMemory(inner, enforce=enforce)
    c = ctx()
    with pytest.raises(PermissionError):
        await guard.query("q", k=1, ctx=c)
    with pytest.raises(PermissionError):
        await guard.write([it("a")], ctx=c)
    assert seen == [c, c]
    assert inner.queries == [] and inner.writes == []


async def test_scoped_custom_enforce_raising_is_permission_error() -> None:
    inner = FakeSource("kb")

    def enforce(c: Ctx) -> bool:
        raise ValueError("not an approved checkpoint")

    guard = ScopedMemory(inner, enforce=enforce)
    with pytest.raises(PermissionError) as info:
        await guard.query("q", k=1, ctx=ctx())
    assert isinstance(info.value, AgentkitError)
    with pytest.raises(PermissionError):
        await guard.write([it("a")], ctx=ctx())
    assert inner.queries == [] and inner.writes == []


async def test_scoped_custom_enforce_pins_a_specific_tenant() -> None:
    inner = inner_with("a", name="kb")
    guard = ScopedMemory(inner, enforce=lambda c: c.scope.org_id == "acme")
    assert [i.content for i in await guard.query("q", k=1, ctx=ctx("acme", "x"))] == ["a"]
    with pytest.raises(PermissionError):
        await guard.query("q", k=1, ctx=ctx("globex", "x"))
    assert len(inner.queries) == 1


async def test_scoped_custom_enforce_replaces_default_check() -> None:
    # "If enforce is None, the default check fires" — a custom policy is the whole policy.
    inner = inner_with("a", name="kb")
    guard = ScopedMemory(inner, enforce=lambda c: True)
    out = await guard.query("q", k=1, ctx=Ctx())
    assert [i.content for i in out] == ["a"]


def test_scoped_accepts_writes_mirrors_inner() -> None:
    assert ScopedMemory(FakeSource("p")).accepts_writes is True
    assert ScopedMemory(ReadOnlyMemory(FakeSource("p"))).accepts_writes is False
    assert ScopedMemory(FakeSource("p", accepts_writes=False)).accepts_writes is False
