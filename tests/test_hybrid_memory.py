"""HybridMemory: agentkit's one hybrid search, over real stores.

Records are distinct by id within a store (never merged by text), exactly ``k`` come
back unless fewer exist, in every mode; the fusion is ``rrf_rerank`` at the hybrid
constant and tie rule; ``where`` reaches both halves; the search records what
``query --explain`` prints.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from agentkit.kernel import Ctx, InvalidArgument, InvalidArgumentType, Scope, StoreError
from agentkit.state.memory import (
    HYBRID_DEPTH,
    HYBRID_RRF_CONSTANT,
    HYBRID_TIES,
    CompositeMemory,
    HybridMemory,
    LexicalMemory,
    VectorMemory,
    rrf_rerank,
)
from agentkit.vector import Chunk, HashingEmbedder, InMemoryVectorStore, SQLiteVectorStore

ACME = Ctx(Scope("acme", "support"))
GLOBEX = Ctx(Scope("globex", "support"))
TOPICS = ["refunds", "shipping", "invoices", "badges", "passwords", "vpn", "laptops"]
TWIN = "Reset a password from the login page."


def _notes(n: int) -> list[Chunk]:
    return [
        Chunk(
            f"n{i:03d}",
            f"note {i} on {TOPICS[i % 7]} and {TOPICS[(i * 3) % 7]}, case {i % 11}",
            {"team": "ops" if i % 2 else "it"},
        )
        for i in range(n)
    ]


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SQLiteVectorStore]:
    s = SQLiteVectorStore(tmp_path / "h.db", embedder=HashingEmbedder(dim=256))
    await s.upsert(_notes(120), scope=ACME.scope)
    yield s
    await s.close()


@pytest.mark.parametrize("mode", ["hybrid", "dense", "lexical"])
async def test_exactly_k_in_every_mode(store: SQLiteVectorStore, mode: Any) -> None:
    for k in (1, 3, HYBRID_DEPTH, HYBRID_DEPTH + 7):
        got = await HybridMemory(store, mode=mode).query("refunds vpn case 3", k=k, ctx=ACME)
        assert len(got) == len({i.id for i in got}) == k, (mode, k)
        assert all(i.source == "hybrid" for i in got)
    # Deeper than the read depth: the halves are read k deep, still k distinct back.
    shallow = HybridMemory(store, mode=mode, depth=4)
    assert len(await shallow.query("refunds vpn case 3", k=9, ctx=ACME)) == 9


@pytest.mark.parametrize("mode", ["hybrid", "dense"])
async def test_fewer_only_when_fewer_exist(tmp_path: Path, mode: Any) -> None:
    async with SQLiteVectorStore(tmp_path / "few.db", embedder=HashingEmbedder(dim=64)) as s:
        await s.upsert(_notes(4), scope=ACME.scope)
        got = await HybridMemory(s, mode=mode).query("refunds", k=10, ctx=ACME)
        assert sorted(i.id or "" for i in got) == ["n000", "n001", "n002", "n003"]


@pytest.mark.parametrize("mode", ["hybrid", "dense", "lexical"])
async def test_two_records_with_one_text_are_two_items(store: SQLiteVectorStore, mode: Any) -> None:
    await store.upsert([Chunk("twin-a", TWIN), Chunk("twin-b", TWIN)], scope=ACME.scope)
    got = await HybridMemory(store, mode=mode).query(TWIN, k=2, ctx=ACME)
    assert sorted(i.id or "" for i in got) == ["twin-a", "twin-b"]
    # What the composite's default dedupe does to the same pair: one item.
    composite = CompositeMemory(
        [VectorMemory(store, name="dense"), LexicalMemory(store, name="lexical")],
        reranker=rrf_rerank,
    )
    assert [i.content for i in await composite.query(TWIN, k=2, ctx=ACME)].count(TWIN) == 1


@pytest.mark.parametrize("weights", [None, {"dense": 0.3, "lexical": 0.7}])
async def test_fusion_is_rrf_at_the_hybrid_constant_and_tie_rule(
    store: SQLiteVectorStore, weights: dict[str, float] | None
) -> None:
    # Distinct texts, so the composite merges only a record's two copies: the oracle.
    reference = CompositeMemory(
        [VectorMemory(store, name="dense"), LexicalMemory(store, name="lexical")],
        reranker=functools.partial(
            rrf_rerank, weights=weights, constant=HYBRID_RRF_CONSTANT, ties=HYBRID_TIES
        ),
    )
    query = "shipping invoices case 5"
    want = (await reference.query(query, k=HYBRID_DEPTH, ctx=ACME))[:10]
    got = await HybridMemory(store, weights=weights).query(query, k=10, ctx=ACME)
    assert [i.id for i in got] == [i.id for i in want]
    assert [i.score for i in got] == pytest.approx([i.score for i in want], rel=1e-12)


async def test_the_search_records_what_explain_shows(store: SQLiteVectorStore) -> None:
    found = await HybridMemory(store).search("badges passwords case 2", k=5, ctx=ACME)
    assert [h.name for h in found.halves] == ["dense", "lexical"]
    assert found.constant == HYBRID_RRF_CONSTANT and found.seconds >= 0
    for half in found.halves:
        assert half.seconds >= 0 and half.items
        assert [i.source for i in half.items] == [half.name] * len(half.items)
        assert [c.id for c in half.chunks] == [i.id for i in half.items]
        scores = [i.score or 0.0 for i in half.items]
        assert scores == sorted(scores, reverse=True)  # each half's own scale and order
        for rank, item in enumerate(half.items, 1):
            assert found.ranks[item.id or ""][half.name] == rank
    assert len(found.halves[0].items) == HYBRID_DEPTH  # read deep for fusion
    assert [c.id for c in found.chunks] == [i.id for i in found.items]
    for item in found.items:
        by = found.found_by(item.id)
        assert by and set(by) == set(found.ranks[item.id or ""])
        expected = sum(1 / (HYBRID_RRF_CONSTANT + r) for r in found.ranks[item.id or ""].values())
        assert item.score == pytest.approx(expected)
    assert found.found_by("no-such-id") == ()
    one = await HybridMemory(store, mode="lexical").search("badges", k=3, ctx=ACME)
    assert [h.name for h in one.halves] == ["lexical"] and len(one.halves[0].items) == 3


async def test_where_reaches_both_halves_and_scopes_stay_apart(store: SQLiteVectorStore) -> None:
    await store.upsert([Chunk("g1", "refunds vpn case 3 at globex")], scope=GLOBEX.scope)
    found = await HybridMemory(store).search(
        "refunds vpn case 3", k=8, ctx=ACME, where={"team": "ops"}
    )
    assert len(found.items) == 8
    for half in found.halves:
        assert half.items and all(i.metadata["team"] == "ops" for i in half.items)
    assert all(i.metadata["team"] == "ops" for i in found.items)
    assert "g1" not in found.ranks
    [only] = await HybridMemory(store).query("refunds vpn case 3", k=5, ctx=GLOBEX)
    assert only.id == "g1"


async def test_keep_reads_deeper_until_k_pass(store: SQLiteVectorStore) -> None:
    def rare(chunk: Chunk) -> bool:
        return int(chunk.id[1:]) % 10 == 0

    found = await HybridMemory(store, depth=5).search("note", k=6, ctx=ACME, keep=rare)
    assert len(found.items) == 6 and all(rare(c) for c in found.chunks)
    for half in found.halves:
        assert all(rare(c) for c in half.chunks)


async def test_a_given_query_vector_searches_the_dense_half_by_it(
    store: SQLiteVectorStore,
) -> None:
    query = "passwords laptops case 9"
    [vector] = await HashingEmbedder(dim=256).embed([query])
    by_text = await HybridMemory(store).search(query, k=7, ctx=ACME)
    found = await HybridMemory(store).search(query, k=7, ctx=ACME, vector=vector)
    # The store embeds the text with the same model: the same vector, the same answer.
    assert [i.id for i in found.items] == [i.id for i in by_text.items]
    assert [i.score for i in found.halves[0].items] == pytest.approx(
        [i.score for i in by_text.halves[0].items]
    )
    with pytest.raises(InvalidArgumentType, match="search_by_vector"):
        await HybridMemory(_NoVectorSearch(store)).search(query, k=1, ctx=ACME, vector=vector)


async def test_recalled_items_written_back_update_their_rows(store: SQLiteVectorStore) -> None:
    memory = HybridMemory(store)
    before = await store.count(scope=ACME.scope)
    [top] = await memory.query("badges case 3", k=1, ctx=ACME)
    await memory.write([dataclasses.replace(top, content="badges: see the front desk")], ctx=ACME)
    assert await store.count(scope=ACME.scope) == before
    [row] = await store.get([top.id or ""], scope=ACME.scope)
    assert row.text == "badges: see the front desk"
    assert await memory.delete([top.id or ""], ctx=ACME) == 1
    assert await memory.forget({"team": "it"}, ctx=ACME) == 60
    assert await store.count(scope=ACME.scope) == before - 61


async def test_a_failing_half_fails_the_search_with_its_own_error(
    store: SQLiteVectorStore,
) -> None:
    with pytest.raises(StoreError, match="word index down"):
        await HybridMemory(_BrokenLexical(store)).query("refunds", k=3, ctx=ACME)
    # The dense half alone still answers.
    dense = HybridMemory(_BrokenLexical(store), mode="dense")
    assert len(await dense.query("refunds", k=3, ctx=ACME)) == 3


async def test_bad_arguments_are_refused_where_they_are_given(
    store: SQLiteVectorStore,
) -> None:
    with pytest.raises(InvalidArgument, match="mode"):
        HybridMemory(store, mode="sparse")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgument, match="depth"):
        HybridMemory(store, depth=0)
    with pytest.raises(InvalidArgumentType, match="depth"):
        HybridMemory(store, depth=True)
    with pytest.raises(InvalidArgument, match="constant"):
        HybridMemory(store, constant=-1)
    with pytest.raises(InvalidArgument, match="weights"):
        HybridMemory(store, weights={"dense": float("nan")})
    with pytest.raises(InvalidArgumentType, match="ties"):
        HybridMemory(store, ties=3)  # type: ignore[arg-type]
    dense_only = InMemoryVectorStore(HashingEmbedder(dim=32))
    for mode in ("hybrid", "lexical"):
        with pytest.raises(InvalidArgumentType, match="lexical_search"):
            HybridMemory(dense_only, mode=mode)  # type: ignore[arg-type]
    assert HybridMemory(dense_only, mode="dense").mode == "dense"
    memory = HybridMemory(store)
    with pytest.raises(InvalidArgument, match="k"):
        await memory.query("q", k=0, ctx=ACME)
    with pytest.raises(InvalidArgumentType, match="keep"):
        await memory.search("q", k=1, ctx=ACME, keep="yes")  # type: ignore[arg-type]


class _NoVectorSearch:
    """The store without search_by_vector (a port that cannot search by a vector)."""

    def __init__(self, inner: SQLiteVectorStore) -> None:
        self.search = inner.search
        self.lexical_search = inner.lexical_search
        self.upsert = inner.upsert


class _BrokenLexical:
    """Failure injection: the word index errors, the vectors work."""

    def __init__(self, inner: SQLiteVectorStore) -> None:
        self.search = inner.search
        self.upsert = inner.upsert

    async def lexical_search(self, *args: Any, **kwargs: Any) -> list[Any]:
        raise StoreError("word index down")
