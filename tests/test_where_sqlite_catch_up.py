"""A SQLite store's filter columns follow writes made elsewhere, by the change.

Dense and word search filter from columns held per scope (``_sqlite_filter``). Another
connection or process writes; the reader's next filtered query must see exactly the
rows now stored (the reference evaluator over them decides), whatever the write did: a
new distinct string sorting before every held one, a deleted row, a key that changed
JSON type, an integer float64 cannot hold, a key a JSON path cannot name. And it must
get there by reading the changed rows only, not the scope again: the store logs what
it reads on ``agentkit.vector`` at DEBUG, which is what these tests watch.
"""

from __future__ import annotations

import asyncio
import logging
import random
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from agentkit.kernel import Scope
from agentkit.kernel.where import Where, parse_where
from agentkit.vector import Chunk, HashingEmbedder, SQLiteVectorStore
from agentkit.vector._sqlite_filter import RowFilter
from agentkit.vector._sqlite_schema import scope_generation

ACME = Scope("acme", "support")
OTHER = Scope("globex", "support")
KEYS = ["s", "n", "a.b", 'q"k', "é"]
# One filter per operator kind (and per JSON kind where the operator cares), on the
# keys of every build path: a JSON path ("s", "n", "a.b") and parsed rows ('q"k', "é").
FILTERS: list[dict[str, Any]] = [
    {"s": "m"},
    {"s": {"$ne": "m"}},
    {"s": {"$gt": "b"}},
    {"s": {"$gte": "!"}},
    {"s": {"$lt": "m"}},
    {"s": {"$lte": "m"}},
    {"s": {"$in": ["a", "!", 3, None]}},
    {"s": {"$nin": ["a", "m"]}},
    {"s": {"$exists": True}},
    {"s": {"$exists": False}},
    {"n": 3},
    {"n": True},
    {"n": 1},
    {"n": None},
    {"n": {"$gt": 2}},
    {"n": {"$lte": 2.5}},
    {"n": {"$gte": 2**60}},
    {"n": 2**60 + 1},
    {"n": {"$lt": 2**53 + 1}},
    {"n": 2**53 + 1},
    {"n": {"$gt": 10**399}},
    {"n": {"$lt": 10**401}},
    {"n": -(2**70) - 1},
    {"n": 0.1 + 0.2},
    {"n": {"$gt": 0.3}},
    {"a.b": {"$in": [1, "x", False]}},
    {"a.b": {"$ne": 1}},
    {'q"k': {"$lt": "z"}},
    {'q"k': 2},
    {"é": {"$exists": False}},
    {"é": {"$gte": 0}},
    {"$or": [{"s": "!"}, {"n": {"$gt": 4}}]},
    {"$and": [{"s": {"$exists": True}}, {"$not": {"n": 3}}]},
]


def _value(rng: random.Random, fresh: str) -> Any:
    pool: list[Any] = [None, True, False, 0, 1, 1.0, 2.5, 3, 4, 7, 2**53, float(2**53)]
    pool += [
        2**60,
        2**60 + 1,
        -(2**70) - 1,
        1e300,
        10**400,
        0.1 + 0.2,
        "",
        "a",
        "b",
        "m",
        "z",
        "é",
        fresh,
    ]
    return rng.choice([*pool, [1], {"x": 1}])


def _metadata(rng: random.Random, fresh: str) -> dict[str, Any]:
    return {k: _value(rng, fresh) for k in KEYS if rng.random() < 0.6}


async def _check(reader: SQLiteVectorStore, truth: dict[str, dict[str, Any]]) -> None:
    """Every filter admits exactly the stored rows the reference admits (dense search
    with k past the row count returns every admitted row)."""
    for where in FILTERS:
        tree = parse_where(where)
        assert tree is not None
        hits = await reader.search("walrus", k=len(truth) + 5, scope=ACME, where=where)
        want = {i for i, meta in truth.items() if tree.matches(meta)}
        assert {c.id for _, c in hits} == want, where
        assert all(c.metadata == truth[c.id] for _, c in hits)


def _logged(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if "filter colum" in r.getMessage()]


