"""Indexes beside a SQLite store catch up by the change, not by the scope.

The triggers log every changed row under the generation it made, in the changing
transaction, whoever writes (this store, a plain ``sqlite3`` script). An index stamped
at generation g re-reads only the rows changed after g; a rebuild from the rows (which
reports progress) happens only when the log no longer reaches back to g. The log is
pruned once every index of the scope has folded past it.
"""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import numpy as np

from agentkit.kernel import Scope
from agentkit.vector import Chunk, HashingEmbedder, SQLiteVectorStore
from agentkit.vector._derived import PRUNE_STEP, changed_rowids, log_floor
from agentkit.vector._lexical_index import LexicalIndexes
from agentkit.vector._sqlite_schema import scope_generation, store_id

ACME = Scope("acme", "support")
BUCKET = ("acme", "support")
DIM = 16


def _fill(db: Path, n: int) -> None:
    async def run() -> None:
        async with SQLiteVectorStore(db, embedder=HashingEmbedder(dim=DIM)) as store:
            vectors = np.eye(DIM, dtype=np.float32)[np.arange(n) % DIM]
            await store.upsert_vectors(
                [Chunk(f"d{i}", f"document number {i} about topic{i % 7}") for i in range(n)],
                vectors, scope=ACME,
            )
            # The writer keeps its own index current: stamped at the scope's generation.
            assert await store.lexical_search("topic3", k=1, scope=ACME)

    asyncio.run(run())


def _search(index: LexicalIndexes, db: Path, term: str) -> set[int]:
    conn = sqlite3.connect(db, isolation_level=None)
    try:
        conn.execute("BEGIN")
        gen = scope_generation(conn, BUCKET)
        hits = index.search(conn, BUCKET, gen, [term], 1000)
        conn.execute("ROLLBACK")
        return {rowid for _, rowid in hits}
    finally:
        conn.close()


def _indexes(db: Path, calls: list[tuple[str, int, int]]) -> LexicalIndexes:
    with sqlite3.connect(db) as conn:
        sid = store_id(conn)
    return LexicalIndexes(
        db.with_name(db.name + ".lexical"), sid, writable=True,
        progress=lambda what, done, total: calls.append((what, done, total)),
    )


def _rowid(db: Path, cid: str) -> int:
    with sqlite3.connect(db) as conn:
        return int(conn.execute("SELECT rowid FROM chunks WHERE id = ?", (cid,)).fetchone()[0])


def test_triggers_log_each_change_under_its_generation(tmp_path: Path) -> None:
    db = tmp_path / "store.db"
    _fill(db, 5)
    with sqlite3.connect(db, isolation_level=None) as conn:
        gen = scope_generation(conn, BUCKET)
        assert changed_rowids(conn, BUCKET, gen) == []
        gone = _rowid(db, "d2")
        conn.execute("UPDATE chunks SET text = 'zebra' WHERE id = 'd1'")
        conn.execute("DELETE FROM chunks WHERE id = 'd2'")
        conn.execute(
            "INSERT INTO chunks(org, domain, id, text, metadata, vector) "
            "SELECT org, domain, 'new', 'fresh', '{}', vector FROM chunks WHERE id = 'd0'"
        )
        # Another scope's change is in its own log only.
        conn.execute("UPDATE chunks SET domain = 'other' WHERE id = 'd3'")
        touched = changed_rowids(conn, BUCKET, gen)
        # Each touched row once, ascending: d1, d2 (gone), d3 (moved away), new.
        assert touched == sorted({_rowid(db, "d1"), gone, _rowid(db, "d3"), _rowid(db, "new")})
        assert changed_rowids(conn, ("acme", "other"), 0) == [_rowid(db, "d3")]
        ops = conn.execute(
            "SELECT op FROM changes WHERE org = 'acme' AND domain = 'support' AND gen > ? "
            "ORDER BY gen", (gen,),
        ).fetchall()
        assert [op for (op,) in ops] == [0, 1, 0, 1, 0]  # update, delete, insert, move
        assert scope_generation(conn, BUCKET) == gen + 5


def test_a_foreign_write_is_caught_up_by_the_change(tmp_path: Path) -> None:
    db = tmp_path / "store.db"
    _fill(db, 3000)
    with sqlite3.connect(db, isolation_level=None) as conn:
        conn.execute("UPDATE chunks SET text = 'zebra crossing' WHERE id = 'd5'")
        conn.execute("DELETE FROM chunks WHERE id = 'd6'")
    calls: list[tuple[str, int, int]] = []
    index = _indexes(db, calls)
    assert _search(index, db, "zebra") == {_rowid(db, "d5")}
    found = _search(index, db, "topic6")  # d6 was one of them, and it is gone
    assert len(found) == len([i for i in range(3000) if i % 7 == 6]) - 1
    assert _search(index, db, "topic5") & {_rowid(db, "d5")} == set()
    assert calls == []  # no rebuild: only the two changed rows were read
    # The catch-up is on disk, stamped: a fresh process-level object reads it as is.
    again: list[tuple[str, int, int]] = []
    assert _search(_indexes(db, again), db, "zebra") == {_rowid(db, "d5")}
    assert again == []


def test_an_index_older_than_the_log_is_rebuilt_with_progress(tmp_path: Path) -> None:
    db = tmp_path / "store.db"
    _fill(db, 3000)
    with sqlite3.connect(db, isolation_level=None) as conn:
        conn.execute("UPDATE chunks SET text = 'zebra crossing' WHERE id = 'd5'")
        # The log was pruned past what the index holds (as after a long absence).
        gen = scope_generation(conn, BUCKET)
        conn.execute("DELETE FROM changes")
        conn.execute("INSERT INTO change_floor VALUES ('acme', 'support', ?)", (gen,))
    calls: list[tuple[str, int, int]] = []
    assert _search(_indexes(db, calls), db, "zebra") == {_rowid(db, "d5")}
    assert calls[0][1:] == (0, 3000) and calls[-1][1:] == (3000, 3000)
    assert "acme/support" in calls[0][0]


def test_the_log_is_pruned_once_the_indexes_folded_past_it(tmp_path: Path) -> None:
    db = tmp_path / "store.db"
    n = PRUNE_STEP + 10

    async def run() -> None:
        async with SQLiteVectorStore(db, embedder=HashingEmbedder(dim=DIM)) as store:
            vectors = np.eye(DIM, dtype=np.float32)[np.arange(n) % DIM]
            await store.upsert_vectors(
                [Chunk(f"d{i}", f"text {i}") for i in range(n)], vectors, scope=ACME
            )
            # The lexical index is stamped past a batch of the log, but no dense index
            # was built yet: the log is kept for it.
            await store.upsert([Chunk("last", "last text")], scope=ACME)
            with sqlite3.connect(db) as conn:
                assert log_floor(conn, BUCKET) == 0
            assert await store.search("last text", k=1, scope=ACME)  # builds it
            # Now both are: the next write drops the batch.
            await store.upsert([Chunk("later", "later text")], scope=ACME)
            assert {c.id for _, c in await store.lexical_search("last", k=3, scope=ACME)} == {
                "last"
            }

    asyncio.run(run())
    with sqlite3.connect(db) as conn:
        floor = log_floor(conn, BUCKET)
        assert floor >= n  # the first batch's changes are gone
        left = conn.execute("SELECT count(*) FROM changes").fetchone()[0]
        assert left == scope_generation(conn, BUCKET) - floor
