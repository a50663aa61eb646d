"""LexicalMemory: the word half of hybrid retrieval, and how it pairs with VectorMemory."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentkit.kernel import Ctx, Scope
from agentkit.kernel.errors import (
    CompositeWriteError,
    InvalidArgument,
    InvalidArgumentType,
)
from agentkit.state.memory import (
    CompositeMemory,
    LexicalMemory,
    MemoryItem,
    MemorySource,
    VectorMemory,
    rrf_rerank,
)
from agentkit.vector import HashingEmbedder, SQLiteVectorStore

ACME = Ctx(Scope("acme", "support"))
OTHER = Ctx(Scope("other", "support"))

NOTES = [
    ("refund", "Refunds are paid back to the original card within five working days."),
    ("vpn", "Connect to the VPN before opening the internal wiki."),
    ("badge", "Lost badges are replaced at the front desk on the ground floor."),
    ("leave", "Annual leave requests go to your manager two weeks ahead."),
]


@pytest.fixture
async def store(tmp_path: Path):  # type: ignore[no-untyped-def]
    async with SQLiteVectorStore(tmp_path / "m.db", embedder=HashingEmbedder()) as s:
        dense = VectorMemory(s, name="dense")
        await dense.write(
            [MemoryItem(text, "dense", metadata={"id": cid, "team": "ops"}) for cid, text in NOTES],
            ctx=ACME,
        )
        yield s


async def test_is_a_read_only_memory_source(store: SQLiteVectorStore) -> None:
    lexical = LexicalMemory(store)
    assert isinstance(lexical, MemorySource)
    assert lexical.name == "lexical"
    assert lexical.accepts_writes is False


async def test_ranks_by_words_within_the_scope(store: SQLiteVectorStore) -> None:
    lexical = LexicalMemory(store, name="words")
    items = await lexical.query("replace a lost badge", k=2, ctx=ACME)
    assert items[0].id == "badge"
    assert items[0].source == "words"
    assert items[0].metadata["team"] == "ops"
    assert items[0].score is not None and items[0].score > 0
    scores = [i.score for i in items]
    assert scores == sorted(scores, reverse=True)  # type: ignore[type-var]
    assert await lexical.query("replace a lost badge", k=2, ctx=OTHER) == []


async def test_default_where_merges_with_call_time_where(store: SQLiteVectorStore) -> None:
    lexical = LexicalMemory(store, where={"team": "hr"})
    assert await lexical.query("badge", k=3, ctx=ACME) == []
    items = await lexical.query("badge", k=3, ctx=ACME, where={"team": "ops"})
    assert [i.id for i in items] == ["badge"]


async def test_checks_arguments_before_touching_the_store() -> None:
    class Exploding:
        async def lexical_search(self, *a: object, **kw: object) -> list[object]:
            raise AssertionError("must not be reached")

    lexical = LexicalMemory(Exploding())
    with pytest.raises(InvalidArgument):
        await lexical.query("x", k=0, ctx=ACME)
    with pytest.raises(InvalidArgumentType):
        await lexical.query(3, k=1, ctx=ACME)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentType):
        await lexical.query("x", k=1, ctx=ACME, where="team")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentType):
        await lexical.query("x", k=1, ctx=None)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentType, match="lexical_search"):
        LexicalMemory(object())


async def test_hybrid_merges_the_two_halves_by_chunk_id(store: SQLiteVectorStore) -> None:
    hybrid = CompositeMemory(
        [VectorMemory(store, name="dense"), LexicalMemory(store, name="lexical")],
        reranker=rrf_rerank,
    )
    items = await hybrid.query("refunds to the card", k=4, ctx=ACME)
    ids = [i.id for i in items]
    assert len(ids) == len(set(ids))  # one item per chunk, never two copies
    top = items[0]
    assert top.id == "refund"
    assert top.metadata["dedupe_sources"] == ("dense", "lexical")
    assert top.metadata["dedupe_count"] == 2
    assert top.score == pytest.approx(2 / 61)  # rank 1 in both halves


async def test_writes_through_the_composite_land_once_via_the_dense_half(
    store: SQLiteVectorStore,
) -> None:
    hybrid = CompositeMemory(
        [VectorMemory(store, name="dense"), LexicalMemory(store, name="lexical")],
        reranker=rrf_rerank,
    )
    await hybrid.write(
        [MemoryItem("Printer toner is in the supply cupboard.", "user", metadata={"id": "toner"})],
        ctx=ACME,
    )
    assert await store.count(scope=ACME.scope) == len(NOTES) + 1
    found = await LexicalMemory(store).query("toner cupboard", k=1, ctx=ACME)
    assert found[0].id == "toner"


async def test_composite_reports_the_lexical_half_as_refused(
    store: SQLiteVectorStore,
) -> None:
    class Failing:
        name = "broken"

        async def query(self, *a: object, **kw: object) -> list[MemoryItem]:
            return []

        async def write(self, *a: object, **kw: object) -> None:
            raise RuntimeError("down")

    hybrid = CompositeMemory([LexicalMemory(store), Failing()])
    with pytest.raises(CompositeWriteError) as info:
        await hybrid.write([MemoryItem("x", "user")], ctx=ACME)
    assert info.value.refused == ["lexical"]
    assert info.value.accepted == []
