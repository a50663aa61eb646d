"""score_sort_rerank and rrf_rerank: what their scores mean, and why RRF exists."""

from __future__ import annotations

import functools
from typing import Any

import pytest

from agentkit.kernel import Ctx, InvalidArgument, InvalidArgumentType
from agentkit.state.memory import (
    CompositeMemory,
    MemoryItem,
    Reranker,
    rrf_rerank,
    score_sort_rerank,
)


def it(content: str, source: str = "s", score: float | None = None, **meta: Any) -> MemoryItem:
    return MemoryItem(content, source, score, meta)


class Fixed:
    def __init__(self, name: str, items: list[MemoryItem]) -> None:
        self.name, self.items = name, items

    async def query(self, query: str, *, k: int, ctx: Ctx, where: Any = None
                    ) -> list[MemoryItem]:
        return self.items[:k]

    async def write(self, items: Any, *, ctx: Ctx) -> None:
        return None


# --- score_sort_rerank --------------------------------------------------------------


async def test_score_sort_desc_none_last_stable_and_cut() -> None:
    pool = [it("n1"), it("a", score=0.5), it("b", score=0.9), it("c", score=0.5), it("n2")]
    got = await score_sort_rerank("q", pool, k=10)
    assert [i.content for i in got] == ["b", "a", "c", "n1", "n2"]
    got = await score_sort_rerank("q", pool, k=2)
    assert [i.content for i in got] == ["b", "a"]


async def test_score_sort_keeps_unranked_items_in_the_top_k() -> None:
    got = await score_sort_rerank("q", [it("tool hit"), it("x", score=-3.0)], k=2)
    assert [i.content for i in got] == ["x", "tool hit"]


async def test_score_sort_returns_the_same_objects_and_leaves_the_input() -> None:
    pool = [it("a", score=0.1), it("b", score=0.2)]
    snapshot = list(pool)
    got = await score_sort_rerank("q", pool, k=2)
    assert got[0] is pool[1] and got[1] is pool[0]
    assert pool == snapshot


@pytest.mark.parametrize("reranker", [score_sort_rerank, rrf_rerank])
@pytest.mark.parametrize(("k", "exc"), [(0, ValueError), (-1, ValueError), ("2", TypeError),
                                        (None, TypeError), (1.0, TypeError)])
async def test_both_validate_k(reranker: Any, k: Any, exc: type[Exception]) -> None:
    with pytest.raises(exc, match="k"):
        await reranker("q", [it("a", score=1.0)], k=k)


async def test_empty_pool() -> None:
    assert await score_sort_rerank("q", [], k=3) == []
    assert await rrf_rerank("q", [], k=3) == []


def test_a_plain_async_function_is_a_reranker() -> None:
    reranker: Reranker = score_sort_rerank
    assert callable(reranker)


# --- the scale problem and its remedy ----------------------------------------------


async def test_raw_scores_let_the_largest_scale_win_and_rrf_does_not() -> None:
    bm25 = [it(f"bm25-{i}", "lexical", score=20.0 - i) for i in range(3)]
    cosine = [it(f"cos-{i}", "vector", score=0.9 - i / 10) for i in range(3)]
    pool = bm25 + cosine
    raw = await score_sort_rerank("q", pool, k=3)
    assert {i.source for i in raw} == {"lexical"}  # BM25's scale takes every slot
    fused = await rrf_rerank("q", pool, k=4)
    assert [i.content for i in fused] == ["bm25-0", "cos-0", "bm25-1", "cos-1"]


def test_docstrings_say_what_the_score_means_and_warn_about_scales() -> None:
    for fn in (score_sort_rerank, rrf_rerank):
        doc = (fn.__doc__ or "").lower()
        assert "score" in doc and "scale" in doc


# --- rrf_rerank -------------------------------------------------------------------


async def test_rrf_score_formula_and_new_objects() -> None:
    a0, a1 = it("a0", "a", 9.0), it("a1", "a", 8.0)
    b0 = it("b0", "b", 0.1)
    got = await rrf_rerank("q", [a0, a1, b0], k=3)
    scores = {i.content: i.score for i in got}
    assert scores["a0"] == pytest.approx(1 / 61)
    assert scores["a1"] == pytest.approx(1 / 62)
    assert scores["b0"] == pytest.approx(1 / 61)
    assert [i.content for i in got] == ["a0", "b0", "a1"]  # ties keep pool order
    assert a0.score == 9.0 and all(g is not o for g, o in zip(got, [a0, b0, a1], strict=True))


async def test_rrf_weights_bound_with_partial() -> None:
    pool = [it("lex", "lexical", 30.0), it("vec", "vector", 0.8)]
    weighted = functools.partial(rrf_rerank, weights={"vector": 2.0})
    got = await weighted("q", pool, k=2)
    assert [i.content for i in got] == ["vec", "lex"]
    assert got[0].score == pytest.approx(2 / 61)
    assert got[1].score == pytest.approx(1 / 61)  # unlisted source weighs 1.0
    reranker: Reranker = weighted
    assert callable(reranker)


