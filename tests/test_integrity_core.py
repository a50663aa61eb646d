"""Integrity of the memory core under bad members, curious callers and write-back.

Issue 12, items 9 to 13: a member answering garbage is a failing member; cached answers
are immune to what callers do with earlier ones; dedupe stamps describe one merge and
are never persisted; writing back what the CLI's hybrid recalled updates the row in
place; a read never creates a tenant's directory.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import pickle
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from agentkit.kernel import CompositeQueryError, Ctx, InvalidArgumentType, Scope
from agentkit.state.memory import HYBRID_RRF_CONSTANT as RRF_CONSTANT
from agentkit.state.memory import (
    CachedMemory,
    CompositeMemory,
    HybridMemory,
    LexicalMemory,
    MemoryItem,
    PerScopeMemory,
    SequentialMemory,
    VectorMemory,
    files_per_scope,
    rrf_rerank,
)
from agentkit.vector import Chunk, HashingEmbedder, InMemoryVectorStore, SQLiteVectorStore

ACME = Ctx(Scope("acme", "support"))

NOTES = [
    ("refund", "Refunds are paid back to the original card within five working days."),
    ("vpn", "Connect to the VPN before opening the internal wiki."),
    ("badge", "Lost badges are replaced at the front desk on the ground floor."),
    ("leave", "Annual leave requests go to your manager two weeks ahead."),
]


class Fixed:
    """A member that answers whatever it was given, as-is."""

    def __init__(self, name: str, answer: Any) -> None:
        self.name = name
        self.answer = answer
        self.calls = 0

    async def query(
        self, query: str, *, k: int, ctx: Ctx, where: dict[str, Any] | None = None
    ) -> Any:
        self.calls += 1
        return self.answer

    async def write(self, items: Iterable[MemoryItem], *, ctx: Ctx) -> None:
        return None


def good(name: str = "good") -> Fixed:
    return Fixed(name, [MemoryItem("a real fact", name, 0.5)])


# --- 9: a member answering garbage is a failing member ----------------------------

GARBAGE: list[tuple[str, Any]] = [
    ("list of str", ["one", "two"]),
    ("list of dict", [{"content": "x", "score": 1.0}]),
    ("list of None", [None, None]),
    ("bare str", "an answer"),
    ("mix", [MemoryItem("fine", "bad"), "not an item"]),
    ("None", None),
    ("int", 3),
    ("dict", {"content": "x"}),
]
GARBAGE_IDS = [name for name, _ in GARBAGE]


@pytest.mark.parametrize("answer", [a for _, a in GARBAGE], ids=GARBAGE_IDS)
async def test_composite_skips_a_member_answering_garbage(answer: Any) -> None:
    ctx = Ctx(Scope("acme", "support"))
    out = await CompositeMemory([good(), Fixed("bad", answer)], on_error="skip").query(
        "q", k=5, ctx=ctx
    )
    assert [(i.content, i.source) for i in out] == [("a real fact", "good")]
    failures = ctx.timeline.of("memory.source_failed")
    assert [o.data["source"] for o in failures] == ["bad"]
    assert failures[0].data["error"] == "InvalidArgumentType"


@pytest.mark.parametrize("answer", [a for _, a in GARBAGE], ids=GARBAGE_IDS)
async def test_composite_reports_a_garbage_member_under_its_name(answer: Any) -> None:
    with pytest.raises(CompositeQueryError) as info:
        await CompositeMemory([good(), Fixed("bad", answer)]).query("q", k=5, ctx=ACME)
    assert set(info.value.failed) == {"bad"}
    error = info.value.failed["bad"]
    assert isinstance(error, InvalidArgumentType)
    assert "'bad'" in str(error)
    assert [i.content for i in info.value.succeeded["good"]] == ["a real fact"]


async def test_composite_of_only_garbage_raises_even_under_skip() -> None:
    with pytest.raises(CompositeQueryError) as info:
        await CompositeMemory([Fixed("bad", ["x"])], on_error="skip").query("q", k=5, ctx=ACME)
    assert set(info.value.failed) == {"bad"}


async def test_garbage_from_same_named_members_is_reported_per_position() -> None:
    with pytest.raises(CompositeQueryError) as info:
        await CompositeMemory([Fixed("m", [None]), good("m")]).query("q", k=5, ctx=ACME)
    assert set(info.value.failed) == {"m#0"}


@pytest.mark.parametrize("answer", [a for _, a in GARBAGE], ids=GARBAGE_IDS)
async def test_sequential_never_hands_garbage_to_the_caller(answer: Any) -> None:
    with pytest.raises(CompositeQueryError) as info:
        await SequentialMemory([Fixed("cache", answer), good("vector")]).query(
            "q", k=2, ctx=ACME
        )
    assert set(info.value.failed) == {"cache"}
    assert isinstance(info.value.failed["cache"], InvalidArgumentType)
    ctx = Ctx(Scope("acme", "support"))
    out = await SequentialMemory(
        [Fixed("cache", answer), good("vector")], on_error="skip"
    ).query("q", k=2, ctx=ctx)
    assert all(isinstance(i, MemoryItem) for i in out)
    assert [i.source for i in out] == ["vector"]
    assert [o.data["source"] for o in ctx.timeline.of("memory.source_failed")] == ["cache"]


async def test_well_formed_answers_still_pass_untouched() -> None:
    items = [MemoryItem("x", "a", 0.3), MemoryItem("y", "a", 0.2)]
    out = await CompositeMemory([Fixed("a", tuple(items))], reranker=None).query(
        "q", k=5, ctx=ACME
    )
    assert out == items and all(o is i for o, i in zip(out, items, strict=True))


async def test_cache_does_not_store_garbage() -> None:
    inner = Fixed("bad", ["x"])
    cached = CachedMemory(inner)
    for _ in range(2):
        with pytest.raises(InvalidArgumentType, match="'bad'"):
            await cached.query("q", k=5, ctx=ACME)
    assert inner.calls == 2 and len(cached) == 0


# --- 10: cached answers are immune to what callers do with earlier ones -----------


def test_memory_item_fields_cannot_be_reassigned() -> None:
    item = MemoryItem("c", "s", 0.5, {"a": 1}, id="x")
    for field, value in [
        ("content", "changed"),
        ("source", "other"),
        ("score", 9.0),
        ("metadata", {"a": 2}),
        ("id", "y"),
    ]:
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(item, field, value)
    assert (item.content, item.source, item.score, dict(item.metadata), item.id) == (
        "c", "s", 0.5, {"a": 1}, "x"
    )
    # The documented way to annotate still works, and still validates.
    assert dataclasses.replace(item, score=1).score == 1.0
    with pytest.raises(InvalidArgumentType):
        dataclasses.replace(item, content=3)


def test_frozen_item_copies_and_pickles() -> None:
    item = MemoryItem("c", "s", 0.5, {"a": [1]}, id="x")
    for twin in (copy.copy(item), copy.deepcopy(item), pickle.loads(pickle.dumps(item))):
        assert twin == item
        assert isinstance(twin.metadata, dict)
        with pytest.raises(TypeError):
            twin.metadata["a"] = 2  # type: ignore[index]


async def test_cached_answer_survives_a_caller_editing_the_previous_one() -> None:
    inner = Fixed("kb", [MemoryItem("fact", "kb", 0.9, {"tags": ["a"], "n": 1}, id="1")])
    cached = CachedMemory(inner)
    first = await cached.query("q", k=5, ctx=ACME)
    with pytest.raises(dataclasses.FrozenInstanceError):
        first[0].content = "vandalised"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        first[0].score = 0.0  # type: ignore[misc]
    first[0].metadata["tags"].append("vandalised")  # a nested value is the caller's own
    first.clear()
    second = await cached.query("q", k=5, ctx=ACME)
    assert inner.calls == 1
    assert [(i.content, i.score, dict(i.metadata)) for i in second] == [
        ("fact", 0.9, {"tags": ["a"], "n": 1})
    ]
    second[0].metadata["tags"].append("again")
    third = await cached.query("q", k=5, ctx=ACME)
    assert third[0].metadata["tags"] == ["a"]


async def test_cache_is_immune_to_the_source_editing_what_it_returned() -> None:
    tags = ["a"]
    inner = Fixed("kb", [MemoryItem("fact", "kb", 0.9, {"tags": tags})])
    cached = CachedMemory(inner)
    await cached.query("q", k=5, ctx=ACME)
    tags.append("later")  # the item shares this list with its backend
    again = await cached.query("q", k=5, ctx=ACME)
    assert again[0].metadata["tags"] == ["a"] and inner.calls == 1


async def test_cache_shares_items_whose_metadata_cannot_change() -> None:
    item = MemoryItem("fact", "kb", 0.9, {"path": "/a.md", "page": 3, "span": (1, 2)})
    cached = CachedMemory(Fixed("kb", [item]))
    first = await cached.query("q", k=5, ctx=ACME)
    second = await cached.query("q", k=5, ctx=ACME)
    assert first[0] is item and second[0] is item


# --- 11: dedupe stamps describe one merge and are never persisted ------------------


@pytest.fixture(params=["sqlite", "in-memory"])
async def store(request: pytest.FixtureRequest, tmp_path: Path):  # type: ignore[no-untyped-def]
    if request.param == "sqlite":
        async with SQLiteVectorStore(tmp_path / "m.db", embedder=HashingEmbedder()) as s:
            await _fill(s)
            yield s
    else:
        s = InMemoryVectorStore(HashingEmbedder())
        await _fill(s)
        yield s


async def _fill(s: Any) -> None:
    await VectorMemory(s, name="dense").write(
        [MemoryItem(text, "user", metadata={"id": cid, "team": "ops"}) for cid, text in NOTES],
        ctx=ACME,
    )


def halves(store: Any) -> list[Any]:
    """Two sources over one store sharing its chunk ids: the CLI's pair where the
    store has a word index, two dense readers where it has none."""
    dense = VectorMemory(store, name="dense")
    if callable(getattr(store, "lexical_search", None)):
        return [dense, LexicalMemory(store, name="lexical")]
    return [dense, VectorMemory(store, name="lexical")]


def hybrid(store: Any) -> CompositeMemory:
    return CompositeMemory(halves(store), reranker=rrf_rerank)


async def rows(store: Any) -> dict[str, Chunk]:
    hits = await store.search("anything", k=100, scope=ACME.scope)
    return {chunk.id: chunk for _, chunk in hits}


async def test_a_written_back_survivor_stores_no_stamps(store: Any) -> None:
    memory = hybrid(store)
    [top] = await memory.query("refunds to the original card", k=1, ctx=ACME)
    assert top.metadata["dedupe_count"] == 2  # both halves found it
    await memory.write([top], ctx=ACME)
    await VectorMemory(store, name="dense").write([top], ctx=ACME)
    stored = await rows(store)
    assert len(stored) == len(NOTES)
    assert all("dedupe_sources" not in c.metadata and "dedupe_count" not in c.metadata
               for c in stored.values())
    assert stored["refund"].metadata == {"team": "ops"}
    [again] = await memory.query("refunds to the original card", k=1, ctx=ACME)
    assert again.metadata["dedupe_count"] == 2
    assert sorted(again.metadata["dedupe_sources"]) == ["dense", "lexical"]


async def test_stamps_left_in_a_store_are_not_trusted_by_a_merge(store: Any) -> None:
    # A row written by an older version, or by anything that is not agentkit.
    stale = {"dedupe_sources": ("dense", "lexical", "journal"), "dedupe_count": 3}
    await store.upsert([Chunk("refund", NOTES[0][1], stale)], scope=ACME.scope)
    [top] = await hybrid(store).query("refunds to the original card", k=1, ctx=ACME)
    assert top.metadata["dedupe_count"] == 2
    assert sorted(top.metadata["dedupe_sources"]) == ["dense", "lexical"]


async def test_rrf_gives_a_single_source_hit_one_share(store: Any) -> None:
    dense = VectorMemory(store, name="dense")
    reranker = functools.partial(rrf_rerank, constant=RRF_CONSTANT)
    # A survivor of both halves, written back (e.g. after an edit) ...
    [top] = await CompositeMemory(halves(store), reranker=reranker).query(
        "refunds to the original card", k=1, ctx=ACME
    )
    await dense.write([top], ctx=ACME)
    # ... and a stale row another writer left carrying stamps.
    await store.upsert(
        [Chunk("vpn", NOTES[1][1], {"dedupe_sources": ("dense", "lexical"), "dedupe_count": 2})],
        scope=ACME.scope,
    )
    # Only the dense half answers: one share of RRF per item.
    alone = CompositeMemory([dense, Fixed("lexical", [])], reranker=reranker)
    got = await alone.query("refunds vpn badges leave", k=4, ctx=ACME)
    assert sorted(i.id or "" for i in got) == sorted(cid for cid, _ in NOTES)
    for rank, item in enumerate(got, 1):
        assert item.score == pytest.approx(1 / (RRF_CONSTANT + rank)), item.id


async def test_rrf_without_a_composite_ignores_hand_written_stamps() -> None:
    forged = MemoryItem("x", "a", 0.5, {"dedupe_sources": ("a", "b"), "dedupe_count": 2})
    [got] = await rrf_rerank("q", [forged], k=1)
    assert got.score == pytest.approx(1 / 61)


async def test_nested_composites_still_add_up_the_copies_they_saw() -> None:
    inner = CompositeMemory([Fixed("a", [MemoryItem("fact", "a", 0.5)]),
                             Fixed("b", [MemoryItem("fact", "b", 0.7)])], name="inner")
    outer = CompositeMemory([inner, Fixed("c", [MemoryItem("fact", "c", 0.6)])])
    [got] = await outer.query("q", k=5, ctx=ACME)
    assert got.metadata["dedupe_sources"] == ("a", "b", "c")
    assert got.metadata["dedupe_count"] == 3


def test_stamps_do_not_survive_a_copy_out_of_the_process() -> None:
    # deepcopy and pickle are how stores keep metadata: what comes back is plain data.
    async def merged() -> MemoryItem:
        [s] = await CompositeMemory([Fixed("a", [MemoryItem("f", "a", 0.1)]),
                                     Fixed("b", [MemoryItem("f", "b", 0.2)])]).query(
            "q", k=1, ctx=ACME)
        return s

    import asyncio

    survivor = asyncio.run(merged())
    for meta in (copy.deepcopy(dict(survivor.metadata)),
                 pickle.loads(pickle.dumps(dict(survivor.metadata)))):
        assert meta["dedupe_sources"] == ("a", "b")
        assert type(meta["dedupe_sources"]) is tuple

        async def remerge(meta: dict[str, Any] = meta) -> MemoryItem:
            [s] = await CompositeMemory([
                Fixed("a", [MemoryItem("f", "a", 0.1, meta)]),
                Fixed("c", [MemoryItem("f", "c", 0.2)])]).query("q", k=1, ctx=ACME)
            return s

        again = asyncio.run(remerge())
        assert again.metadata["dedupe_sources"] == ("a", "c")
        assert again.metadata["dedupe_count"] == 2


# --- 12: writing back what the CLI's hybrid recalled updates the row --------------


async def _cli_store(tmp_path: Path) -> SQLiteVectorStore:
    s = SQLiteVectorStore(tmp_path / "cli.db", embedder=HashingEmbedder())
    await s.open()
    await _fill(s)
    return s


async def test_hybrid_write_back_updates_the_row_in_place(tmp_path: Path) -> None:
    store = await _cli_store(tmp_path)
    try:
        memory = HybridMemory(store)
        [top] = await memory.query("lost badges front desk", k=1, ctx=ACME)
        assert top.id == "badge"
        assert top.source == "hybrid"  # one item per record, whichever halves found it
        edited = dataclasses.replace(top, content=top.content + " Bring photo ID.")
        await memory.write([edited], ctx=ACME)
        assert await store.count(scope=ACME.scope) == len(NOTES)
        [row] = await store.get(["badge"], scope=ACME.scope)
        assert row.text.endswith("Bring photo ID.")
        assert row.metadata == {"team": "ops"}
        # The same from a one-half search, and with rebuilt metadata.
        dense = HybridMemory(store, mode="dense")
        [top] = await dense.query("lost badges front desk", k=1, ctx=ACME)
        again = dataclasses.replace(
            top, content="Badges: front desk.", metadata={**top.metadata, "team": "facilities"}
        )
        await dense.write([again], ctx=ACME)
        assert await store.count(scope=ACME.scope) == len(NOTES)
        [row] = await store.get(["badge"], scope=ACME.scope)
        assert (row.text, row.metadata) == ("Badges: front desk.", {"team": "facilities"})
    finally:
        await store.close()


async def test_an_id_another_backend_reported_still_never_overwrites(tmp_path: Path) -> None:
    store = await _cli_store(tmp_path)
    try:
        dense = VectorMemory(store, name="dense")
        # The journal's row "vpn" holds the same text as the store's row "refund".
        journal = Fixed("journal", [MemoryItem(NOTES[0][1], "journal", 99.0, id="vpn")])
        memory = CompositeMemory([dense, journal])
        [top] = await memory.query("refunds to the original card", k=1, ctx=ACME)
        assert (top.source, top.id) == ("journal", "vpn")
        assert "dense" in top.metadata["dedupe_sources"]
        await dense.write([dataclasses.replace(top, content="edited refund")], ctx=ACME)
        [vpn] = await store.get(["vpn"], scope=ACME.scope)
        assert vpn.text == NOTES[1][1]  # the unrelated row is untouched
        assert await store.count(scope=ACME.scope) == len(NOTES) + 1
        rows_before = await store.count(scope=ACME.scope)
        # The journal's row "badge" is another fact that merely shares the key: the
        # merge (dedupe="id") collapses the two, but the store's row keeps its text.
        journal.answer = [MemoryItem("journal: badge printer fixed", "journal", 99.0,
                                     id="badge")]
        [top] = await memory.query("lost badges front desk", k=1, ctx=ACME)
        assert (top.source, top.id) == ("journal", "badge")
        assert "dense" in top.metadata["dedupe_sources"]
        await dense.write([top], ctx=ACME)
        [badge] = await store.get(["badge"], scope=ACME.scope)
        assert badge.text == NOTES[2][1]
        assert await store.count(scope=ACME.scope) == rows_before + 1
        # A lexical half over ANOTHER store is an unrelated backend too.
        other = InMemoryVectorStore(HashingEmbedder())
        other_dense = VectorMemory(other, name="dense")
        await other_dense.write([MemoryItem("unrelated", "u", metadata={"id": "badge"})],
                                ctx=ACME)
        [lexical_hit] = await LexicalMemory(store).query("lost badges", k=1, ctx=ACME)
        assert lexical_hit.id == "badge"
        await other_dense.write([lexical_hit], ctx=ACME)
        assert (await rows(other))["badge"].text == "unrelated"
    finally:
        await store.close()


# --- 13: reads never create -------------------------------------------------------


async def test_files_per_scope_queries_for_unknown_tenants_create_nothing(
    tmp_path: Path,
) -> None:
    mem = files_per_scope(tmp_path)
    for n in range(200):
        assert await mem.query("anything", k=3, ctx=Ctx(Scope(f"probe{n}", "x"))) == []
    assert _listing(tmp_path) == []
    assert mem.scopes == []
    known = Ctx(Scope("acme", "support"))
    await mem.write([MemoryItem("the vpn note", "u", metadata={"path": "/vpn.md"})], ctx=known)
    assert [i.content for i in await mem.query("vpn", k=3, ctx=known)] == ["the vpn note"]
    assert await mem.query("vpn", k=3, ctx=Ctx(Scope("acme", "sales"))) == []
    assert _listing(tmp_path) == ["s-acme", "s-acme/s-support", "s-acme/s-support/vpn.md"]
    assert mem.scopes == [known.scope]


def _listing(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*"))


async def test_per_scope_exists_hook_keeps_reads_from_building() -> None:
    built: list[Scope] = []
    have = {Scope("acme", "support")}

    def factory(scope: Scope) -> Fixed:
        built.append(scope)
        return good()

    mem = PerScopeMemory(factory, exists=lambda scope: scope in have)
    assert await mem.query("q", k=1, ctx=Ctx(Scope("ghost", "x"))) == []
    assert built == [] and mem.scopes == []
    assert [i.content for i in await mem.query("q", k=1, ctx=ACME)] == ["a real fact"]
    await mem.write([MemoryItem("new", "u")], ctx=Ctx(Scope("ghost", "x")))
    assert built == [ACME.scope, Scope("ghost", "x")]