async def test_a_reader_sees_every_write_of_another_connection(tmp_path: Path) -> None:
    rng = random.Random(7)
    db = tmp_path / "m.db"
    truth: dict[str, dict[str, Any]] = {}
    emb = HashingEmbedder(dim=32)
    async with SQLiteVectorStore(db, embedder=emb) as writer:
        first = [Chunk(f"r{i}", f"walrus note {i}", _metadata(rng, "m")) for i in range(60)]
        # Numbers SQLite or float64 would not read exactly, in the rows built by SQLite.
        exact = [10**400, -(2**70) - 1, 2**53 + 1, float(2**53), 0.1 + 0.2]
        for c, n in zip(first[: len(exact)], exact, strict=True):
            c.metadata["n"] = n
        await writer.upsert(first, scope=ACME)
        await writer.upsert([Chunk("x", "walrus elsewhere", {"s": "!"})], scope=OTHER)
        truth.update({c.id: dict(c.metadata) for c in first})
        async with SQLiteVectorStore(db, embedder=emb) as reader:
            await _check(reader, truth)  # every key's column built
            for round in range(6):
                # A string sorting before all held ones arrives each round.
                fresh = chr(ord("!") - 1 - round) + "new"
                ids = rng.sample(sorted(truth), 5) + [f"n{round}-{j}" for j in range(3)]
                changed = [Chunk(i, f"walrus changed {i}", _metadata(rng, fresh)) for i in ids]
                await writer.upsert(changed, scope=ACME)
                truth.update({c.id: dict(c.metadata) for c in changed})
                gone = rng.sample(sorted(truth), 3)
                assert await writer.delete(gone, scope=ACME) == 3
                for i in gone:
                    del truth[i]
                # A key changing JSON type in place: string, then number, then gone.
                kept = sorted(truth)[0]
                for meta in ({"s": "m", "n": "3"}, {"s": 3, "n": 3}, {"n": True}):
                    await writer.upsert([Chunk(kept, "walrus typed", meta)], scope=ACME)
                    truth[kept] = meta
                    await _check(reader, truth)


