"""One SQLite file, several writers: a service and an ``ingest``, two store objects.

The store caches each scope's vectors. Whatever another connection commits, and
whenever it lands (in particular while our own write waits for the lock), the next
search must see exactly the committed rows of the asking scope: never miss rows that
``count`` already reports, and never return another tenant's text under one of our ids
after the other connection deleted our row and SQLite handed its rowid to a new one.
"""

from __future__ import annotations

import asyncio
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from agentkit.kernel import Scope
from agentkit.vector import Chunk, HashingEmbedder, SQLiteVectorStore

WORKER = Path(__file__).with_name("_sqlite_worker.py")
ACME = Scope("acme", "support")  # the worker's scope
DIM = 64  # the worker's embedder width


def spawn(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(WORKER), *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def read_until(proc: subprocess.Popen[str], wanted: str) -> None:
    assert proc.stdout is not None
    while True:
        line = proc.stdout.readline()
        if not line:
            raise AssertionError(f"worker exited before {wanted!r}: {proc.stderr.read()}")  # type: ignore[union-attr]
        if line.strip() == wanted:
            return


def finish(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        proc.kill()
    _, err = proc.communicate()
    assert proc.returncode in (0, -9), err


def holds_write_lock(db: Path) -> bool:
    conn = sqlite3.connect(db, timeout=0, isolation_level=None)
    try:
        conn.execute("BEGIN IMMEDIATE")
    except sqlite3.OperationalError:
        return True
    else:
        conn.execute("ROLLBACK")
        return False
    finally:
        conn.close()


async def until_locked(db: Path, busy: object) -> None:
    """Wait until another connection is inside its write transaction."""
    deadline = time.monotonic() + 60
    while not holds_write_lock(db):
        assert time.monotonic() < deadline, "the other writer never took the lock"
        done = busy.poll() is not None if isinstance(busy, subprocess.Popen) else busy.done()  # type: ignore[attr-defined]
        assert not done, "the other writer finished before it could be caught"
        await asyncio.sleep(0.002)


def rowid_of(db: Path, org: str, cid: str) -> int | None:
    conn = sqlite3.connect(db)
    try:
        row = conn.execute(
            "SELECT rowid FROM chunks WHERE org = ? AND id = ?", (org, cid)
        ).fetchone()
    finally:
        conn.close()
    return None if row is None else int(row[0])


async def assert_search_matches_rows(store: SQLiteVectorStore) -> None:
    """Dense search sees every committed row of the scope, each with its own text."""
    counted = await store.count(scope=ACME)
    hits = await store.search("alpha", k=10**6, scope=ACME)
    assert len(hits) == counted, f"count says {counted}, dense search returns {len(hits)}"
    stored = {c.id: c.text for c in await store.get([c.id for _, c in hits], scope=ACME)}
    assert {c.id: c.text for _, c in hits} == stored


# -- a commit that lands while our own write waits for the lock ----------------------------


async def test_another_process_commit_during_our_write_is_searchable(tmp_path: Path) -> None:
    db = tmp_path / "store.db"
    size = 20_000
    async with SQLiteVectorStore(db, embedder=HashingEmbedder(dim=DIM)) as store:
        await store.upsert([Chunk("seed", "alpha seed")], scope=ACME)
        assert len(await store.search("alpha", k=10, scope=ACME)) == 1  # cached
        writer = spawn("writer", str(db), "1", str(size))
        try:
            await asyncio.to_thread(read_until, writer, "begin 0")
            await until_locked(db, writer)
            await store.upsert([Chunk("ours", "alpha ours")], scope=ACME)  # waits for it
            await asyncio.to_thread(read_until, writer, "done 0")
        finally:
            await asyncio.to_thread(finish, writer)
        assert await store.count(scope=ACME) == size + 2
        await assert_search_matches_rows(store)


async def test_second_store_object_commit_during_our_write_is_searchable(tmp_path: Path) -> None:
    db = tmp_path / "store.db"
    size = 20_000
    async with (
        SQLiteVectorStore(db, embedder=HashingEmbedder(dim=DIM)) as ours,
        SQLiteVectorStore(db, embedder=HashingEmbedder(dim=DIM)) as other,
    ):
        await ours.upsert([Chunk("seed", "alpha seed")], scope=ACME)
        assert len(await ours.search("alpha", k=10, scope=ACME)) == 1
        bulk = asyncio.create_task(
            other.upsert([Chunk(f"b{i}", f"alpha bulk {i}") for i in range(size)], scope=ACME)
        )
        await until_locked(db, bulk)
        await ours.upsert([Chunk("ours", "alpha ours")], scope=ACME)
        await bulk
        assert await ours.count(scope=ACME) == size + 2
        await assert_search_matches_rows(ours)
        await assert_search_matches_rows(other)


# -- a rowid freed by the other connection and taken by another tenant ----------------------


async def _seed_and_cache(store: SQLiteVectorStore) -> int:
    await store.upsert(
        [Chunk("one", "alpha one"), Chunk("mine", "alpha mine, acme only")], scope=ACME
    )
    assert len(await store.search("alpha", k=10, scope=ACME)) == 2  # vectors now cached
    rowid = rowid_of(store.path, "acme", "mine")
    assert rowid is not None
    return rowid


async def _assert_no_foreign_text(store: SQLiteVectorStore, db: Path, freed: int) -> None:
    # The scenario really happened: our deleted row's rowid now holds another tenant's.
    assert rowid_of(db, "acme", "mine") is None
    assert rowid_of(db, "globex", "theirs") == freed
    dense = await store.search("alpha", k=100, scope=ACME)
    lexical = await store.lexical_search("alpha globex secret plans", k=100, scope=ACME)
    for _, chunk in dense + lexical:
        assert "globex" not in chunk.text, f"another tenant's text under our id {chunk.id!r}"
    assert {c.id for _, c in dense} == {"one", "later"}
    await assert_search_matches_rows(store)


async def test_rowid_reused_by_another_process_never_shows_under_our_id(tmp_path: Path) -> None:
    db = tmp_path / "store.db"
    async with SQLiteVectorStore(db, embedder=HashingEmbedder(dim=DIM)) as store:
        freed = await _seed_and_cache(store)
        other = spawn("reuse", str(db), "acme", "mine")
        try:
            await asyncio.to_thread(read_until, other, "locked")
            ours = asyncio.create_task(store.upsert([Chunk("later", "alpha later")], scope=ACME))
            await asyncio.sleep(0.3)  # our write is now waiting for the lock
            assert not ours.done()
            assert other.stdin is not None
            other.stdin.write("go\n")
            other.stdin.flush()
            await asyncio.to_thread(read_until, other, "done")
            await ours
        finally:
            await asyncio.to_thread(finish, other)
        await _assert_no_foreign_text(store, db, freed)


async def test_rowid_reused_by_another_connection_never_shows_under_our_id(
    tmp_path: Path,
) -> None:
    db = tmp_path / "store.db"
    async with SQLiteVectorStore(db, embedder=HashingEmbedder(dim=DIM)) as store:
        freed = await _seed_and_cache(store)
        conn = sqlite3.connect(db, isolation_level=None)
        try:
            conn.execute("BEGIN IMMEDIATE")
            ours = asyncio.create_task(store.upsert([Chunk("later", "alpha later")], scope=ACME))
            await asyncio.sleep(0.3)
            assert not ours.done()
            conn.execute("DELETE FROM chunks WHERE org = 'acme' AND id = 'mine'")
            conn.execute(
                "INSERT INTO chunks(org, domain, id, text, metadata, vector) "
                "VALUES ('globex', 'support', 'theirs', 'globex secret plans', '{}', ?)",
                (bytes(4 * DIM),),
            )
            conn.execute("COMMIT")
            await ours
        finally:
            conn.close()
        await _assert_no_foreign_text(store, db, freed)


async def test_rowid_reused_through_a_second_store_object(tmp_path: Path) -> None:
    """The same through the store's own API: delete, then another tenant's insert."""
    db = tmp_path / "store.db"
    globex = Scope("globex", "support")
    async with (
        SQLiteVectorStore(db, embedder=HashingEmbedder(dim=DIM)) as store,
        SQLiteVectorStore(db, embedder=HashingEmbedder(dim=DIM)) as other,
    ):
        freed = await _seed_and_cache(store)
        await other.delete(["mine"], scope=ACME)
        await other.upsert([Chunk("theirs", "globex secret plans")], scope=globex)
        await store.upsert([Chunk("later", "alpha later")], scope=ACME)
        await _assert_no_foreign_text(store, db, freed)
