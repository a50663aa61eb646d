"""ScratchpadMemory and WorkingContext: the run's notes as a source."""

from __future__ import annotations

import pytest

from agentkit.kernel import Ctx, InvalidArgument, InvalidArgumentType
from agentkit.state.context import WorkingContext
from agentkit.state.memory import MemoryItem, MemorySource, ScratchpadMemory


def pad(**entries: object) -> ScratchpadMemory:
    context = WorkingContext()
    context.scratchpad.update(entries)
    return ScratchpadMemory(context)


def test_working_contexts_do_not_share_a_scratchpad() -> None:
    a, b = WorkingContext(), WorkingContext()
    a.scratchpad["x"] = 1
    assert b.scratchpad == {}


def test_defaults_and_protocol() -> None:
    sm = pad()
    assert sm.name == "scratchpad"
    assert isinstance(sm, MemorySource)


async def test_matches_key_or_value_case_insensitively_in_insertion_order() -> None:
    sm = pad(plan="Call the CUSTOMER", customer_id=42, budget="100 EUR")
    items = await sm.query("customer", k=5, ctx=Ctx())
    assert [(i.content, i.metadata["key"]) for i in items] == [
        ("Call the CUSTOMER", "plan"),
        ("42", "customer_id"),
    ]
    assert all(i.score is None and i.id is None and i.source == "scratchpad" for i in items)


async def test_empty_query_matches_everything_and_k_cuts() -> None:
    sm = pad(a=1, b=2, c=3)
    assert [i.metadata["key"] for i in await sm.query("", k=2, ctx=Ctx())] == ["a", "b"]


async def test_values_are_rendered_with_str() -> None:
    sm = pad(steps=["search", "answer"])
    (item,) = await sm.query("answer", k=1, ctx=Ctx())
    assert item.content == "['search', 'answer']"


async def test_where_key_selects_entries_and_other_keys_match_nothing() -> None:
    sm = pad(a="x", b="x", c="x")
    assert [
        i.metadata["key"] for i in await sm.query("", k=5, ctx=Ctx(), where={"key": ["c", "a"]})
    ] == ["a", "c"]
    assert await sm.query("", k=5, ctx=Ctx(), where={"role": "user"}) == []


async def test_write_stores_content_under_the_key_and_reads_back() -> None:
    sm = pad()
    await sm.write([MemoryItem("buy milk", "agent", metadata={"key": "todo"})], ctx=Ctx())
    assert sm.context.scratchpad == {"todo": "buy milk"}
    (item,) = await sm.query("milk", k=1, ctx=Ctx())
    assert item.metadata == {"key": "todo"}


async def test_a_batch_with_a_missing_key_stores_nothing() -> None:
    sm = pad(keep="me")
    batch = [MemoryItem("a", "agent", metadata={"key": "a"}), MemoryItem("b", "agent")]
    with pytest.raises(InvalidArgument, match=r"items\[1\].*key"):
        await sm.write(batch, ctx=Ctx())
    with pytest.raises(InvalidArgumentType, match="key"):
        await sm.write([MemoryItem("c", "agent", metadata={"key": 3})], ctx=Ctx())
    assert sm.context.scratchpad == {"keep": "me"}


async def test_bad_arguments_are_refused() -> None:
    with pytest.raises(InvalidArgument, match="k"):
        await pad().query("", k=0, ctx=Ctx())
    with pytest.raises(InvalidArgumentType, match="query"):
        await pad().query(None, k=1, ctx=Ctx())  # type: ignore[arg-type]
