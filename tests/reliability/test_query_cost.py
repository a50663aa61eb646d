"""What one query may cost the SQLite store, and who waits for it.

A query of a hundred thousand words is scored on its first ``MAX_QUERY_TERMS`` distinct
words, so it costs what a paragraph costs. And a query that is slow for any reason runs
on a reader of its own: another tenant's query, or a write, does not queue behind it.
The slow query here is made slow by failure injection at the one place every filtered
read evaluates its ``where`` (the filter's column mask, on the reader's thread): it
blocks until the test releases it, so the order of events is exact rather than a race
between timings; the timeouts are only there to end a hung run. (A ``where`` value with
a blocking ``__eq__`` did this once; the where language now refuses such values.)
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import pytest

from agentkit.kernel import Scope
from agentkit.kernel.where import Field, Where
from agentkit.vector import Chunk, HashingEmbedder, SQLiteVectorStore
from agentkit.vector._where_columns import WhereColumns
from agentkit.vector.port import MAX_QUERY_TERMS

ACME = Scope("acme", "support")
GLOBEX = Scope("globex", "support")
NOBODY = Scope("nobody", "support")
HANG = 60  # seconds: only a guard against a run that never ends


async def filled(db: Path) -> SQLiteVectorStore:
    store = SQLiteVectorStore(db, embedder=HashingEmbedder(dim=64))
    await store.upsert(
        [Chunk(f"a{i}", f"alpha w{i} w{i + 1} notes {i}", {"tag": "x"}) for i in range(400)]
        + [Chunk("late", "zulu appears only in this row", {"tag": "x"})],
        scope=ACME,
    )
    await store.upsert(
        [Chunk(f"g{i}", f"beta w{i} alpha report {i}", {"tag": "y"}) for i in range(400)],
        scope=GLOBEX,
    )
    return store


def huge_query(words: int) -> str:
    return " ".join(f"w{i}" for i in range(words))


async def test_a_100k_word_query_costs_what_its_first_terms_cost(tmp_path: Path) -> None:
    store = await filled(tmp_path / "store.db")
    try:
        long = huge_query(100_000)
        head = huge_query(MAX_QUERY_TERMS)
        got = await asyncio.wait_for(store.lexical_search(long, k=10, scope=ACME), HANG)
        assert got and got == await store.lexical_search(head, k=10, scope=ACME)
        # A word counts when it is among the first distinct ones, not after them.
        first = await store.lexical_search("zulu " + long, k=1000, scope=ACME)
        past = await store.lexical_search(long + " zulu", k=1000, scope=ACME)
        assert "late" in {c.id for _, c in first}
        assert "late" not in {c.id for _, c in past}
        # A tenant with no rows pays no more (its query walks others' rankings).
        assert await asyncio.wait_for(store.lexical_search(long, k=10, scope=NOBODY), HANG) == []
        dense = await asyncio.wait_for(store.search(long, k=5, scope=ACME), HANG)
        assert len(dense) == 5 and all(c.id.startswith("a") for _, c in dense)
    finally:
        await store.close()


SENTINEL = "slow-sentinel"  # no record holds it: the where means tag == "x"


class SlowFilter:
    """``where``: tag is "x", spelt so its evaluation is recognised and blocks until
    released (or a guard expires)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()
        self.where: dict[str, Any] = {"tag": {"$in": ["x", SENTINEL]}}
        original = WhereColumns.mask

        def mask(columns: WhereColumns, where: Where) -> Any:
            if isinstance(where, Field) and SENTINEL in (where.value or ()):
                self.entered.set()
                self.release.wait(HANG)
            return original(columns, where)

        monkeypatch.setattr(WhereColumns, "mask", mask)


Query = Callable[..., Coroutine[Any, Any, list[tuple[float, Chunk]]]]


def _kind(store: SQLiteVectorStore, kind: str) -> Query:
    if kind == "lexical":
        return store.lexical_search
    return store.search


