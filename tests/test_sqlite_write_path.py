"""SQLiteVectorStore's write path: rowids given before the rows are written, the lexical
index's changes handed to tantivy before the commit, and ``held_ids`` for presence checks.

What a user relies on: after a write, word search sees exactly the rows that landed
(replaced text gone, new text found, the id keeping its row); a write that fails
leaves both the rows and word search as they were, and the store keeps working.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from agentkit.kernel import Scope
from agentkit.kernel.errors import StoreError
from agentkit.vector import Chunk, HashingEmbedder, SQLiteVectorStore

ACME = Scope("acme", "support")
GLOBEX = Scope("globex", "support")


def _vectors(n: int, dim: int = 64) -> np.ndarray:
    return np.random.default_rng(5).standard_normal((n, dim)).astype(np.float32)


async def _words(store: SQLiteVectorStore, query: str, scope: Scope = ACME) -> list[str]:
    return sorted(c.id for _, c in await store.lexical_search(query, k=10, scope=scope))


def _rowids(path: Path) -> dict[str, int]:
    with sqlite3.connect(path) as conn:
        return dict(conn.execute("SELECT id, rowid FROM chunks").fetchall())


async def test_mixed_write_keeps_rowids_and_word_search_exact(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    async with SQLiteVectorStore(path, embedder=HashingEmbedder(64)) as store:
        await store.upsert_vectors(
            [Chunk("a", "apple orchard"), Chunk("b", "banana plantation")], _vectors(2),
            scope=ACME,
        )
        await store.upsert_vectors([Chunk("z", "zebra crossing")], _vectors(1), scope=GLOBEX)
        first = _rowids(path)
        # b is rewritten in place, c is new; one write.
        await store.upsert_vectors(
            [Chunk("b", "blueberry field"), Chunk("c", "cherry blossom")], _vectors(2),
            scope=ACME,
        )
        after = _rowids(path)
        assert after["a"] == first["a"] and after["b"] == first["b"]
        assert after["c"] == max(first.values()) + 1  # what SQLite itself would give
        assert await _words(store, "banana plantation") == []
        assert await _words(store, "blueberry") == ["b"]
        assert await _words(store, "cherry blossom") == ["c"]
        assert await _words(store, "apple") == ["a"]
        assert await _words(store, "zebra") == []  # another scope's row
        assert await _words(store, "zebra", GLOBEX) == ["z"]
    # A fresh process-side view (index read from disk) agrees.
    async with SQLiteVectorStore(path, embedder=HashingEmbedder(64)) as store:
        assert await _words(store, "blueberry cherry banana") == ["b", "c"]


async def test_a_failed_write_leaves_rows_and_word_search_as_they_were(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    async with SQLiteVectorStore(path, embedder=HashingEmbedder(64)) as store:
        await store.upsert_vectors([Chunk("a", "apple orchard")], _vectors(1), scope=ACME)
        # Another program's trigger refuses one row midway through the batch.
        with sqlite3.connect(path) as conn:
            conn.execute(
                "CREATE TRIGGER refuse BEFORE INSERT ON chunks WHEN new.id = 'boom' "
                "BEGIN SELECT RAISE(ABORT, 'refused'); END"
            )
        batch = [Chunk("a", "avocado toast"), Chunk("k", "kiwi salad"), Chunk("boom", "mango")]
        with pytest.raises(StoreError, match="nothing written"):
            await store.upsert_vectors(batch, _vectors(3), scope=ACME)
        assert await store.count(scope=ACME) == 1
        assert await _words(store, "kiwi avocado mango") == []
        assert await _words(store, "apple") == ["a"]
        with sqlite3.connect(path) as conn:
            conn.execute("DROP TRIGGER refuse")
        # The index was let go: the next write lands and is searchable.
        await store.upsert_vectors(batch, _vectors(3), scope=ACME)
        assert await _words(store, "kiwi avocado mango") == ["a", "boom", "k"]
        assert await _words(store, "apple") == []


async def test_held_ids_answers_presence_in_order_within_the_scope(tmp_path: Path) -> None:
    async with SQLiteVectorStore(tmp_path / "s.db", embedder=HashingEmbedder(64)) as store:
        await store.upsert_vectors(
            [Chunk("a", "one"), Chunk("b", "two")], _vectors(2), scope=ACME
        )
        await store.upsert_vectors([Chunk("g", "three")], _vectors(1), scope=GLOBEX)
        assert await store.held_ids(["b", "x", "a", "b", "g"], scope=ACME) == ["b", "a"]
        assert await store.held_ids(["a", "g"], scope=GLOBEX) == ["g"]
        assert await store.held_ids([], scope=ACME) == []
        await store.delete(["a"], scope=ACME)
        assert await store.held_ids(["a", "b"], scope=ACME) == ["b"]


async def test_word_search_of_the_scope_goes_on_while_a_write_is_under_way(
    tmp_path: Path,
) -> None:
    """A search arriving mid-write is answered from the index as it was (the rows are
    not committed yet), at once: the write does not hold the scope's searches up."""
    path = tmp_path / "s.db"
    seen: list[object] = []
    async with SQLiteVectorStore(path, embedder=HashingEmbedder(64)) as store:
        await store.upsert_vectors([Chunk("a", "apple orchard")], _vectors(1), scope=ACME)
        loop = asyncio.get_running_loop()

        def probe() -> int:  # runs on the store's writer thread, inside the insert
            if not seen:
                search = asyncio.run_coroutine_threadsafe(
                    _words(store, "apple kiwi"), loop
                )
                try:
                    seen.append(search.result(timeout=20))
                except concurrent.futures.TimeoutError:
                    seen.append("blocked")
            return 0

        def instrument() -> None:  # instrumentation on the writer's own connection
            conn = store._db()
            conn.create_function("probe", 0, probe)
            conn.execute(
                "CREATE TEMP TRIGGER probe_insert BEFORE INSERT ON main.chunks "
                "BEGIN SELECT probe(); END"
            )

        await asyncio.wrap_future(store._pool.submit(instrument))
        await store.upsert_vectors([Chunk("k", "kiwi salad")], _vectors(1), scope=ACME)
        assert seen == [["a"]]
        assert await _words(store, "apple kiwi") == ["a", "k"]


