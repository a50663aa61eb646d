"""Shared design decisions (/tmp/agentkit-design.md), beyond memory.md: on_error and timeout.

Kept apart from the spec tests so a failure here reads as "design drift", not "spec broken".
"""

from __future__ import annotations

import typing

import pytest
from spec_support import FakeSource, ctx

from agentkit.kernel import AgentkitError, CompositeQueryError
from agentkit.state.memory import CompositeMemory, MemoryItem, OnErrorPolicy, SequentialMemory


def it(content: str, source: str, score: float | None = None) -> MemoryItem:
    return MemoryItem(content, source, score)


def test_on_error_policy_and_defaults() -> None:
    assert "raise" in typing.get_args(OnErrorPolicy)
    c = CompositeMemory([FakeSource("a")])
    assert c.on_error == "raise"
    assert c.timeout is None
    assert SequentialMemory([FakeSource("a")]).on_error == "raise"


def test_on_error_is_keyword_only_and_checked() -> None:
    with pytest.raises(TypeError):
        CompositeMemory([], None, "n", "id", "raise")  # type: ignore[misc]
    with pytest.raises(ValueError) as info:
        CompositeMemory([], on_error="explode")  # type: ignore[arg-type]
    assert isinstance(info.value, AgentkitError)


async def test_skip_returns_survivors_and_observes_the_failure() -> None:
    assert "skip" in typing.get_args(OnErrorPolicy)
    bad = FakeSource("bad", fail_query=ConnectionError("down"))
    good = FakeSource("good", [it("x", "good", 1.0)])
    c = ctx()
    out = await CompositeMemory([good, bad], on_error="skip").query("q", k=3, ctx=c)
    assert [i.content for i in out] == ["x"]
    obs = c.timeline.of("memory.source_failed")
    assert [o.data["source"] for o in obs] == ["bad"]
    assert "error" in obs[0].data and "elapsed" in obs[0].data


async def test_timeout_bounds_a_slow_member() -> None:
    slow = FakeSource("slow", [it("late", "slow")], delay=2.0)
    fast = FakeSource("fast", [it("early", "fast", 1.0)])
    with pytest.raises(CompositeQueryError) as info:
        await CompositeMemory([fast, slow], timeout=0.1).query("q", k=3, ctx=ctx())
    assert set(info.value.failed) == {"slow"}
    assert slow.cancelled == 1
    out = await CompositeMemory([fast, slow], timeout=0.1, on_error="skip").query(
        "q", k=3, ctx=ctx()
    )
    assert [i.content for i in out] == ["early"]


async def test_sequential_skip_falls_through_to_next_tier() -> None:
    assert "skip" in typing.get_args(OnErrorPolicy)
    bad = FakeSource("cache", fail_query=ConnectionError("down"))
    good = FakeSource("vector", [it("v", "vector")])
    out = await SequentialMemory([bad, good], on_error="skip").query("q", k=2, ctx=ctx())
    assert [i.content for i in out] == ["v"]
    with pytest.raises((ConnectionError, CompositeQueryError)):
        await SequentialMemory([bad, good]).query("q", k=2, ctx=ctx())


async def test_observation_kinds_are_dotted_lower_case() -> None:
    import re

    from agentkit.state.memory import ReadOnlyMemory

    c = ctx()
    await ReadOnlyMemory(FakeSource("kb"), on_write="ignore").write([it("x", "s")], ctx=c)
    bad = FakeSource("bad", fail_query=ConnectionError("down"))
    await CompositeMemory([FakeSource("ok", [it("y", "ok")]), bad], on_error="skip").query(
        "q", k=1, ctx=c
    )
    kinds = {o.kind for o in c.timeline}
    assert {"memory.write_refused", "memory.source_failed"} <= kinds
    assert all(re.fullmatch(r"[a-z_]+(\.[a-z_]+)+", kind) for kind in kinds)
