"""SequentialMemory: tiers in order, stop at k, write to the first, on_error."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Iterable
from typing import Any

import pytest

from agentkit.kernel import (
    AgentkitError,
    CompositeQueryError,
    CompositeWriteError,
    Ctx,
    InvalidArgument,
    Scope,
)
from agentkit.state.memory import CompositeMemory, MemoryItem, ReadOnlyMemory, SequentialMemory


class ListMemory:
    """A small real source: substring match over a list, writes append."""

    def __init__(self, name: str, items: Iterable[MemoryItem] = ()) -> None:
        self.name = name
        self.items = list(items)
        self.queries: list[tuple[str, int, Any]] = []
        self.writes: list[list[MemoryItem]] = []

    async def query(
        self, query: str, *, k: int, ctx: Ctx, where: dict[str, Any] | None = None
    ) -> list[MemoryItem]:
        self.queries.append((query, k, where))
        return [i for i in self.items if query in i.content][:k]

    async def write(self, items: Iterable[MemoryItem], *, ctx: Ctx) -> None:
        batch = list(items)
        self.writes.append(batch)
        self.items.extend(dataclasses.replace(i, source=self.name) for i in batch)


class Boom(ListMemory):
    async def query(self, query: str, *, k: int, ctx: Ctx, where: Any = None) -> list[MemoryItem]:
        self.queries.append((query, k, where))
        await asyncio.sleep(0.01)
        raise ConnectionError(f"{self.name} unreachable")


class Greedy(ListMemory):
    """Ignores k: returns everything it has."""

    async def query(self, query: str, *, k: int, ctx: Ctx, where: Any = None) -> list[MemoryItem]:
        self.queries.append((query, k, where))
        return list(self.items)


def items(source: str, *contents: str) -> list[MemoryItem]:
    return [MemoryItem(c, source, None) for c in contents]


@pytest.fixture
def ctx() -> Ctx:
    return Ctx(Scope("acme", "support"))


def test_defaults() -> None:
    seq = SequentialMemory([])
    assert seq.name == "sequential"
    assert seq.on_error == "raise"
    with pytest.raises(TypeError):
        SequentialMemory([], "s", "skip")  # type: ignore[misc]


def test_unknown_on_error() -> None:
    with pytest.raises(InvalidArgument, match="'raise', 'skip'"):
        SequentialMemory([], on_error="ignore")  # type: ignore[arg-type]


async def test_first_tier_answering_means_the_second_is_never_hit(ctx: Ctx) -> None:
    cache = ListMemory("cache", items("cache", "a", "b", "c"))
    vector = ListMemory("vector", items("vector", "d"))
    got = await SequentialMemory([cache, vector]).query("", k=3, ctx=ctx)
    assert [i.content for i in got] == ["a", "b", "c"]
    assert vector.queries == []


async def test_later_tier_asked_only_for_the_shortfall_in_declared_order(ctx: Ctx) -> None:
    cache = ListMemory("cache", items("cache", "a"))
    mid = ListMemory("mid", items("mid", "b", "c"))
    last = ListMemory("last", items("last", "d", "e", "f"))
    got = await SequentialMemory([cache, mid, last]).query("", k=5, ctx=ctx, where={"x": 1})
    assert [i.content for i in got] == ["a", "b", "c", "d", "e"]
    assert [q[1] for q in (cache.queries[0], mid.queries[0], last.queries[0])] == [5, 4, 2]
    assert last.queries[0][2] == {"x": 1}


async def test_no_dedupe_copies_reach_the_caller(ctx: Ctx) -> None:
    cache = ListMemory("cache", items("cache", "same"))
    vector = ListMemory("vector", items("vector", "same", "other"))
    got = await SequentialMemory([cache, vector]).query("", k=3, ctx=ctx)
    assert [(i.content, i.source) for i in got] == [
        ("same", "cache"), ("same", "vector"), ("other", "vector")]


async def test_a_tier_returning_more_than_asked_is_cut(ctx: Ctx) -> None:
    first = Greedy("first", items("first", "a", "b", "c", "d"))
    second = ListMemory("second", items("second", "z"))
    got = await SequentialMemory([first, second]).query("", k=2, ctx=ctx)
    assert [i.content for i in got] == ["a", "b"]
    assert second.queries == []


async def test_tiers_run_one_after_another(ctx: Ctx) -> None:
    order: list[str] = []

    class Tier(ListMemory):
        async def query(self, query: str, *, k: int, ctx: Ctx, where: Any = None
                        ) -> list[MemoryItem]:
            order.append(f"start {self.name}")
            await asyncio.sleep(0.02)
            order.append(f"end {self.name}")
            return []

    await SequentialMemory([Tier("a"), Tier("b")]).query("", k=1, ctx=ctx)
    assert order == ["start a", "end a", "start b", "end b"]


@pytest.mark.parametrize(
    ("args", "exc"),
    [({"query": None, "k": 1}, TypeError), ({"query": "q", "k": 0}, ValueError),
     ({"query": "q", "k": 1, "where": 5}, TypeError)],
)
async def test_bad_input_touches_no_tier(ctx: Ctx, args: dict[str, Any],
                                         exc: type[Exception]) -> None:
    tier = ListMemory("t")
    query = args.pop("query")
    with pytest.raises(exc):
        await SequentialMemory([tier]).query(query, ctx=ctx, **args)
    assert tier.queries == []


async def test_raise_policy_wraps_the_failure(ctx: Ctx) -> None:
    first = ListMemory("cache", items("cache", "a"))
    down = Boom("vector")
    last = ListMemory("last", items("last", "z"))
    with pytest.raises(CompositeQueryError) as info:
        await SequentialMemory([first, down, last]).query("", k=3, ctx=ctx)
    err = info.value
    assert isinstance(err, AgentkitError) and isinstance(err, RuntimeError)
    assert [i.content for i in err.succeeded["cache"]] == ["a"]
    assert isinstance(err.failed["vector"], ConnectionError)
    assert err.__cause__ is err.failed["vector"]
    assert last.queries == []


async def test_skip_policy_falls_through_and_observes(ctx: Ctx) -> None:
    down = Boom("cache")
    vector = ListMemory("vector", items("vector", "a", "b"))
    got = await SequentialMemory([down, vector], on_error="skip").query("", k=2, ctx=ctx)
    assert [i.content for i in got] == ["a", "b"]
    assert vector.queries[0][1] == 2  # the failed tier supplied nothing
    (obs,) = ctx.timeline.of("memory.source_failed")
    assert obs.data["source"] == "cache" and obs.data["error"] == "ConnectionError"
    assert obs.data["elapsed"] >= 0.005


async def test_skip_policy_raises_when_every_tried_tier_failed(ctx: Ctx) -> None:
    with pytest.raises(CompositeQueryError) as info:
        await SequentialMemory([Boom("a"), Boom("b")], on_error="skip").query("", k=2, ctx=ctx)
    assert set(info.value.failed) == {"a", "b"}
    assert len(ctx.timeline.of("memory.source_failed")) == 2


async def test_skip_policy_with_an_empty_but_healthy_tier_answers(ctx: Ctx) -> None:
    got = await SequentialMemory([Boom("a"), ListMemory("b")], on_error="skip").query(
        "", k=2, ctx=ctx)
    assert got == []


async def test_empty_chain_answers_nothing(ctx: Ctx) -> None:
    assert await SequentialMemory([]).query("q", k=2, ctx=ctx) == []


async def test_cancellation_reaches_the_running_tier(ctx: Ctx) -> None:
    started, saw = asyncio.Event(), []

    class Held(ListMemory):
        async def query(self, query: str, *, k: int, ctx: Ctx, where: Any = None
                        ) -> list[MemoryItem]:
            started.set()
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                saw.append(self.name)
                raise
            return []

    task = asyncio.create_task(SequentialMemory([Held("h")], on_error="skip").query(
        "", k=1, ctx=ctx))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert saw == ["h"]


# --- writes ------------------------------------------------------------------------


async def test_write_goes_to_the_first_source_only(ctx: Ctx) -> None:
    cache, vector = ListMemory("cache"), ListMemory("vector")
    await SequentialMemory([cache, vector]).write(
        (MemoryItem(c, "caller") for c in ["x", "y"]), ctx=ctx)
    assert [i.content for i in cache.items] == ["x", "y"]
    assert vector.writes == []


async def test_empty_write_short_circuits(ctx: Ctx) -> None:
    strict = ReadOnlyMemory(ListMemory("ro"))
    await SequentialMemory([strict]).write([], ctx=ctx)
    assert strict.refused_writes == 0


async def test_write_with_no_tiers_stores_nothing_quietly(ctx: Ctx) -> None:
    await SequentialMemory([]).write([MemoryItem("x", "c")], ctx=ctx)


async def test_write_rejects_non_items(ctx: Ctx) -> None:
    cache = ListMemory("cache")
    with pytest.raises(TypeError, match="MemoryItem"):
        await SequentialMemory([cache]).write([{"content": "x"}], ctx=ctx)  # type: ignore[list-item]
    assert cache.writes == []


def test_accepts_writes_mirrors_the_first_tier() -> None:
    ro = ReadOnlyMemory(ListMemory("cache"), on_write="ignore")
    assert SequentialMemory([ro, ListMemory("vector")]).accepts_writes is False
    assert SequentialMemory([ListMemory("cache"), ro]).accepts_writes is True
    assert SequentialMemory([]).accepts_writes is False


async def test_read_only_first_tier_is_refused_in_an_enclosing_fanout(ctx: Ctx) -> None:
    ro_inner = ListMemory("cache")
    chain = SequentialMemory([ReadOnlyMemory(ro_inner, on_write="ignore"),
                              ListMemory("vector")], name="chain")
    rw = ListMemory("rw")
    await CompositeMemory([chain, rw]).write([MemoryItem("n", "c")], ctx=ctx)
    assert ro_inner.items == [] and len(rw.items) == 1

    class Down(ListMemory):
        async def write(self, items: Iterable[MemoryItem], *, ctx: Ctx) -> None:
            raise OSError("disk")

    with pytest.raises(CompositeWriteError) as info:
        await CompositeMemory([chain, rw, Down("down")]).write([MemoryItem("n", "c")], ctx=ctx)
    assert info.value.refused == ["chain"] and info.value.accepted == ["rw"]


async def test_single_arm_dedupe_by_wrapping_in_a_composite(ctx: Ctx) -> None:
    chain = SequentialMemory([ListMemory("cache", items("cache", "same")),
                              ListMemory("vector", items("vector", "same", "other"))])
    got = await CompositeMemory([chain], dedupe="id").query("", k=3, ctx=ctx)
    assert sorted(i.content for i in got) == ["other", "same"]
