"""SQLite durability across processes: a killed writer, a reader that never sees half.

The writer and the reader are real child processes (``_sqlite_worker.py``). The kill
lands while the writer provably holds the write transaction: the parent polls with
``BEGIN IMMEDIATE`` (timeout 0) and fires SIGKILL as soon as that is refused.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agentkit.kernel import Scope
from agentkit.vector import Chunk, HashingEmbedder, SQLiteVectorStore

WORKER = Path(__file__).with_name("_sqlite_worker.py")
SCOPE = Scope("acme", "support")
DIM = 64


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
            raise AssertionError(f"worker exited before {wanted!r}: {proc.stderr.read()}")  # type: ignore[union-attr]
        if line.strip() == wanted:
            return
    raise AssertionError(f"no {wanted!r} within {timeout}s")


def writer_holds_lock(db: Path) -> bool:
    """True while another connection is inside a write transaction on ``db``."""
    conn = sqlite3.connect(db, timeout=0, isolation_level=None)
    try:
        conn.execute("BEGIN IMMEDIATE")
    except sqlite3.OperationalError as exc:
        if "locked" in str(exc) or "busy" in str(exc):
            return True
        raise
    else:
        conn.execute("ROLLBACK")
        return False
    finally:
        conn.close()


def batch_counts(db: Path) -> dict[int, int]:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        rows = conn.execute(
            "SELECT json_extract(metadata, '$.batch'), count(*) FROM chunks "
            "WHERE org = ? AND domain = ? GROUP BY 1",
            ("acme", "support"),
        ).fetchall()
    return {int(b): int(n) for b, n in rows}


def integrity(db: Path) -> None:
    with sqlite3.connect(db, isolation_level=None) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


SIZE = 8_000


@pytest.mark.parametrize("delay", [0.0, 0.02])
def test_writer_killed_mid_batch_leaves_whole_batches_only(tmp_path: Path, delay: float) -> None:
    db = tmp_path / "store.db"
    writer = spawn("writer", str(db), "3", str(SIZE))
    try:
        wait_line(writer, "done 0")  # batch 0 is committed
        wait_line(writer, "begin 1")
        deadline = time.monotonic() + 60
        while not writer_holds_lock(db):
            assert writer.poll() is None, "writer finished before it could be caught"
            assert time.monotonic() < deadline, "writer never took the write lock"
            time.sleep(0.002)
        time.sleep(delay)
        held_at_kill = writer_holds_lock(db)
        os.kill(writer.pid, signal.SIGKILL)
        writer.wait(timeout=30)
    finally:
        if writer.poll() is None:
            writer.kill()
        writer.wait()
        for stream in (writer.stdout, writer.stderr):
            if stream is not None:
                stream.close()
    assert writer.returncode == -signal.SIGKILL
    assert held_at_kill, "the kill did not land inside the write transaction"

    # Opens cleanly, and every batch is whole or absent; batch 1 died uncommitted.
    integrity(db)
    counts = batch_counts(db)
    assert counts == {0: SIZE}, counts

    async def reopen() -> None:
        async with SQLiteVectorStore(db, embedder=HashingEmbedder(dim=DIM)) as store:
            assert await store.count(scope=SCOPE) == SIZE
            hits = await store.lexical_search("batch row alpha", k=5, scope=SCOPE)
            assert len(hits) == 5 and all(c.metadata["batch"] == 0 for _, c in hits)
            # The store takes the lost batch again and ends whole.
            again = [Chunk(f"b1-{j}", f"batch 1 row {j}", {"batch": 1}) for j in range(SIZE)]
            await store.upsert(again, scope=SCOPE)
            assert await store.count(scope=SCOPE) == 2 * SIZE
            assert len(await store.search("batch 1 row 7", k=3, scope=SCOPE)) == 3

    asyncio.run(reopen())
    integrity(db)
    assert batch_counts(db) == {0: SIZE, 1: SIZE}


def test_reader_in_another_process_never_sees_half_a_batch(tmp_path: Path) -> None:
    db = tmp_path / "store.db"
    size, batches = 2_000, 6

    async def create() -> None:
        async with SQLiteVectorStore(db, embedder=HashingEmbedder(dim=DIM)):
            pass

    asyncio.run(create())
    reader = spawn("reader", str(db), str(size * batches), "120")
    writer = None
    try:
        wait_line(reader, "ready")
        writer = spawn("writer", str(db), str(batches), str(size))
        _, w_err = writer.communicate(timeout=120)
        assert writer.returncode == 0, w_err
        r_out, r_err = reader.communicate(timeout=120)
        assert reader.returncode == 0, r_err
    finally:
        for proc in (reader, writer):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.communicate()
    seen = [tuple(x) for x in json.loads(r_out.strip().splitlines()[-1])]
    assert seen, "the reader never polled"
    for counted, found in seen:
        assert counted % size == 0, f"reader saw {counted} rows: half a batch"
        assert found % size == 0, f"reader's search saw {found} rows: half a batch"
    distinct = {c for c, _ in seen}
    assert len(distinct) >= 3, f"reader did not overlap the writes: {sorted(distinct)}"
    assert max(distinct) <= batches * size
