"""ToolMemory and default_parse: a tool as a read-only knowledge probe."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import pytest

from agentkit.kernel import Ctx, InvalidArgument, InvalidArgumentType, Scope
from agentkit.state.memory import MemoryItem, MemorySource, ToolMemory, default_parse
from agentkit.state.memory._protocol import accepts_writes
from agentkit.tools import FunctionTool


class RecordingTool:
    name = "search"
    description = "fake search"

    def __init__(self, result: Any) -> None:
        self.result = result
        self.calls: list[tuple[dict[str, Any], Ctx]] = []

    async def invoke(self, args: Mapping[str, Any], *, ctx: Ctx) -> Any:
        self.calls.append((dict(args), ctx))
        return self.result


def ctx() -> Ctx:
    return Ctx(Scope("acme", "support"))


def test_defaults_and_protocol() -> None:
    tm = ToolMemory(RecordingTool([]))
    assert (tm.name, tm.query_arg, tm.result_to_items) == ("tool", "query", None)
    assert isinstance(tm, MemorySource)
    assert accepts_writes(tm) is False


async def test_invokes_with_query_limit_and_where_passed_through() -> None:
    tool = RecordingTool([])
    c = ctx()
    await ToolMemory(tool, query_arg="q").query("refunds", k=3, ctx=c, where={"site": "docs"})
    assert tool.calls == [({"q": "refunds", "limit": 3, "site": "docs"}, c)]


async def test_items_are_restamped_with_the_instance_name_and_cut_to_k() -> None:
    tool = RecordingTool([f"hit {i}" for i in range(10)])
    items = await ToolMemory(tool, name="web").query("q", k=4, ctx=ctx())
    assert [i.content for i in items] == ["hit 0", "hit 1", "hit 2", "hit 3"]
    assert {i.source for i in items} == {"web"}


async def test_a_custom_parser_replaces_the_default_and_is_restamped() -> None:
    def parse(result: Any, query: str) -> list[MemoryItem]:
        return [MemoryItem(f"{query}:{r}", "whatever", 1.0, id=str(r)) for r in result]

    items = await ToolMemory(RecordingTool([1, 2]), result_to_items=parse).query(
        "q", k=5, ctx=ctx()
    )
    assert [(i.content, i.source, i.id) for i in items] == [
        ("q:1", "tool", "1"),
        ("q:2", "tool", "2"),
    ]


async def test_a_parser_returning_junk_is_a_clear_error() -> None:
    tm = ToolMemory(RecordingTool("x"), result_to_items=lambda r, q: ["not an item"])  # type: ignore[list-item,return-value]
    with pytest.raises(InvalidArgumentType, match="MemoryItem"):
        await tm.query("q", k=1, ctx=ctx())


async def test_writes_are_no_ops() -> None:
    tool = RecordingTool([])
    await ToolMemory(tool).write([MemoryItem("x", "user")], ctx=ctx())
    assert tool.calls == []


async def test_bad_arguments_fail_before_the_tool_runs() -> None:
    tool = RecordingTool([])
    with pytest.raises(InvalidArgument, match="k"):
        await ToolMemory(tool).query("q", k=0, ctx=ctx())
    with pytest.raises(InvalidArgumentType, match="where"):
        await ToolMemory(tool).query("q", k=1, ctx=ctx(), where="site=docs")  # type: ignore[arg-type]
    assert tool.calls == []


async def test_wraps_a_real_function_tool() -> None:
    def search(query: str, limit: int) -> dict[str, Any]:
        """Search the docs."""
        return {"results": [{"text": f"{query} #{i}", "score": i} for i in range(limit)]}

    items = await ToolMemory(FunctionTool(search), name="docs").query("refund", k=2, ctx=ctx())
    assert [(i.content, i.score, i.source) for i in items] == [
        ("refund #0", 0.0, "docs"),
        ("refund #1", 1.0, "docs"),
    ]


# ---- default_parse -------------------------------------------------------------


def test_results_key_recurses() -> None:
    items = default_parse({"results": ["a", "b"], "total": 2}, "q")
    assert [i.content for i in items] == ["a", "b"]


def test_list_of_dicts_with_aliases_score_and_metadata() -> None:
    items = default_parse(
        [
            {"content": "c", "score": 0.9, "metadata": {"url": "u"}, "title": "T"},
            {"text": "t", "rank": 2},
            {"snippet": "s", "score": None},
        ],
        "q",
    )
    assert [(i.content, i.score) for i in items] == [("c", 0.9), ("t", None), ("s", None)]
    assert items[0].metadata == {"url": "u", "title": "T"}
    assert items[1].metadata == {"rank": 2}


def test_content_outranks_its_aliases() -> None:
    (item,) = default_parse([{"content": "main", "text": "alt"}], "q")
    assert item.content == "main"
    assert item.metadata == {"text": "alt"}


def test_a_bad_score_is_dropped_not_fatal() -> None:
    items = default_parse(
        [{"content": "a", "score": math.nan}, {"content": "b", "score": "high"}], "q"
    )
    assert [i.score for i in items] == [None, None]
    assert items[1].metadata == {"score": "high"}


def test_list_of_strings_and_paragraph_strings() -> None:
    assert [i.content for i in default_parse(["x", "y"], "q")] == ["x", "y"]
    assert [i.content for i in default_parse("one\n\ntwo\n  \nthree", "q")] == [
        "one",
        "two",
        "three",
    ]
    assert [i.content for i in default_parse("single paragraph\nwith two lines", "q")] == [
        "single paragraph\nwith two lines"
    ]
    assert default_parse("", "q") == []


def test_anything_else_is_one_str_item() -> None:
    assert [i.content for i in default_parse(42, "q")] == ["42"]
    assert [i.content for i in default_parse({"answer": 1}, "q")] == ["{'answer': 1}"]
    assert [i.content for i in default_parse(None, "q")] == ["None"]


def test_parsed_items_are_valid_memory_items() -> None:
    for item in default_parse([{"content": 5, "metadata": {1: "int key"}}], "q"):
        assert isinstance(item, MemoryItem)
        assert item.content == "5"
        assert item.metadata == {"1": "int key"}
