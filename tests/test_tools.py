"""Tool and FunctionTool: sync functions never run on the event loop."""

from __future__ import annotations

import asyncio
import functools
import threading
import time
from typing import Any

import pytest

from agentkit.kernel import Ctx, InvalidArgumentType
from agentkit.tools import FunctionTool, Tool


def lookup(city: str, units: str = "metric") -> str:
    """Look up the weather for a city."""
    return f"{city}:{units}"


async def alookup(city: str) -> str:
    await asyncio.sleep(0)
    return city.upper()


def test_name_and_description_default_from_the_function() -> None:
    tool = FunctionTool(lookup)
    assert tool.name == "lookup"
    assert tool.description == "Look up the weather for a city."
    assert isinstance(tool, Tool)
    named = FunctionTool(lookup, name="weather", description="custom")
    assert (named.name, named.description) == ("weather", "custom")
    assert FunctionTool(lambda: None).description == ""


async def test_sync_functions_get_keyword_args_in_a_worker_thread() -> None:
    seen: list[int] = []

    def where_am_i(x: int) -> int:
        seen.append(threading.get_ident())
        return x * 2

    assert await FunctionTool(where_am_i).invoke({"x": 21}, ctx=Ctx()) == 42
    assert seen and seen[0] != threading.get_ident()
    assert await FunctionTool(lookup).invoke({"city": "Oslo"}, ctx=Ctx()) == "Oslo:metric"


async def test_async_functions_are_awaited_on_the_loop() -> None:
    assert await FunctionTool(alookup).invoke({"city": "oslo"}, ctx=Ctx()) == "OSLO"
    partial = FunctionTool(functools.partial(alookup), name="p")
    assert await partial.invoke({"city": "rome"}, ctx=Ctx()) == "ROME"


async def test_blocking_sync_tools_overlap_instead_of_stalling_the_loop() -> None:
    spans: list[tuple[float, float]] = []

    def slow() -> None:
        start = time.monotonic()
        time.sleep(0.2)
        spans.append((start, time.monotonic()))

    tool = FunctionTool(slow)
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        for _ in range(5):
            await asyncio.sleep(0.02)
            ticks += 1

    await asyncio.gather(tool.invoke({}, ctx=Ctx()), tool.invoke({}, ctx=Ctx()), ticker())
    (a_start, a_end), (b_start, b_end) = spans
    assert a_start < b_end and b_start < a_end  # the two sleeps overlapped
    assert ticks == 5  # and the loop kept running meanwhile


async def test_async_callable_objects_are_awaited() -> None:
    class Probe:
        async def __call__(self, q: str) -> str:
            return q[::-1]

    tool = FunctionTool(Probe(), name="probe")
    assert await tool.invoke({"q": "abc"}, ctx=Ctx()) == "cba"


async def test_bad_arguments_are_refused() -> None:
    tool = FunctionTool(lookup)
    with pytest.raises(InvalidArgumentType, match="args"):
        await tool.invoke(["Oslo"], ctx=Ctx())  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentType, match="args"):
        await tool.invoke({1: "Oslo"}, ctx=Ctx())  # type: ignore[dict-item]
    with pytest.raises(InvalidArgumentType, match="fn"):
        FunctionTool("not callable")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentType, match="name"):
        FunctionTool(lookup, name="")


async def test_the_function_s_own_errors_propagate() -> None:
    def boom() -> Any:
        raise KeyError("nope")

    with pytest.raises(KeyError):
        await FunctionTool(boom).invoke({}, ctx=Ctx())