async def test_a_write_of_another_process_is_seen(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    emb = HashingEmbedder(dim=32)
    async with SQLiteVectorStore(db, embedder=emb) as reader:
        await reader.upsert(
            [Chunk(f"r{i}", "walrus", {"s": "m", "n": i}) for i in range(20)], scope=ACME
        )
        assert len(await reader.search("walrus", k=50, scope=ACME, where={"s": "m"})) == 20
        script = textwrap.dedent(f"""
            import asyncio
            from agentkit.kernel import Scope
            from agentkit.vector import Chunk, HashingEmbedder, SQLiteVectorStore
            async def main():
                async with SQLiteVectorStore({str(db)!r}, embedder=HashingEmbedder(dim=32)) as s:
                    await s.upsert([Chunk("r3", "walrus", {{"s": " first", "n": 2**60 + 1}}),
                                    Chunk("new", "walrus", {{"s": "m", "n": "3"}})],
                                   scope=Scope("acme", "support"))
                    await s.delete(["r4"], scope=Scope("acme", "support"))
            asyncio.run(main())
        """)
        await asyncio.to_thread(
            subprocess.run, [sys.executable, "-c", script], check=True, timeout=120
        )

        async def ids(where: dict[str, Any]) -> set[str]:
            return {c.id for _, c in await reader.search("walrus", k=50, scope=ACME, where=where)}

        assert await ids({"s": "m"}) == {f"r{i}" for i in range(20)} - {"r3", "r4"} | {"new"}
        assert await ids({"s": {"$lt": "a"}}) == {"r3"}
        assert await ids({"n": 2**60 + 1}) == {"r3"}
        assert await ids({"n": {"$gt": 2**60}}) == {"r3"}
        assert await ids({"n": {"$in": [3, 4]}}) == set()  # r3 changed, r4 deleted
        assert await ids({"n": "3"}) == {"new"}


async def test_catching_up_reads_only_the_changed_rows(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    db = tmp_path / "m.db"
    emb = HashingEmbedder(dim=32)
    where = {"$and": [{"s": {"$gte": "a"}}, {'q"k': {"$exists": False}}]}
    async with SQLiteVectorStore(db, embedder=emb) as writer:
        await writer.upsert(
            [Chunk(f"r{i}", "walrus", {"s": "b", "n": i}) for i in range(3000)], scope=ACME
        )
        async with SQLiteVectorStore(db, embedder=emb) as reader:
            caplog.set_level(logging.DEBUG, logger="agentkit.vector")
            assert len(await reader.search("walrus", k=5, scope=ACME, where=where)) == 5
            built = _logged(caplog)
            assert any("rowids read" in m for m in built)
            assert sum("built" in m for m in built) == 2  # one per key named
            caplog.clear()
            await writer.upsert([Chunk("a-first", "walrus", {"s": "a"})], scope=ACME)
            await writer.delete(["r0"], scope=ACME)
            hits = await reader.search("walrus", k=3001, scope=ACME, where=where)
            assert len(hits) == 3000 and "a-first" in {c.id for _, c in hits}
            assert "r0" not in {c.id for _, c in hits}
            logged = _logged(caplog)
            assert len(logged) == 1 and "1 changed rows read" in logged[0], logged
            caplog.clear()
            assert len(await reader.search("walrus", k=3, scope=ACME, where=where)) == 3
            assert _logged(caplog) == []  # nothing changed: nothing read
            # A bulk write (most of the scope) is built afresh rather than parsed row by row.
            bulk = [Chunk(f"b{i}", "walrus", {"s": "c", 'q"k': 1}) for i in range(2500)]
            await writer.upsert(bulk, scope=ACME)
            hits = await reader.search("walrus", k=6000, scope=ACME, where=where)
            assert len(hits) == 3000 and not any(c.id.startswith("b") for _, c in hits)
            logged = _logged(caplog)
            assert any("rowids read" in m for m in logged), logged
            assert not any("changed rows read" in m for m in logged), logged


async def test_a_pruned_log_rebuilds_the_columns(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The log no longer reaching back to the held generation (the floor moved past it,
    as pruning does) means the columns are rebuilt from the rows, not trusted."""
    db = tmp_path / "m.db"
    emb = HashingEmbedder(dim=32)
    async with SQLiteVectorStore(db, embedder=emb) as writer:
        await writer.upsert([Chunk(f"r{i}", "walrus", {"s": "m"}) for i in range(10)], scope=ACME)
        async with SQLiteVectorStore(db, embedder=emb) as reader:
            assert len(await reader.search("walrus", k=20, scope=ACME, where={"s": "m"})) == 10
            await writer.upsert([Chunk("r1", "walrus", {"s": "a"})], scope=ACME)
            with sqlite3.connect(db) as raw:  # failure injection: the log is gone
                raw.execute(
                    "INSERT OR REPLACE INTO change_floor(org, domain, gen) VALUES (?, ?, ?)",
                    ("acme", "support", 10**6),
                )
                raw.execute("DELETE FROM changes")
            caplog.set_level(logging.DEBUG, logger="agentkit.vector")
            hits = await reader.search("walrus", k=20, scope=ACME, where={"s": "m"})
            assert {c.id for _, c in hits} == {f"r{i}" for i in range(10)} - {"r1"}
            assert any("rowids read" in m for m in _logged(caplog))


async def test_a_reader_on_an_older_snapshot_sees_its_own_rows(tmp_path: Path) -> None:
    """Two readers of one store, one still in a snapshot from before a write the other
    has caught its columns up to: each is answered from its own snapshot's rows."""
    db = tmp_path / "m.db"
    bucket = ("acme", "support")
    async with SQLiteVectorStore(db, embedder=HashingEmbedder(dim=32)) as writer:
        await writer.upsert([Chunk(f"r{i}", "walrus", {"s": "m"}) for i in range(10)], scope=ACME)
        old = sqlite3.connect(db, isolation_level=None)
        new = sqlite3.connect(db, isolation_level=None)
        tree: Where | None = parse_where({"s": "m"})
        assert tree is not None
        rows = RowFilter()
        old.execute("BEGIN")
        old_gen = scope_generation(old, bucket)
        before, total = rows.admitted(old, bucket, old_gen, tree)
        assert (len(before), total) == (10, 10)
        await writer.upsert([Chunk("r0", "walrus", {"s": "a"}), Chunk("x", "w", {})], scope=ACME)
        new_gen = scope_generation(new, bucket)
        assert new_gen > old_gen
        after, total = rows.admitted(new, bucket, new_gen, tree)
        assert (len(after), total) == (9, 11)
        again, total = rows.admitted(old, bucket, old_gen, tree)  # still the old snapshot
        assert (again.tolist(), total) == (before.tolist(), 10)
        old.rollback()
        old.close()
        new.close()
