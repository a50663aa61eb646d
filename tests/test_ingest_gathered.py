"""``ingest`` gathers many documents into each store write, and stays repairable.

A store write costs mostly its commit, so ingest gathers whole documents into writes of
thousands of chunks. What a user relies on is unchanged by that: a document is never
split across writes, and a run killed at any moment (mid gathered write, or between a
write's upsert and its stale-chunk delete) leaves a store that the next run completes,
ending exactly as a clean run would, with nothing stale left behind.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agentkit.cli._ingest import WRITE_CHUNKS, ingest
from agentkit.kernel.ctx import Scope
from agentkit.vector import Chunk, HashingEmbedder, SQLiteVectorStore

SCOPE = Scope("acme", "docs")
FILES = 24
FLAGS = ["--chunk-size", "200", "--overlap", "20", "--batch", "300"]


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTKIT_")}
    env["AGENTKIT_EMBEDDER"] = "hashing"
    return env


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, "-m", "agentkit.cli", *args], cwd=cwd, env=_env(),
        capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    return done


def _write_docs(folder: Path, version: int, paragraphs: int) -> None:
    folder.mkdir(exist_ok=True)
    for f in range(FILES):
        body = "\n\n".join(
            f"Version {version} file {f} paragraph {p} says v{version}word{f}x{p} "
            + "filler words " * 8
            for p in range(paragraphs)
        )
        (folder / f"doc{f:02d}.md").write_text(f"# Doc {f}\n\n{body}\n")


def _rows(db: Path) -> list[tuple[Any, ...]]:
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        return sorted(conn.execute("SELECT org, domain, id, text, metadata FROM chunks"))


async def test_writes_gather_whole_documents_into_few_store_calls(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    _write_docs(folder, 1, 60)
    calls: list[list[Chunk]] = []

    class Counting(SQLiteVectorStore):  # observes the calls; the real store does the work
        async def upsert(self, chunks: Any, *, scope: Scope) -> None:
            calls.append(list(chunks))
            await super().upsert(chunks, scope=scope)

    async with Counting(tmp_path / "m.db", embedder=HashingEmbedder(64)) as store:
        one = await ingest(store, SCOPE, [str(folder)], size=200, overlap=20)
        assert one.docs == FILES and one.written == one.chunks < WRITE_CHUNKS
        assert len(calls) == 1  # the default gathers this whole corpus into one write
        calls.clear()
        _write_docs(folder, 2, 60)
        two = await ingest(store, SCOPE, [str(folder)], size=200, overlap=20, batch=300)
        assert two.written == two.chunks
        biggest = max(c.metadata["n_chunks"] for call in calls for c in call)
        assert 1 < len(calls) <= -(-two.chunks // 300)
        assert all(300 <= len(call) < 300 + biggest for call in calls[:-1])
        # No document is split across writes: a call holds every chunk of each it touches.
        for call in calls:
            per_doc: dict[str, list[Chunk]] = {}
            for chunk in call:
                per_doc.setdefault(chunk.metadata["path"], []).append(chunk)
            for chunks in per_doc.values():
                positions = sorted(c.metadata["position"] for c in chunks)
                assert positions == list(range(chunks[0].metadata["n_chunks"]))
        assert sum(len(call) for call in calls) == two.chunks
        assert await store.count(scope=SCOPE) == two.chunks  # same sizes: nothing stale


# The child is the real CLI; it announces each store call on stdout and then makes it, so
# the parent can kill it while a gathered write is under way ("upsert", the second one)
# or between a write's upsert and its stale-chunk delete ("delete", the first one).
KILLABLE = """
import sys
from agentkit.vector.sqlite import SQLiteVectorStore

def announce(name):
    real = getattr(SQLiteVectorStore, name)
    async def call(self, ids, *, scope):
        print(name, flush=True)
        return await real(self, ids, scope=scope)
    setattr(SQLiteVectorStore, name, call)

announce("upsert")
announce("delete")
from agentkit.cli import main
sys.exit(main(sys.argv[1:]))
"""


def _killed(cwd: Path, at: str, nth: int) -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", KILLABLE, "ingest", "docs", *FLAGS],
        cwd=cwd, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        assert child.stdout is not None
        seen = 0
        for line in child.stdout:
            seen += line.strip() == at
            if seen == nth:
                os.kill(child.pid, signal.SIGKILL)
                break
        else:
            raise AssertionError(f"child ended first: {child.wait()} {child.stderr}")
        child.wait(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
        child.communicate()
    assert child.returncode == -signal.SIGKILL


@pytest.mark.parametrize(("at", "nth"), [("upsert", 2), ("delete", 1)])
def test_a_run_killed_mid_gathered_write_is_completed_by_the_next(
    tmp_path: Path, at: str, nth: int
) -> None:
    # Version 1 is long; version 2 is shorter and reworded, so every document both
    # rewrites its chunks and leaves stale ones past its new end.
    _write_docs(tmp_path / "docs", 1, 60)
    _cli("ingest", "docs", *FLAGS, cwd=tmp_path)
    db = tmp_path / ".agentkit" / "memory.db"
    _write_docs(tmp_path / "docs", 2, 30)
    _killed(tmp_path, at, nth)
    _rows(db)  # opens, whole

    again = _cli("ingest", "docs", *FLAGS, cwd=tmp_path)
    assert "stale removed" in again.stderr and " 0 stale removed" not in again.stderr

    # The store now holds exactly what a clean run of version 2 makes, nothing more.
    _cli("--store", "fresh.db", "ingest", "docs", *FLAGS, cwd=tmp_path)
    assert _rows(db) == _rows(tmp_path / "fresh.db")

    third = _cli("ingest", "docs", *FLAGS, cwd=tmp_path)
    assert " 0 written" in third.stderr and " 0 stale removed" in third.stderr
    # Both indexes agree: a word only version 2 holds is found, one only version 1 held
    # is not.
    hit = _cli("query", "v2word7x3", "--lexical", "-k", "1", cwd=tmp_path).stdout
    assert "v2word7x3" in hit
    gone = _cli("query", "v1word7x40", "--lexical", "-k", "3", "--json", cwd=tmp_path).stdout
    assert all("v1word7x40" not in json.dumps(r) for r in json.loads(gone)["results"])