@pytest.mark.parametrize("kind", ["lexical", "dense"])
async def test_a_slow_query_does_not_stall_other_tenants_or_writes(
    tmp_path: Path, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = await filled(tmp_path / "store.db")
    query = _kind(store, kind)
    slow = SlowFilter(monkeypatch)
    where = slow.where
    stuck = asyncio.create_task(query("alpha notes", k=5, scope=ACME, where=where))
    try:
        assert await asyncio.to_thread(slow.entered.wait, HANG), "the slow query never ran"
        quick = await asyncio.wait_for(query("beta", k=3, scope=GLOBEX), HANG)
        assert not stuck.done(), "the other tenant's query waited for the slow one"
        assert len(quick) == 3 and all(c.id.startswith("g") for _, c in quick)
        await asyncio.wait_for(store.upsert([Chunk("g-new", "beta fresh")], scope=GLOBEX), HANG)
        assert not stuck.done(), "the write waited for the slow query"
        assert [c.id for c in await store.get(["g-new"], scope=GLOBEX)] == ["g-new"]
    finally:
        slow.release.set()
        hits = await asyncio.wait_for(stuck, HANG)
        await store.close()
    assert len(hits) == 5 and all(c.metadata["tag"] == "x" for _, c in hits)


async def test_reads_running_at_close_finish_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = await filled(tmp_path / "store.db")
    slow = SlowFilter(monkeypatch)
    stuck = asyncio.create_task(store.lexical_search("alpha", k=3, scope=ACME, where=slow.where))
    assert await asyncio.to_thread(slow.entered.wait, HANG)
    closing = asyncio.create_task(store.close())
    await asyncio.sleep(0.05)
    slow.release.set()
    await asyncio.wait_for(closing, HANG)
    assert len(await stuck) == 3


async def test_one_tenant_flooding_the_readers_leaves_one_for_another(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Many slow queries from one tenant at once never take every reader."""
    store = await filled(tmp_path / "store.db")
    slow = SlowFilter(monkeypatch)
    flood = [
        asyncio.create_task(store.lexical_search("alpha", k=3, scope=ACME, where=slow.where))
        for _ in range(12)
    ]
    try:
        assert await asyncio.to_thread(slow.entered.wait, HANG), "the flood never ran"
        quick = await asyncio.wait_for(store.lexical_search("beta", k=3, scope=GLOBEX), HANG)
        assert not any(task.done() for task in flood), "the other tenant waited for the flood"
        assert len(quick) == 3 and all(c.id.startswith("g") for _, c in quick)
    finally:
        slow.release.set()
        answers = await asyncio.wait_for(asyncio.gather(*flood), HANG)
        await store.close()
    assert all(len(hits) == 3 for hits in answers)


async def test_writes_during_a_search_leave_its_snapshot_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A search sees the rows as they were when it began, whole; the next sees the writes."""
    store = await filled(tmp_path / "store.db")
    try:
        await store.search("alpha", k=1, scope=ACME)  # the scope's vectors are cached
        slow = SlowFilter(monkeypatch)
        stuck = asyncio.create_task(store.search("alpha", k=1000, scope=ACME, where=slow.where))
        assert await asyncio.to_thread(slow.entered.wait, HANG)
        replace = store.upsert([Chunk("a1", "replaced", {"tag": "x"})], scope=ACME)
        await asyncio.wait_for(replace, HANG)
        await asyncio.wait_for(store.delete(["a2"], scope=ACME), HANG)
        assert not stuck.done()
        slow.release.set()
        before = {c.id: c.text for _, c in await asyncio.wait_for(stuck, HANG)}
        after = {c.id: c.text for _, c in await store.search("alpha", k=1000, scope=ACME)}
    finally:
        slow.release.set()
        await store.close()
    assert len(before) == 401 and before["a1"] == "alpha w1 w2 notes 1" and "a2" in before
    assert len(after) == 400 and after["a1"] == "replaced" and "a2" not in after
