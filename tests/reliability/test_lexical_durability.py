"""The per-scope lexical indexes beside a SQLite store never disagree with its rows.

A writer is killed (SIGKILL, a real child process) after its rows committed but before
their index did; another process writes and deletes; a plain ``sqlite3`` script changes
rows behind the store's back; the index files are lost or damaged. In every case the
next lexical search answers from exactly the rows the file holds.
"""

from __future__ import annotations

import asyncio
import fcntl
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from agentkit.kernel import Scope
from agentkit.vector import Chunk, HashingEmbedder, SQLiteVectorStore
from agentkit.vector._lexical_index import scope_dir_name

WORKER = Path(__file__).with_name("_sqlite_worker.py")
SCOPE = Scope("acme", "support")
DIM = 64
SIZE = 8_000


def spawn(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(WORKER), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_line(proc: subprocess.Popen[str], wanted: str, timeout: float = 60) -> None:
    assert proc.stdout is not None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            raise AssertionError(f"worker exited before {wanted!r}")
        if line.strip() == wanted:
            return
    raise AssertionError(f"no {wanted!r} within {timeout}s")


def sqlite_locked(db: Path) -> bool:
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


def lexical_locked(db: Path) -> bool:
    lock = db.with_name(db.name + ".lexical") / (scope_dir_name(("acme", "support")) + ".lock")
    if not lock.exists():
        return False
    fd = os.open(lock, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def row_ids(db: Path, org: str = "acme") -> set[str]:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        rows = conn.execute(
            "SELECT id FROM chunks WHERE org = ? AND domain = 'support'", (org,)
        ).fetchall()
    return {r[0] for r in rows}


async def lexical_ids(store: SQLiteVectorStore, query: str = "alpha") -> set[str]:
    return {c.id for _, c in await store.lexical_search(query, k=10**6, scope=SCOPE)}


def test_writer_killed_between_row_commit_and_index_commit(tmp_path: Path) -> None:
    # The probe sees the window, then kills; a writer descheduled-free for that long
    # can outrun it (finish, or pass the window), so a missed window is tried again on
    # a fresh file. Whatever the kill caught, the index must match the rows.
    caught = []
    for attempt in range(4):
        db = tmp_path / f"store{attempt}.db"
        killed, rows = _kill_writer_in_window(db)
        _assert_index_matches_rows(db, rows)
        if killed and len(rows) == 2 * SIZE:  # batch 1 landed in the rows, not in the index
            caught.append(attempt)
            break
    assert caught, "never killed the writer between its row commit and its index commit"


def _kill_writer_in_window(db: Path) -> tuple[bool, set[str]]:
    """Kill a writer once batch 1's rows are committed (SQLite lock free) while its
    index update still holds the scope's lexical lock; whether SIGKILL ended it, and
    the rows the file then holds."""
    writer = spawn("writer", str(db), "3", str(SIZE))
    try:
        wait_line(writer, "done 0")
        wait_line(writer, "begin 1")
        deadline = time.monotonic() + 60
        while writer.poll() is None:
            assert time.monotonic() < deadline, "never caught the writer between commits"
            if lexical_locked(db) and not sqlite_locked(db) and len(row_ids(db)) == 2 * SIZE:
                os.kill(writer.pid, signal.SIGKILL)
                break
            time.sleep(0.001)
        writer.wait(timeout=30)
    finally:
        if writer.poll() is None:
            writer.kill()
        _, err = writer.communicate()
    assert writer.returncode in (0, -signal.SIGKILL), err
    return writer.returncode == -signal.SIGKILL, row_ids(db)


def _assert_index_matches_rows(db: Path, rows: set[str]) -> None:
    async def reopen() -> None:
        async with SQLiteVectorStore(db, embedder=HashingEmbedder(dim=DIM)) as store:
            assert await lexical_ids(store) == rows
            hits = await store.lexical_search("batch 1 row 7", k=1, scope=SCOPE)
            assert [c.id for _, c in hits] == ["b1-7"]

    asyncio.run(reopen())


def test_other_processes_writes_deletes_and_scripts_are_seen(tmp_path: Path) -> None:
    db = tmp_path / "store.db"

    async def run() -> None:
        async with SQLiteVectorStore(db, embedder=HashingEmbedder(dim=DIM)) as store:
            await store.upsert([Chunk("mine", "alpha local words")], scope=SCOPE)
            assert await lexical_ids(store) == {"mine"}  # index cached in this process
            writer = spawn("writer", str(db), "2", "50")
            _, err = await asyncio.to_thread(writer.communicate, timeout=120)
            assert writer.returncode == 0, err
            assert await lexical_ids(store) == row_ids(db) and len(row_ids(db)) == 101
            # Another process deletes through its own store.
            code = (
                "import asyncio, sys\n"
                "from agentkit.kernel import Scope\n"
                "from agentkit.vector import HashingEmbedder, SQLiteVectorStore\n"
                "async def main():\n"
                f"    e = HashingEmbedder(dim={DIM})\n"
                "    async with SQLiteVectorStore(sys.argv[1], embedder=e) as s:\n"
                "        await s.delete(['b0-1', 'b1-2'], scope=Scope('acme', 'support'))\n"
                "        await s.delete_where({'batch': 1}, scope=Scope('acme', 'support'))\n"
                "asyncio.run(main())\n"
            )
            done = await asyncio.to_thread(
                subprocess.run, [sys.executable, "-c", code, str(db)],
                capture_output=True, text=True, timeout=120,
            )
            assert done.returncode == 0, done.stderr
            seen = await lexical_ids(store)
            assert seen == row_ids(db) and "b0-1" not in seen and len(seen) == 50
            # A plain sqlite3 script, which knows nothing of the index.
            with sqlite3.connect(db) as conn:
                conn.execute("DELETE FROM chunks WHERE id = 'mine'")
                conn.execute(
                    "INSERT INTO chunks(org, domain, id, text, metadata, vector) "
                    "VALUES ('acme', 'support', 'scripted', 'alpha zebra', '{}', ?)",
                    (bytes(4 * DIM),),
                )
            seen = await lexical_ids(store)
            assert "mine" not in seen and "scripted" in seen and seen == row_ids(db)
            hits = await store.lexical_search("zebra", k=3, scope=SCOPE)
            assert [c.id for _, c in hits] == ["scripted"]

    asyncio.run(run())


def test_deletes_obey_at_once_and_lost_index_files_are_rebuilt(tmp_path: Path) -> None:
    db = tmp_path / "store.db"
    other = Scope("acme", "sales")

    async def run() -> None:
        async with SQLiteVectorStore(db, embedder=HashingEmbedder(dim=DIM)) as store:
            await store.upsert(
                [Chunk(f"c{i}", f"alpha item {i}", {"odd": i % 2}) for i in range(20)],
                scope=SCOPE,
            )
            await store.upsert([Chunk("s", "alpha sales")], scope=other)
            assert len(await lexical_ids(store)) == 20
            await store.delete(["c0"], scope=SCOPE)
            assert "c0" not in await lexical_ids(store)
            await store.delete_where({"odd": 1}, scope=SCOPE)
            assert await lexical_ids(store) == {f"c{i}" for i in range(2, 20, 2)}
            await store.upsert([Chunk("c2", "beta only now")], scope=SCOPE)
            assert "c2" not in await lexical_ids(store)
            assert [c.id for _, c in await store.lexical_search("beta", k=5, scope=SCOPE)] == ["c2"]
            await store.delete_scope(scope=SCOPE)
            assert await lexical_ids(store) == set()
            hits = await store.lexical_search("alpha", k=5, scope=other)
            assert [c.id for _, c in hits] == ["s"]
            await store.upsert([Chunk("back", "alpha again")], scope=SCOPE)
        root = db.with_name(db.name + ".lexical")
        shutil.rmtree(root)  # the index files are lost
        async with SQLiteVectorStore(db, embedder=HashingEmbedder(dim=DIM)) as store:
            assert await lexical_ids(store) == {"back"}
        for sidecar in root.glob("*/agentkit-generation.json"):
            sidecar.write_text("{not json")  # damaged
        async with SQLiteVectorStore(db, embedder=HashingEmbedder(dim=DIM)) as store:
            assert await lexical_ids(store) == {"back"}
        async with SQLiteVectorStore(db, embedder=None, read_only=True) as store:
            assert await lexical_ids(store) == {"back"}

    asyncio.run(run())


def test_writes_keep_the_index_on_disk_current_for_read_only_readers(tmp_path: Path) -> None:
    """Ingest without a single read, then the sidecar vouches for the rows' generation,
    so a read-only opener (the CLI's query) serves from disk rather than rebuilding."""
    db = tmp_path / "store.db"

    async def run() -> None:
        async with SQLiteVectorStore(db, embedder=HashingEmbedder(dim=DIM)) as store:
            for i in range(3):
                await store.upsert([Chunk(f"c{i}", f"alpha {i}")], scope=SCOPE)
            await store.delete(["c1"], scope=SCOPE)
        with sqlite3.connect(db) as conn:
            gen = conn.execute(
                "SELECT gen FROM generations WHERE org = 'acme' AND domain = 'support'"
            ).fetchone()[0]
        sidecar = (
            db.with_name(db.name + ".lexical") / scope_dir_name(("acme", "support"))
            / "agentkit-generation.json"
        )
        assert json.loads(sidecar.read_text())["gen"] == gen
        async with SQLiteVectorStore(db, embedder=None, read_only=True) as store:
            assert await lexical_ids(store) == {"c0", "c2"}

    asyncio.run(run())
