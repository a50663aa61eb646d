"""RRF ties: which half's order settles them, and that agentkit's hybrid uses the lexical one.

Rank sums tie often (mirrored ranks, or two one-source items at the same rank), so the
tie-breaker decides real places in the top ten. ``ties`` names the source whose own
order settles them; without it the pool order (first-listed member first) does.
"""

from __future__ import annotations

import functools
from typing import Any

import pytest

from agentkit.kernel import Ctx, InvalidArgumentType, Scope
from agentkit.state.memory import (
    HYBRID_RRF_CONSTANT,
    HYBRID_TIES,
    CompositeMemory,
    HybridMemory,
    MemoryItem,
    rrf_rerank,
)
from agentkit.vector import Chunk

CTX = Ctx(Scope("acme", "support"))


def item(cid: str) -> MemoryItem:
    return MemoryItem(f"text of {cid}", "x", None, id=cid)


class Fixed:
    def __init__(self, name: str, ids: list[str]) -> None:
        self.name, self.ids = name, ids

    async def query(self, query: str, *, k: int, ctx: Ctx, where: Any = None
                    ) -> list[MemoryItem]:
        return [MemoryItem(f"text of {c}", self.name, 1.0, id=c) for c in self.ids[:k]]

    async def write(self, items: Any, *, ctx: Ctx) -> None:
        return None


def hybrid(dense: list[str], lexical: list[str], **kw: Any) -> CompositeMemory:
    return CompositeMemory(
        [Fixed("dense", dense), Fixed("lexical", lexical)],
        reranker=functools.partial(rrf_rerank, constant=20, **kw),
    )


async def test_mirrored_ranks_tie_and_the_named_source_settles_them() -> None:
    # a: dense 1st, lexical 3rd; b: dense 3rd, lexical 1st -> equal fused scores.
    dense, lexical = ["a", "x", "b"], ["b", "y", "a"]
    plain = await hybrid(dense, lexical).query("q", k=4, ctx=CTX)
    assert [i.id for i in plain][:2] == ["a", "b"]  # pool order: the dense half's first
    assert plain[0].score == plain[1].score
    by_words = await hybrid(dense, lexical, ties="lexical").query("q", k=4, ctx=CTX)
    assert [i.id for i in by_words][:2] == ["b", "a"]
    assert by_words[0].score == plain[0].score  # only the order changed
    by_meaning = await hybrid(dense, lexical, ties="dense").query("q", k=4, ctx=CTX)
    assert [i.id for i in by_meaning][:2] == ["a", "b"]


async def test_one_source_items_at_the_same_rank_go_to_the_named_source() -> None:
    got = await hybrid(["d1", "d2"], ["l1", "l2"], ties="lexical").query("q", k=4, ctx=CTX)
    assert [i.id for i in got] == ["l1", "d1", "l2", "d2"]
    got = await hybrid(["d1", "d2"], ["l1", "l2"]).query("q", k=4, ctx=CTX)
    assert [i.id for i in got] == ["d1", "l1", "d2", "l2"]


async def test_ties_never_reorder_unequal_scores() -> None:
    # "both" is found by both halves, so it leads whatever breaks ties.
    got = await hybrid(["d1", "both"], ["l1", "both"], ties="lexical").query("q", k=3, ctx=CTX)
    assert [i.id for i in got] == ["both", "l1", "d1"]


async def test_ties_must_name_a_source() -> None:
    with pytest.raises(InvalidArgumentType, match="ties"):
        await rrf_rerank("q", [item("a")], k=1, ties=3)  # type: ignore[arg-type]


async def test_agentkit_hybrid_settles_ties_by_the_lexical_half() -> None:
    assert HYBRID_TIES == "lexical"

    class Store:
        """Two fixed rankings with mirrored ranks: a is 1st/3rd, b is 3rd/1st."""

        async def search(self, *a: Any, **kw: Any) -> list[Any]:
            return [(0.9, Chunk(c, f"text of {c}")) for c in ("a", "x", "b")]

        async def lexical_search(self, *a: Any, **kw: Any) -> list[Any]:
            return [(9.0, Chunk(c, f"text of {c}")) for c in ("b", "y", "a")]

    memory = HybridMemory(Store())
    assert (memory.ties, memory.constant) == (HYBRID_TIES, HYBRID_RRF_CONSTANT)
    got = await memory.query("q", k=4, ctx=CTX)
    assert [i.id for i in got][:2] == ["b", "a"]
    assert got[0].score == got[1].score
    pool_order = await HybridMemory(Store(), ties=None).query("q", k=4, ctx=CTX)
    assert [i.id for i in pool_order][:2] == ["a", "b"]
