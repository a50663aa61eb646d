"""An import killed with ``kill -9`` (or cancelled) mid-way leaves a store that a re-run
completes.

The import overlaps writing one batch with reading and embedding the next, so the kill
here lands while a write may be in flight. What a user relies on afterwards: the file
opens, holds whole records only (each with its text, metadata and a vector), the re-run
writes exactly what is missing and verifies every id, and a third run changes nothing.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from agentkit.kernel import Scope
from agentkit.migrate import Record, copy
from agentkit.migrate._copy import WRITE_ROWS
from agentkit.migrate._source import PAGE
from agentkit.vector import HashingEmbedder, SQLiteVectorStore

SCOPE = Scope("acme", "import")
DIM = 32
# The child's source blocks past its second write's launch: by then the first write has
# landed (a write is launched only after the one before it), the second may be in flight.
N = 2 * WRITE_ROWS + 4_000
STALL_AT = 2 * WRITE_ROWS + 1_500


def records() -> list[Record]:
    return [
        Record(f"r{i:05d}", f"record {i} speaks of token{i} and shared words",
               {"i": i, "source": f"/docs/{i % 17}.md"}, None)
        for i in range(N)
    ]


CHILD = textwrap.dedent(
    f"""
    import asyncio, sys
    from agentkit.kernel import Scope
    from agentkit.migrate import Record, copy
    from agentkit.vector import HashingEmbedder, SQLiteVectorStore

    def source():
        for i in range({N}):
            if i == {STALL_AT}:
                print("stalled", flush=True)
                sys.stdin.readline()  # blocks until the parent kills us
            yield Record(f"r{{i:05d}}", f"record {{i}} speaks of token{{i}} and shared words",
                         {{"i": i, "source": f"/docs/{{i % 17}}.md"}}, None)

    async def main():
        async with SQLiteVectorStore(sys.argv[1], embedder=HashingEmbedder({DIM})) as store:
            await copy(source(), store, scope=Scope("acme", "import"),
                       progress=lambda n: print("wrote", n, flush=True))

    asyncio.run(main())
    """
)


def killed_mid_import(db: Path) -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(db)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        assert child.stdout is not None
        for line in child.stdout:
            if line.strip() == "stalled":
                break
        else:
            raise AssertionError(f"child ended early: {child.wait()} {child.stderr}")
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
        child.wait()
        for stream in (child.stdin, child.stdout, child.stderr):
            if stream is not None:
                stream.close()
    assert child.returncode == -signal.SIGKILL


def whole_rows(db: Path) -> int:
    """Rows after the kill; each one whole (text, JSON metadata, a DIM-wide vector)."""
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        rows = conn.execute("SELECT id, text, metadata, length(vector) FROM chunks").fetchall()
    for cid, text, meta, width in rows:
        i = int(cid[1:])
        assert text == f"record {i} speaks of token{i} and shared words"
        assert json.loads(meta) == {"i": i, "source": f"/docs/{i % 17}.md"}
        assert width == DIM * 4
    return len(rows)


async def test_kill_9_mid_import_then_rerun_completes_and_a_third_run_changes_nothing(
    tmp_path: Path,
) -> None:
    db = tmp_path / "store.db"
    killed_mid_import(db)
    survived = whole_rows(db)
    assert 0 < survived < N  # a write landed; the source never got past STALL_AT

    async with SQLiteVectorStore(db, embedder=HashingEmbedder(DIM)) as store:
        again = await copy(records(), store, scope=SCOPE)
        assert again.verified and again.held == N, again.lines()
        assert (again.new, again.updated, again.unchanged) == (N - survived, 0, survived)
        # Both indexes agree with the rows: a word only the last record holds is found.
        [(_, hit)] = await store.lexical_search(f"token{N - 1}", k=3, scope=SCOPE)
        assert hit.id == f"r{N - 1:05d}"
        dense = await store.search("record 7 speaks of token7", k=1, scope=SCOPE)
        assert dense[0][1].id == "r00007"

        third = await copy(records(), store, scope=SCOPE)
        assert third.verified and third.held == N
        assert (third.new, third.updated, third.unchanged) == (0, 0, N)
    assert whole_rows(db) == N


async def test_a_cancelled_import_leaves_no_task_and_whole_writes_a_rerun_completes(
    tmp_path: Path,
) -> None:
    db = tmp_path / "store.db"
    async with SQLiteVectorStore(db, embedder=HashingEmbedder(DIM)) as store:
        job: asyncio.Task[object] | None = None

        landed_sizes: list[int] = []

        def landed(n: int) -> None:  # the first write has landed: give up now
            assert job is not None
            landed_sizes.append(n)
            job.cancel()

        job = asyncio.create_task(copy(records(), store, scope=SCOPE, progress=landed))
        with pytest.raises(asyncio.CancelledError):
            await job
        assert asyncio.all_tasks() == {asyncio.current_task()}  # no write left behind
        held = await store.count(scope=SCOPE)
        # Whole writes only: the one that landed, plus the one in flight if it had
        # begun committing; each write is whole pages of the source.
        assert 0 < landed_sizes[0] <= held < N and held % PAGE == 0
        again = await copy(records(), store, scope=SCOPE)
        assert again.verified and again.held == N
        assert (again.new, again.unchanged) == (N - held, held)