async def test_a_new_scope_over_a_stale_index_directory_shows_only_its_rows(
    tmp_path: Path,
) -> None:
    """A store file replaced under the same name leaves the old lexical directory
    beside it; the new store's first write to the scope must not inherit its words."""
    path = tmp_path / "s.db"
    async with SQLiteVectorStore(path, embedder=HashingEmbedder(64)) as store:
        await store.upsert_vectors([Chunk("old", "walrus tusk")], _vectors(1), scope=ACME)
    for name in ("s.db", "s.db-wal", "s.db-shm"):
        (tmp_path / name).unlink(missing_ok=True)
    async with SQLiteVectorStore(path, embedder=HashingEmbedder(64)) as store:
        await store.upsert_vectors([Chunk("new", "walrus pup")], _vectors(1), scope=ACME)
        assert await _words(store, "walrus tusk pup") == ["new"]
    async with SQLiteVectorStore(path, embedder=HashingEmbedder(64)) as store:
        assert await _words(store, "walrus tusk pup") == ["new"]


async def test_a_write_split_into_several_statements_lands_every_row_exactly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Rows go to SQLite as one JSON array plus one blob of vectors per statement; a write
    # bigger than a statement's budget takes several. Made small here so 40 rows need
    # about ten: every text, metadata value and vector must come back byte for byte,
    # whichever statement carried it, and ids already held keep their rows.
    import agentkit.vector.sqlite as sqlite_module

    monkeypatch.setattr(sqlite_module, "_STATEMENT_BYTES", 1200)
    path = tmp_path / "s.db"
    texts = [
        f'row {i}: "quoted", back\\slash, newline\n, tab\t, ünïcødé ✓ {"x" * (i % 7)}'
        for i in range(40)
    ]
    metas = [{"i": i, "note": f'"{i}"\n', "nested": {"k": [i, None, 1.5]}} for i in range(40)]
    chunks = [Chunk(f"id-{i}", texts[i], metas[i]) for i in range(40)]
    vectors = _vectors(40)
    async with SQLiteVectorStore(path, embedder=HashingEmbedder(64)) as store:
        await store.upsert_vectors(chunks[:10], vectors[:10], scope=ACME)
        held = _rowids(path)
        await store.upsert_vectors(chunks, vectors, scope=ACME)
        got = {c.id: c for c in await store.get([c.id for c in chunks], scope=ACME)}
        assert [got[c.id].text for c in chunks] == texts
        assert [got[c.id].metadata for c in chunks] == metas
        assert await store.count(scope=ACME) == 40
        assert await _words(store, "ünïcødé") != []
    rows = _rowids(path)
    assert all(rows[cid] == rowid for cid, rowid in held.items())
    with sqlite3.connect(path) as conn:
        blobs = dict(conn.execute("SELECT id, vector FROM chunks").fetchall())
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    for i, chunk in enumerate(chunks):
        assert np.frombuffer(blobs[chunk.id], dtype=np.float32).tolist() == unit[i].tolist()
