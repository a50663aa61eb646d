"""Child processes for the durability tests: a writer to kill and a reader that polls.

Run as a script: ``python _sqlite_worker.py writer DB BATCHES SIZE``,
``python _sqlite_worker.py reader DB TARGET_ROWS SECONDS`` or
``python _sqlite_worker.py reuse DB ORG ID``. Each line the writer prints is a progress
event the parent can act on; the reader prints one JSON list of what it saw. ``reuse``
is another connection (an older agentkit, a script) that takes the write lock, waits for
a line on stdin, then deletes chunk ID of ORG/support and inserts a chunk for another
tenant, which takes over the freed rowid.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import sys
import time
from pathlib import Path

from agentkit.kernel import Scope
from agentkit.vector import Chunk, HashingEmbedder, SQLiteVectorStore

SCOPE = Scope("acme", "support")
DIM = 64


def batch(i: int, size: int) -> list[Chunk]:
    return [
        Chunk(f"b{i}-{j}", f"batch {i} row {j} alpha words", {"batch": i, "row": j})
        for j in range(size)
    ]


async def writer(db: Path, batches: int, size: int) -> None:
    async with SQLiteVectorStore(db, embedder=HashingEmbedder(dim=DIM)) as store:
        for i in range(batches):
            chunks = batch(i, size)
            print(f"begin {i}", flush=True)
            await store.upsert(chunks, scope=SCOPE)
            print(f"done {i}", flush=True)


async def reader(db: Path, target: int, seconds: float) -> None:
    """Poll count and a full search until ``target`` rows are visible (then a few more)."""
    seen: list[tuple[int, int]] = []
    deadline = time.monotonic() + seconds
    extra = 5
    async with SQLiteVectorStore(db, embedder=HashingEmbedder(dim=DIM), create=False) as store:
        print("ready", flush=True)
        while time.monotonic() < deadline and extra:
            counted = await store.count(scope=SCOPE)
            found = len(await store.search("alpha", k=10**6, scope=SCOPE))
            seen.append((counted, found))
            if counted >= target:
                extra -= 1
    print(json.dumps(seen), flush=True)


def reuse(db: Path, org: str, cid: str) -> None:
    conn = sqlite3.connect(db, isolation_level=None, timeout=60)
    conn.execute("BEGIN IMMEDIATE")
    print("locked", flush=True)
    sys.stdin.readline()
    conn.execute("DELETE FROM chunks WHERE org = ? AND domain = 'support' AND id = ?", (org, cid))
    conn.execute(
        "INSERT INTO chunks(org, domain, id, text, metadata, vector) VALUES (?, ?, ?, ?, ?, ?)",
        ("globex", "support", "theirs", "globex secret plans", "{}", bytes(4 * DIM)),
    )
    conn.execute("COMMIT")
    conn.close()
    print("done", flush=True)


if __name__ == "__main__":
    role, path = sys.argv[1], Path(sys.argv[2])
    if role == "reuse":
        reuse(path, sys.argv[3], sys.argv[4])
    elif role == "writer":
        asyncio.run(writer(path, int(sys.argv[3]), int(sys.argv[4])))
    else:
        asyncio.run(reader(path, int(sys.argv[3]), float(sys.argv[4])))