@pytest.mark.parametrize(
    ("weights", "exc"),
    [([("a", 1.0)], TypeError), ({"a": "heavy"}, TypeError), ({"a": -1.0}, ValueError),
     ({"a": float("inf")}, ValueError), ({"a": True}, TypeError)],
)
async def test_rrf_bad_weights(weights: Any, exc: type[Exception]) -> None:
    with pytest.raises(exc, match="weights"):
        await rrf_rerank("q", [it("x", "a")], k=1, weights=weights)


async def test_rrf_credits_every_dedupe_source_without_composite_ranks() -> None:
    # A survivor of an earlier merge, reranked on its own.
    [survivor] = await CompositeMemory(
        [Fixed("a", [it("shared", "a", 0.5)]), Fixed("b", [it("shared", "b", 0.2)])]
    ).query("q", k=1, ctx=Ctx())
    assert survivor.metadata["dedupe_sources"] == ("a", "b")
    pool = [it("a-top", "a", 0.9), survivor, it("b-x", "b", 0.1)]
    got = await rrf_rerank("q", pool, k=3)
    assert got[0].content == "shared"
    assert got[0].score == pytest.approx(1 / 62 + 1 / 61)  # 2nd for a, 1st for b
    assert got[0].metadata["dedupe_count"] == 2


async def test_rrf_ignores_stamps_no_merge_of_this_query_wrote() -> None:
    # The same keys read back from a store (or written by hand) are not a survivor's.
    stale = it("shared", "a", 0.5, dedupe_sources=("a", "b"), dedupe_count=2)
    got = await rrf_rerank("q", [it("a-top", "a", 0.9), stale, it("b-x", "b", 0.1)], k=3)
    assert {i.content: i.score for i in got}["shared"] == pytest.approx(1 / 62)


async def test_rrf_uses_each_sources_own_ranks_when_run_by_a_composite() -> None:
    # Pool order after dedupe is a0, shared, a2, b-low; but in b's own list "shared"
    # was 3rd and b-low 1st. The composite's published ranks must win over pool order.
    a = Fixed("a", [it("a0", "a"), it("shared", "a"), it("a2", "a")])
    b = Fixed("b", [it("b-low", "b"), it("b-mid", "b"), it("shared", "b")])
    got = await CompositeMemory([a, b], reranker=rrf_rerank).query("q", k=10, ctx=Ctx())
    scores = {i.content: i.score for i in got}
    assert scores["shared"] == pytest.approx(1 / 62 + 1 / 63)
    assert scores["b-low"] == pytest.approx(1 / 61)
    assert scores["a2"] == pytest.approx(1 / 63)
    assert got[0].content == "shared"


async def test_rrf_inside_nested_composites_credits_inner_sources() -> None:
    inner = CompositeMemory([Fixed("a", [it("x", "a"), it("fact", "a")]),
                             Fixed("b", [it("fact", "b")])], name="inner")
    outer = CompositeMemory([inner, Fixed("c", [it("fact", "c")])],
                            reranker=functools.partial(rrf_rerank, weights={"c": 0.5}))
    got = await outer.query("q", k=2, ctx=Ctx())
    assert got[0].content == "fact"
    assert got[0].metadata["dedupe_sources"] == ("a", "b", "c")
    assert got[0].metadata["dedupe_count"] == 3
    # Inner answered [x, fact]: the survivor ranks 2nd for both a and b there, and
    # c ranked its copy 1st (at half weight).
    assert got[0].score == pytest.approx(1 / 62 + 1 / 62 + 0.5 / 61)
    assert got[1].content == "x" and got[1].score == pytest.approx(1 / 61)


async def test_rrf_constant_sets_how_much_the_head_of_each_list_counts() -> None:
    pool = [it("a1", "a"), it("a2", "a"), it("b1", "b")]
    default = await rrf_rerank("q", pool, k=3)
    assert [i.score for i in default] == pytest.approx([1 / 61, 1 / 61, 1 / 62])
    sharp = await functools.partial(rrf_rerank, constant=0)("q", pool, k=3)
    assert [i.score for i in sharp] == pytest.approx([1.0, 1.0, 0.5])


@pytest.mark.parametrize("constant", [-1, float("nan"), float("inf"), "60", True])
async def test_rrf_constant_must_be_a_finite_non_negative_number(constant: object) -> None:
    with pytest.raises((InvalidArgument, InvalidArgumentType), match="constant"):
        await rrf_rerank("q", [it("x", "a")], k=1, constant=constant)  # type: ignore[arg-type]


async def test_a_memory_item_subclass_keeps_its_type_through_merge_and_rrf() -> None:
    # The merge and RRF copy items without re-validating; a subclass (which may add
    # fields or checks) must still come back as itself, through the validated path.
    import dataclasses

    @dataclasses.dataclass(slots=True, frozen=True)
    class Cited(MemoryItem):
        page: int = dataclasses.field(default=0, kw_only=True)

    a = Fixed("a", [Cited("same text", "a", 0.4, page=3), it("only a", "a", 0.3)])
    b = Fixed("b", [Cited("same text", "b", 0.9, page=7)])
    for reranker in (None, rrf_rerank):
        got = await CompositeMemory([a, b], reranker=reranker).query("", k=5, ctx=Ctx())
        survivor = next(g for g in got if g.content == "same text")
        assert type(survivor) is Cited and survivor.page == 7
        assert survivor.metadata["dedupe_count"] == 2
        if reranker is rrf_rerank:
            assert survivor.score == pytest.approx(1 / 61 + 1 / 61)
