"""CompositeMemory: fan-out, merge/dedupe, rerank, the write split, failures."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Iterable
from typing import Any, get_args

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentkit.kernel import (
    AgentkitError,
    CompositeQueryError,
    CompositeWriteError,
    Ctx,
    InvalidArgument,
    MemoryWriteRefused,
    Scope,
)
from agentkit.state.memory import (
    CompositeMemory,
    DedupeMode,
    MemoryItem,
    OnErrorPolicy,
    ReadOnlyMemory,
    SequentialMemory,
    rrf_rerank,
)
from agentkit.state.memory._rerank import _SOURCE_RANKS


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
        hits = [i for i in self.items if query.lower() in i.content.lower()]
        if where:
            hits = [i for i in hits if all(i.metadata.get(a) == b for a, b in where.items())]
        return hits[:k]

    async def write(self, items: Iterable[MemoryItem], *, ctx: Ctx) -> None:
        batch = list(items)
        self.writes.append(batch)
        self.items.extend(dataclasses.replace(i, source=self.name) for i in batch)


class Boom(ListMemory):
    """Failure injection: every call raises."""

    def __init__(self, name: str, exc: Exception | None = None, delay: float = 0.0) -> None:
        super().__init__(name)
        self.exc = exc or RuntimeError(f"{name} is down")
        self.delay = delay

    async def query(self, query: str, *, k: int, ctx: Ctx, where: Any = None) -> list[MemoryItem]:
        self.queries.append((query, k, where))
        await asyncio.sleep(self.delay)
        raise self.exc

    async def write(self, items: Iterable[MemoryItem], *, ctx: Ctx) -> None:
        self.writes.append(list(items))
        raise self.exc


class Slow(ListMemory):
    """Sleeps, tracking how many calls overlap and whether it was cancelled."""

    def __init__(self, name: str, items: Iterable[MemoryItem] = (), delay: float = 0.2,
                 gauge: dict[str, int] | None = None) -> None:
        super().__init__(name, items)
        self.delay = delay
        self.gauge = gauge if gauge is not None else {"now": 0, "peak": 0}
        self.finished = False
        self.cancelled = False

    async def _sleep(self) -> None:
        self.gauge["now"] += 1
        self.gauge["peak"] = max(self.gauge["peak"], self.gauge["now"])
        try:
            await asyncio.sleep(self.delay)
        except asyncio.CancelledError:
            self.cancelled = True
            raise
        finally:
            self.gauge["now"] -= 1
        self.finished = True

    async def query(self, query: str, *, k: int, ctx: Ctx, where: Any = None) -> list[MemoryItem]:
        await self._sleep()
        return await super().query(query, k=k, ctx=ctx, where=where)

    async def write(self, items: Iterable[MemoryItem], *, ctx: Ctx) -> None:
        await self._sleep()
        await super().write(items, ctx=ctx)


def item(content: str, source: str, score: float | None = None, *, id: str | None = None,
         **meta: Any) -> MemoryItem:
    return MemoryItem(content, source, score, meta, id=id)


async def keep_order(query: str, items: list[MemoryItem], *, k: int) -> list[MemoryItem]:
    """A reranker that shows the merged pool exactly as the composite built it."""
    return items[:k]


@pytest.fixture
def ctx() -> Ctx:
    return Ctx(Scope("acme", "support"))


# --- construction -----------------------------------------------------------------


def test_defaults_and_keyword_only_policies() -> None:
    comp = CompositeMemory([])
    assert comp.reranker is None
    assert comp.name == "composite"
    assert comp.dedupe == "id"
    assert comp.on_error == "raise"
    assert comp.timeout is None
    with pytest.raises(TypeError):
        CompositeMemory([], None, "c", "id", "skip")  # type: ignore[misc]


def test_literal_aliases() -> None:
    assert get_args(DedupeMode) == ("id", "content")
    assert get_args(OnErrorPolicy) == ("raise", "skip")


@pytest.mark.parametrize(
    ("kwargs", "allowed"),
    [
        ({"dedupe": "hash"}, ["'id'", "'content'", "None"]),
        ({"dedupe": "ID"}, ["'id'", "'content'"]),
        ({"on_error": "ignore"}, ["'raise'", "'skip'"]),
    ],
)
def test_unknown_policy_is_refused_at_construction(kwargs: dict[str, Any],
                                                   allowed: list[str]) -> None:
    with pytest.raises(InvalidArgument) as info:
        CompositeMemory([ListMemory("a")], **kwargs)
    assert isinstance(info.value, ValueError)
    for value in allowed:
        assert value in str(info.value)


@pytest.mark.parametrize("timeout", [0, -1, float("nan")])
def test_bad_timeout_value(timeout: float) -> None:
    with pytest.raises(ValueError, match="timeout"):
        CompositeMemory([], timeout=timeout)


@pytest.mark.parametrize("timeout", ["1", True])
def test_bad_timeout_type(timeout: Any) -> None:
    with pytest.raises(TypeError, match="timeout"):
        CompositeMemory([], timeout=timeout)


def test_sources_must_be_memory_sources() -> None:
    with pytest.raises(TypeError, match=r"sources\[1\]"):
        CompositeMemory([ListMemory("a"), object()])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="sources"):
        CompositeMemory("ab")  # type: ignore[arg-type]


# --- bad query input, before anything is touched ------------------------------------


@pytest.mark.parametrize(
    ("args", "exc", "needle"),
    [
        ({"query": 3, "k": 2}, TypeError, "query"),
        ({"query": "q", "k": 0}, ValueError, "k"),
        ({"query": "q", "k": "2"}, TypeError, "k"),
        ({"query": "q", "k": True}, TypeError, "k"),
        ({"query": "q", "k": 2, "where": ["a"]}, TypeError, "where"),
    ],
)
async def test_bad_query_input_touches_no_source(ctx: Ctx, args: dict[str, Any],
                                                 exc: type[Exception], needle: str) -> None:
    a = ListMemory("a", [item("x", "a")])
    comp = CompositeMemory([a])
    query = args.pop("query")
    with pytest.raises(exc, match=needle) as info:
        await comp.query(query, ctx=ctx, **args)
    assert isinstance(info.value, AgentkitError)
    assert a.queries == []


async def test_empty_composite_answers_nothing(ctx: Ctx) -> None:
    assert await CompositeMemory([]).query("q", k=3, ctx=ctx) == []
    assert await CompositeMemory([], on_error="skip").query("q", k=3, ctx=ctx) == []


# --- fan-out ---------------------------------------------------------------------


async def test_sources_are_queried_concurrently(ctx: Ctx) -> None:
    gauge = {"now": 0, "peak": 0}
    sources = [Slow(f"s{i}", [item(f"fact {i}", f"s{i}", float(i))], 0.2, gauge)
               for i in range(5)]
    got = await CompositeMemory(sources).query("fact", k=5, ctx=ctx)
    assert gauge["peak"] == 5  # all five sleeps were in progress at the same moment
    assert [i.content for i in got] == ["fact 4", "fact 3", "fact 2", "fact 1", "fact 0"]


async def test_every_source_is_asked_for_k_with_its_own_where(ctx: Ctx) -> None:
    a, b = ListMemory("a"), ListMemory("b")
    where = {"tag": "x"}
    await CompositeMemory([a, b]).query("q", k=4, ctx=ctx, where=where)
    assert a.queries == [("q", 4, {"tag": "x"})]
    assert b.queries == [("q", 4, {"tag": "x"})]


async def test_default_rerank_sorts_by_score_none_last_and_cuts_to_k(ctx: Ctx) -> None:
    a = ListMemory("a", [item("a1", "a", 0.2), item("a2", "a", None)])
    b = ListMemory("b", [item("b1", "b", 0.9), item("b2", "b", 0.5)])
    got = await CompositeMemory([a, b]).query("", k=3, ctx=ctx)
    assert [i.content for i in got] == ["b1", "b2", "a1"]
    got = await CompositeMemory([a, b]).query("", k=10, ctx=ctx)
    assert [i.content for i in got] == ["b1", "b2", "a1", "a2"]


async def test_custom_reranker_sees_merged_pool_and_result_is_cut(ctx: Ctx) -> None:
    seen: list[tuple[str, list[str], int]] = []

    async def greedy(query: str, items: list[MemoryItem], *, k: int) -> list[MemoryItem]:
        seen.append((query, [i.content for i in items], k))
        return list(reversed(items)) * 3  # misbehaves: more than k

    a = ListMemory("a", [item("same", "a", 0.1), item("a-only", "a", 0.3)])
    b = ListMemory("b", [item("same", "b", 0.2)])
    got = await CompositeMemory([a, b], reranker=greedy).query("", k=2, ctx=ctx)
    assert seen == [("", ["same", "a-only"], 2)]  # deduped BEFORE rerank
    assert len(got) == 2


# --- dedupe ------------------------------------------------------------------------


async def test_id_mode_merges_shared_id_and_identical_content(ctx: Ctx) -> None:
    a = ListMemory("vector", [item("Paris is in France", "vector", 0.9, id="7"),
                              item("unique a", "vector", 0.5)])
    b = ListMemory("journal", [item("Paris, France", "journal", None, id="7"),
                               item("unique a", "journal", 0.8)])
    got = await CompositeMemory([a, b], reranker=keep_order).query("", k=10, ctx=ctx)
    assert [i.content for i in got] == ["Paris is in France", "unique a"]
    paris, uniq = got
    assert paris.metadata["dedupe_sources"] == ("vector", "journal")
    assert paris.metadata["dedupe_count"] == 2
    assert paris.score == 0.9
    assert uniq.source == "journal" and uniq.score == 0.8  # the higher-scored copy survives
    assert uniq.metadata["dedupe_sources"] == ("vector", "journal")


async def test_content_mode_ignores_shared_ids(ctx: Ctx) -> None:
    a = ListMemory("a", [item("row one of a", "a", 0.9, id="1"), item("same", "a", 0.1)])
    b = ListMemory("b", [item("row one of b", "b", 0.8, id="1"), item("same", "b", 0.2)])
    got = await CompositeMemory([a, b], dedupe="content").query("", k=10, ctx=ctx)
    assert sorted(i.content for i in got) == ["row one of a", "row one of b", "same"]
    same = next(i for i in got if i.content == "same")
    assert same.source == "b" and same.metadata["dedupe_count"] == 2


async def test_none_mode_is_plain_concatenation(ctx: Ctx) -> None:
    x1, x2 = item("x", "a", 0.5, id="1"), item("x", "b", 0.5, id="1")
    got = await CompositeMemory(
        [ListMemory("a", [x1]), ListMemory("b", [x2])], dedupe=None
    ).query("", k=10, ctx=ctx)
    assert len(got) == 2
    assert got[0] is x1 and got[1] is x2


async def test_items_that_never_collided_are_the_backends_own_objects(ctx: Ctx) -> None:
    a1, b1 = item("alpha", "a", 0.3, id="1"), item("beta", "b", 0.2, id="2")
    dup_a, dup_b = item("dup", "a", 0.1), item("dup", "b", 0.1)
    got = await CompositeMemory(
        [ListMemory("a", [a1, dup_a]), ListMemory("b", [b1, dup_b])]
    ).query("", k=10, ctx=ctx)
    assert got[0] is a1 and got[1] is b1
    assert "dedupe_count" not in a1.metadata
    survivor = got[2]
    assert survivor is not dup_a and survivor is not dup_b
    assert "dedupe_count" not in dup_a.metadata  # the original is never touched


async def test_fast_path_without_collisions_returns_same_objects(ctx: Ctx) -> None:
    items = [item(f"c{i}", "a", float(i), id=str(i)) for i in range(5)]
    got = await CompositeMemory([ListMemory("a", items)], reranker=keep_order).query(
        "", k=5, ctx=ctx)
    assert all(g is i for g, i in zip(got, items, strict=True))


async def test_survivor_rules_none_lowest_ties_first_and_first_position(ctx: Ctx) -> None:
    a = ListMemory("a", [item("first", "a", 0.1), item("dup", "a", None, tag="a")])
    b = ListMemory("b", [item("dup", "b", 0.4, tag="b"), item("tie", "b", 0.5, tag="b")])
    c = ListMemory("c", [item("tie", "c", 0.5, tag="c"), item("dup", "c", 0.4, tag="c")])
    got = await CompositeMemory([a, b, c], reranker=keep_order).query("", k=10, ctx=ctx)
    assert [i.content for i in got] == ["first", "dup", "tie"]
    dup, tie = got[1], got[2]
    assert dup.metadata["tag"] == "b"  # None loses to 0.4; 0.4 tie goes to the earlier copy
    assert dup.metadata["dedupe_sources"] == ("a", "b", "c")
    assert dup.metadata["dedupe_count"] == 3
    assert tie.metadata["tag"] == "b"
    assert isinstance(dup.metadata["dedupe_sources"], tuple)


async def test_dedupe_within_one_source(ctx: Ctx) -> None:
    a = ListMemory("a", [item("x", "a", 0.1), item("y", "a", 0.3), item("x", "a", 0.2)])
    got = await CompositeMemory([a]).query("", k=10, ctx=ctx)
    assert [i.content for i in got] == ["y", "x"]
    assert got[1].score == 0.2
    assert got[1].metadata["dedupe_sources"] == ("a",)
    assert got[1].metadata["dedupe_count"] == 2


async def test_dedupe_is_transitive(ctx: Ctx) -> None:
    # A~B by content, B~C by id: one fact, three copies.
    a = ListMemory("a", [item("text one", "a", 0.1)])
    b = ListMemory("b", [item("text one", "b", 0.2, id="k")])
    c = ListMemory("c", [item("text two", "c", 0.3, id="k")])
    got = await CompositeMemory([a, b, c]).query("", k=10, ctx=ctx)
    assert len(got) == 1
    assert got[0].content == "text two"
    assert got[0].metadata["dedupe_sources"] == ("a", "b", "c")
    assert got[0].metadata["dedupe_count"] == 3
    # The same chain in reverse pool order still collapses (the union is order-free).
    got = await CompositeMemory([c, b, a]).query("", k=10, ctx=ctx)
    assert len(got) == 1 and got[0].metadata["dedupe_count"] == 3


async def test_transitive_join_of_two_groups_keeps_earliest_position(ctx: Ctx) -> None:
    # Two groups form first ({p, q-copy} by id and {r, s} by content), then one item
    # bridges them; the joined group sits where its earliest member was.
    src = ListMemory("a", [
        item("p", "a", 0.1, id="1"),
        item("other", "a", 0.0),
        item("r", "a", 0.2),
        item("q", "a", 0.3, id="1"),
        item("r", "a", 0.4, id="1"),
    ])
    got = await CompositeMemory([src], reranker=keep_order).query("", k=10, ctx=ctx)
    assert [i.content for i in got] == ["r", "other"]
    assert got[0].score == 0.4 and got[0].metadata["dedupe_count"] == 4


async def test_long_shared_opening_is_not_a_copy(ctx: Ctx) -> None:
    # Passages from one document often open the same way; only the whole text decides.
    opening = "Section 4.2, Terms and conditions of the agreement. " * 6
    first, other, again = opening + "Refunds take 30 days.", opening + "Refunds take 5 days.", \
        opening + "Refunds take 30 days."
    src = ListMemory("a", [item(first, "a", 0.1), item(other, "a", 0.2), item(again, "a", 0.3)])
    got = await CompositeMemory([src], reranker=keep_order).query("", k=10, ctx=ctx)
    assert [i.content for i in got] == [first, other]
    assert got[0].metadata["dedupe_count"] == 2 and got[0].score == 0.3
    assert "dedupe_count" not in got[1].metadata


def _reference_merge(pool: list[MemoryItem], mode: str) -> list[tuple[Any, ...]]:
    """Pairwise, quadratic, obviously right: the groups the merge must find."""
    group = list(range(len(pool)))

    def same(x: MemoryItem, y: MemoryItem) -> bool:
        return x.content == y.content or (mode == "id" and x.id is not None and x.id == y.id)

    changed = True
    while changed:  # relabel to the smallest connected index until stable
        changed = False
        for i, x in enumerate(pool):
            for j, y in enumerate(pool):
                if same(x, y) and group[j] > group[i]:
                    group[j] = group[i]
                    changed = True
    out = []
    for root in sorted(set(group)):
        members = [pool[i] for i in range(len(pool)) if group[i] == root]
        if len(members) == 1:
            out.append(("same object", id(members[0])))
            continue
        best = members[0]
        for m in members:
            if m.score is not None and (best.score is None or m.score > best.score):
                best = m
        # Stamps a pooled item carries from outside this merge (hand-written here,
        # read back from a store in life) are not evidence of anything: ignored.
        sources: list[str] = []
        for m in members:
            if m.source not in sources:
                sources.append(m.source)
        count = len(members)
        out.append((best.content, best.source, best.score, best.id,
                    {**best.metadata, "dedupe_sources": tuple(sources), "dedupe_count": count}))
    return out


_opening = "The same long opening shared by several passages of one document. " * 2


@settings(max_examples=200, deadline=None)
@given(
    rows=st.lists(
        st.tuples(
            st.sampled_from(["a", "b", _opening + "a", _opening + "b", _opening, "a" * 70]),
            st.sampled_from(["s1", "s2", "s3"]),
            st.one_of(st.none(), st.sampled_from([0.1, 0.5, 0.9])),
            st.one_of(st.none(), st.sampled_from(["1", "2", "3"])),
            st.booleans(),
        ),
        max_size=14,
    ),
    mode=st.sampled_from(["id", "content"]),
)
def test_merge_matches_a_pairwise_reference(rows: list[tuple[Any, ...]], mode: str) -> None:
    pool = []
    for content, source, score, ident, stamped in rows:
        meta = {"dedupe_sources": ("earlier",), "dedupe_count": 3} if stamped else {}
        # A fresh string per row, so identity never stands in for equality.
        pool.append(MemoryItem("".join(list(content)), source, score, meta, id=ident))

    async def run() -> list[MemoryItem]:
        return await CompositeMemory(
            [ListMemory("a", pool)], dedupe=mode, reranker=keep_order  # type: ignore[arg-type]
        ).query("", k=100, ctx=Ctx(Scope("acme", "support")))

    got = asyncio.run(run())
    seen = [
        ("same object", id(g)) if any(g is p for p in pool)
        else (g.content, g.source, g.score, g.id, dict(g.metadata))
        for g in got
    ]
    assert seen == _reference_merge(pool, mode)


async def test_nested_composites_add_counts_and_union_sources(ctx: Ctx) -> None:
    inner = CompositeMemory([ListMemory("a", [item("fact", "a", 0.5)]),
                             ListMemory("b", [item("fact", "b", 0.7)])], name="inner")
    outer = CompositeMemory([inner, ListMemory("c", [item("fact", "c", 0.6)]),
                             ListMemory("d", [item("fact", "d", None)])])
    (got,) = await outer.query("", k=5, ctx=ctx)
    assert got.source == "b" and got.score == 0.7
    assert got.metadata["dedupe_sources"] == ("a", "b", "c", "d")
    assert got.metadata["dedupe_count"] == 4


async def test_nested_survivor_that_no_longer_collides_is_untouched(ctx: Ctx) -> None:
    inner = CompositeMemory([ListMemory("a", [item("fact", "a", 0.5)]),
                             ListMemory("b", [item("fact", "b", 0.7)])])
    outer = CompositeMemory([inner, ListMemory("c", [item("other", "c", 0.1)])])
    got = await outer.query("", k=5, ctx=ctx)
    assert got[0].metadata["dedupe_count"] == 2
    assert got[0].metadata["dedupe_sources"] == ("a", "b")


async def test_dedupe_before_rerank_frees_the_slot(ctx: Ctx) -> None:
    a = ListMemory("a", [item("one fact", "a", 0.9), item("second", "a", 0.1)])
    b = ListMemory("b", [item("one fact", "b", 0.8)])
    got = await CompositeMemory([a, b]).query("", k=2, ctx=ctx)
    assert [i.content for i in got] == ["one fact", "second"]
    got = await CompositeMemory([a, b], dedupe=None).query("", k=2, ctx=ctx)
    assert [i.content for i in got] == ["one fact", "one fact"]  # the opt-out keeps copies


# --- rrf support -------------------------------------------------------------------


async def test_rrf_through_composite_credits_every_copy(ctx: Ctx) -> None:
    a = ListMemory("a", [item("a-top", "a", 50.0), item("shared", "a", 40.0)])
    b = ListMemory("b", [item("shared", "b", 0.9), item("b-2", "b", 0.8)])
    got = await CompositeMemory([a, b], reranker=rrf_rerank).query("", k=3, ctx=ctx)
    assert got[0].content == "shared"
    assert got[0].score == pytest.approx(1 / 62 + 1 / 61)
    assert got[1].content == "a-top" and got[1].score == pytest.approx(1 / 61)
    assert got[2].content == "b-2" and got[2].score == pytest.approx(1 / 62)
    assert _SOURCE_RANKS.get() is None  # published only for the reranker call


async def test_rank_info_is_reset_even_when_the_reranker_fails(ctx: Ctx) -> None:
    async def broken(query: str, items: list[MemoryItem], *, k: int) -> list[MemoryItem]:
        assert _SOURCE_RANKS.get() is not None
        raise RuntimeError("reranker down")

    with pytest.raises(RuntimeError, match="reranker down"):
        await CompositeMemory([ListMemory("a", [item("x", "a")])], reranker=broken).query(
            "", k=1, ctx=ctx)
    assert _SOURCE_RANKS.get() is None


# --- failures on query --------------------------------------------------------------


async def test_raise_policy_waits_for_every_source_then_raises(ctx: Ctx) -> None:
    slow = Slow("slow", [item("late", "slow", 0.5)], delay=0.1)
    boom = Boom("boom")
    with pytest.raises(CompositeQueryError) as info:
        await CompositeMemory([boom, slow]).query("", k=3, ctx=ctx)
    err = info.value
    assert isinstance(err, AgentkitError) and isinstance(err, RuntimeError)
    assert slow.finished and not slow.cancelled  # settled, not abandoned
    assert [i.content for i in err.succeeded["slow"]] == ["late"]
    assert set(err.failed) == {"boom"}
    assert err.failed["boom"] is boom.exc
    assert ctx.timeline.of("memory.source_failed") == []


async def test_skip_policy_answers_from_healthy_sources_and_observes(ctx: Ctx) -> None:
    ok = ListMemory("ok", [item("fine", "ok", 0.5)])
    boom = Boom("boom", ValueError("bad row"), delay=0.05)
    got = await CompositeMemory([ok, boom], on_error="skip").query("", k=3, ctx=ctx)
    assert [i.content for i in got] == ["fine"]
    (obs,) = ctx.timeline.of("memory.source_failed")
    assert obs.data["source"] == "boom"
    assert obs.data["error"] == "ValueError"
    assert 0.04 <= obs.data["elapsed"] < 5


async def test_skip_policy_still_raises_when_every_source_failed(ctx: Ctx) -> None:
    comp = CompositeMemory([Boom("a"), Boom("b")], on_error="skip")
    with pytest.raises(CompositeQueryError) as info:
        await comp.query("", k=3, ctx=ctx)
    assert set(info.value.failed) == {"a", "b"}
    assert info.value.succeeded == {}
    assert len(ctx.timeline.of("memory.source_failed")) == 2


async def test_skip_with_a_healthy_but_empty_source_is_an_answer(ctx: Ctx) -> None:
    got = await CompositeMemory([Boom("a"), ListMemory("b")], on_error="skip").query(
        "", k=3, ctx=ctx)
    assert got == []


async def test_timeout_raise_mode(ctx: Ctx) -> None:
    slow = Slow("slow", [item("late", "slow")], delay=5)
    fast = ListMemory("fast", [item("quick", "fast")])
    with pytest.raises(CompositeQueryError) as info:
        await CompositeMemory([slow, fast], timeout=0.05).query("", k=3, ctx=ctx)
    assert isinstance(info.value.failed["slow"], TimeoutError)
    assert [i.content for i in info.value.succeeded["fast"]] == ["quick"]
    assert slow.cancelled and not slow.finished


async def test_timeout_skip_mode(ctx: Ctx) -> None:
    slow = Slow("slow", [item("late", "slow")], delay=5)
    fast = ListMemory("fast", [item("quick", "fast")])
    got = await CompositeMemory([slow, fast], on_error="skip", timeout=0.05).query(
        "", k=3, ctx=ctx)
    assert [i.content for i in got] == ["quick"]
    (obs,) = ctx.timeline.of("memory.source_failed")
    assert obs.data["source"] == "slow" and obs.data["error"] == "TimeoutError"
    assert obs.data["elapsed"] >= 0.04


async def test_duplicate_member_names_are_disambiguated(ctx: Ctx) -> None:
    comp = CompositeMemory([Boom("x"), ListMemory("y"), Boom("x")])
    with pytest.raises(CompositeQueryError) as info:
        await comp.query("", k=1, ctx=ctx)
    assert set(info.value.failed) == {"x#0", "x#2"}
    assert set(info.value.succeeded) == {"y"}


async def test_a_source_returning_garbage_is_that_sources_failure(ctx: Ctx) -> None:
    class Broken(ListMemory):
        async def query(self, *a: Any, **kw: Any) -> Any:
            return None

    got = await CompositeMemory([Broken("bad"), ListMemory("ok", [item("x", "ok")])],
                                on_error="skip").query("", k=2, ctx=ctx)
    assert [i.content for i in got] == ["x"]
    assert ctx.timeline.of("memory.source_failed")[0].data["error"] == "InvalidArgumentType"


# --- cancellation -----------------------------------------------------------------


class Held(ListMemory):
    """Holds the query open on an Event and records that it saw the cancellation."""

    def __init__(self, name: str, started: asyncio.Event) -> None:
        super().__init__(name)
        self.started = started
        self.release = asyncio.Event()
        self.saw_cancel = False
        self.running = False

    async def query(self, query: str, *, k: int, ctx: Ctx, where: Any = None) -> list[MemoryItem]:
        self.running = True
        self.started.set()
        try:
            await self.release.wait()
        except asyncio.CancelledError:
            self.saw_cancel = True
            raise
        finally:
            self.running = False
        return []


async def test_cancelling_the_query_cancels_every_child(ctx: Ctx) -> None:
    starts = [asyncio.Event() for _ in range(3)]
    held = [Held(f"h{i}", starts[i]) for i in range(3)]
    outer = CompositeMemory([CompositeMemory(held[:2], name="inner"), held[2]])
    before = asyncio.all_tasks()
    task = asyncio.create_task(outer.query("q", k=3, ctx=ctx))
    await asyncio.gather(*(s.wait() for s in starts))
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert all(h.saw_cancel for h in held)
    assert not any(h.running for h in held)
    assert asyncio.all_tasks() - before - {asyncio.current_task()} == set()


async def test_cancelling_a_timed_composite_also_cancels_children(ctx: Ctx) -> None:
    start = asyncio.Event()
    held = Held("h", start)
    task = asyncio.create_task(
        CompositeMemory([held, ListMemory("x")], timeout=10, on_error="skip").query(
            "q", k=1, ctx=ctx))
    await start.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert held.saw_cancel
    assert ctx.timeline.of("memory.source_failed") == []  # a cancel is not an outage


# --- accepts_writes ----------------------------------------------------------------


def test_accepts_writes_is_any_member() -> None:
    ro = ReadOnlyMemory(ListMemory("ro"), on_write="ignore")
    assert CompositeMemory([ro, ListMemory("rw")]).accepts_writes is True
    assert CompositeMemory([ro]).accepts_writes is False
    assert CompositeMemory([]).accepts_writes is False


def test_unmarked_third_party_source_counts_as_writable() -> None:
    class Plain:
        name = "plain"

        async def query(self, *a: Any, **kw: Any) -> list[MemoryItem]:
            return []

        async def write(self, *a: Any, **kw: Any) -> None:
            return None

    assert CompositeMemory([Plain()]).accepts_writes is True  # type: ignore[list-item]


def test_accepts_writes_survives_nesting() -> None:
    ro = ReadOnlyMemory(ListMemory("ro"), on_write="ignore")
    all_ro = CompositeMemory([ro, CompositeMemory([])], name="all-ro")
    assert all_ro.accepts_writes is False
    assert CompositeMemory([all_ro]).accepts_writes is False
    assert CompositeMemory([all_ro, ListMemory("rw")]).accepts_writes is True


# --- writes ------------------------------------------------------------------------


async def test_write_broadcasts_concurrently_to_every_member(ctx: Ctx) -> None:
    gauge = {"now": 0, "peak": 0}
    members = [Slow(f"s{i}", delay=0.1, gauge=gauge) for i in range(4)]
    batch = (item(f"n{i}", "caller") for i in range(3))  # a one-shot iterable
    await CompositeMemory(members).write(batch, ctx=ctx)
    assert gauge["peak"] == 4
    for m in members:
        assert [i.content for i in m.writes[0]] == ["n0", "n1", "n2"]


async def test_empty_write_touches_nothing(ctx: Ctx) -> None:
    strict = ReadOnlyMemory(ListMemory("ro"))  # would raise on any write, even an empty one
    rw = ListMemory("rw")
    await CompositeMemory([strict, rw]).write([], ctx=ctx)
    assert strict.refused_writes == 0 and rw.writes == []


async def test_write_split_accepted_refused_failed(ctx: Ctx) -> None:
    rw = ListMemory("rw")
    ignoring = ReadOnlyMemory(ListMemory("registry"), on_write="ignore")
    refusing = ReadOnlyMemory(ListMemory("kb"))
    broken = Boom("down")
    with pytest.raises(CompositeWriteError) as info:
        await CompositeMemory([rw, ignoring, refusing, broken]).write(
            [item("new", "caller")], ctx=ctx)
    err = info.value
    assert err.accepted == ["rw"]
    assert err.refused == ["registry"]
    assert set(err.failed) == {"kb", "down"}
    assert isinstance(err.failed["kb"], MemoryWriteRefused)
    assert err.failed["down"] is broken.exc
    assert [i.content for i in rw.items] == ["new"]  # the healthy member did commit
    assert ignoring.inner.items == []  # type: ignore[attr-defined]


async def test_write_error_is_raised_only_after_every_member_settled(ctx: Ctx) -> None:
    slow = Slow("slow", [item("old", "slow")], delay=0.1)
    with pytest.raises(CompositeWriteError) as info:
        await CompositeMemory([Boom("down"), slow]).write([item("new", "c")], ctx=ctx)
    assert slow.finished and not slow.cancelled
    assert info.value.accepted == ["slow"]
    assert [i.content for i in slow.items] == ["old", "new"]  # nothing stored before is lost


async def test_refused_without_failure_is_not_an_error(ctx: Ctx) -> None:
    rw = ListMemory("rw")
    ignoring = ReadOnlyMemory(ListMemory("registry"), on_write="ignore")
    await CompositeMemory([rw, ignoring]).write([item("n", "c")], ctx=ctx)
    assert ignoring.refused_writes == 1 and len(rw.items) == 1


async def test_nested_read_only_composite_is_refused_not_accepted(ctx: Ctx) -> None:
    all_ro = CompositeMemory([ReadOnlyMemory(ListMemory("r1"), on_write="ignore")],
                             name="readonly-tier")
    chain = SequentialMemory([ReadOnlyMemory(ListMemory("cache"), on_write="ignore"),
                              ListMemory("vector")], name="chain")
    with pytest.raises(CompositeWriteError) as info:
        await CompositeMemory([all_ro, chain, ListMemory("rw"), Boom("down")]).write(
            [item("n", "c")], ctx=ctx)
    assert info.value.refused == ["readonly-tier", "chain"]
    assert info.value.accepted == ["rw"]


async def test_write_timeout_is_a_failure(ctx: Ctx) -> None:
    slow = Slow("slow", delay=5)
    with pytest.raises(CompositeWriteError) as info:
        await CompositeMemory([slow, ListMemory("fast")], timeout=0.05).write(
            [item("n", "c")], ctx=ctx)
    assert isinstance(info.value.failed["slow"], TimeoutError)
    assert info.value.accepted == ["fast"]
    assert slow.cancelled


async def test_write_duplicate_names_disambiguated(ctx: Ctx) -> None:
    with pytest.raises(CompositeWriteError) as info:
        await CompositeMemory([Boom("x"), ListMemory("x")]).write([item("n", "c")], ctx=ctx)
    assert info.value.accepted == ["x#1"] and set(info.value.failed) == {"x#0"}


async def test_write_rejects_non_items_before_touching_members(ctx: Ctx) -> None:
    rw = ListMemory("rw")
    with pytest.raises(TypeError, match=r"items\[1\]"):
        await CompositeMemory([rw]).write([item("ok", "c"), "not an item"], ctx=ctx)  # type: ignore[list-item]
    with pytest.raises(TypeError, match="items"):
        await CompositeMemory([rw]).write("abc", ctx=ctx)  # type: ignore[arg-type]
    assert rw.writes == []


async def test_write_cancellation_cancels_members(ctx: Ctx) -> None:
    slow = [Slow(f"s{i}", delay=5) for i in range(2)]
    task = asyncio.create_task(CompositeMemory(slow).write([item("n", "c")], ctx=ctx))
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert all(s.cancelled for s in slow)


# --- writes that fail, at random (issue 7) ----------------------------------------


class Flaky(ListMemory):
    """Fails (raises, or stalls past the timeout) on its first write only."""

    def __init__(self, name: str, mode: str) -> None:
        super().__init__(name)
        self.mode = mode
        self.attempts = 0

    async def write(self, items: Iterable[MemoryItem], *, ctx: Ctx) -> None:
        self.attempts += 1
        if self.attempts == 1:
            if self.mode == "fail":
                raise ConnectionError("transient")
            await asyncio.sleep(10)  # "slow": cancelled by the timeout before committing
        await super().write(items, ctx=ctx)


def _member(kind: str, i: int) -> Any:
    name = f"{kind}-{i}"
    if kind == "ok":
        return ListMemory(name)
    if kind in ("fail", "slow"):
        return Flaky(name, kind)
    return ReadOnlyMemory(ListMemory(name), on_write="ignore" if kind == "ignore" else "refuse")


def _held(member: Any) -> list[str]:
    inner = member.inner if isinstance(member, ReadOnlyMemory) else member
    return [i.content for i in inner.items]


@settings(max_examples=40, deadline=None)
@given(
    kinds=st.lists(st.sampled_from(["ok", "fail", "slow", "ignore", "refuse"]),
                   min_size=1, max_size=6),
    n_items=st.integers(min_value=1, max_value=4),
)
def test_random_write_faults_split_matches_what_members_hold(kinds: list[str],
                                                              n_items: int) -> None:
    async def scenario() -> None:
        ctx = Ctx(Scope("acme", "support"))
        members = [_member(kind, i) for i, kind in enumerate(kinds)]
        batch = [item(f"fact {j}", "caller") for j in range(n_items)]
        contents = [i.content for i in batch]
        comp = CompositeMemory(members, timeout=0.02)
        try:
            await comp.write(batch, ctx=ctx)
        except CompositeWriteError as err:
            accepted, refused, failed = err.accepted, err.refused, err.failed
        else:  # no error: every writable member committed, every read-only one refused
            assert not {"fail", "slow", "refuse"} & set(kinds)
            refused = [m.name for m in members if isinstance(m, ReadOnlyMemory)]
            accepted = [m.name for m in members if m.name not in refused]
            failed = {}
        by_name = {m.name: m for m in members}
        assert sorted([*accepted, *refused, *failed]) == sorted(by_name)
        for name in accepted:
            assert _held(by_name[name]) == contents  # committed, exactly once
        for name in [*refused, *failed]:
            assert _held(by_name[name]) == []  # reported as not committed: holds nothing
        assert set(refused) == {m.name for m in members if getattr(m, "on_write", "") == "ignore"}

        # Replay the failed members only: transient failures converge.
        retry = [by_name[name] for name in failed]
        if retry:
            try:
                await CompositeMemory(retry, timeout=1).write(batch, ctx=ctx)
            except CompositeWriteError as err:
                assert all(isinstance(e, MemoryWriteRefused) for e in err.failed.values())
        for m in members:
            writable = not isinstance(m, ReadOnlyMemory)
            assert _held(m) == (contents if writable else [])

    asyncio.run(scenario())
