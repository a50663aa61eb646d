"""The dense index under a real ``kill -9`` and a real second process (issue #25).

A writer process loads a scope in batches, its folds publishing new bases as it goes; it
is killed with SIGKILL right after a commit (rows in, index not yet caught up), while a
base's files are half written, or at an arbitrary moment. Whatever the moment, the next
process opens the store and answers from what the rows hold: every committed record is
there, an exact search equals the product over the rows, and an approximate one returns
only live rows of the scope. Then a delete racing queries in another process: a record
whose delete committed before a query began is never in that query's answer.

The writer runs with small ``ANN_FROM``/``FOLD_AT`` (the module values a store picks up
when it opens), so a few thousand records exercise graphs and folds.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from agentkit.kernel import Scope
from agentkit.vector import Chunk, HashingEmbedder, SQLiteVectorStore

DIM = 32
ACME = Scope("acme", "support")

_PRELUDE = textwrap.dedent(
    """
    import asyncio, sys
    import numpy as np
    from agentkit.vector import _dense_index
    _dense_index.ANN_FROM = 400
    _dense_index.FOLD_AT = 150
    from agentkit.kernel import Scope
    from agentkit.vector import Chunk, HashingEmbedder, SQLiteVectorStore
    DIM = 32
    ACME = Scope("acme", "support")

    def clustered(n, seed):
        rng = np.random.default_rng(seed)
        centres = np.random.default_rng(0).standard_normal((40, DIM)).astype(np.float32)
        out = centres[rng.integers(0, 40, n)] + 0.35 * rng.standard_normal((n, DIM))
        out /= np.linalg.norm(out, axis=1, keepdims=True)
        return out.astype(np.float32)
    """
)

_WRITER = _PRELUDE + textwrap.dedent(
    """
    async def main(path, batches):
        async with SQLiteVectorStore(path, embedder=HashingEmbedder(dim=DIM)) as store:
            for b in range(batches):
                ids = [f"b{b}-{i}" for i in range(100)]
                await store.upsert_vectors(
                    [Chunk(i, f"text {i}", {"batch": b}) for i in ids],
                    clustered(100, seed=b), scope=ACME,
                )
                if b % 3 == 2:  # some records replaced, some deleted, as users do
                    await store.delete([f"b{b - 1}-{i}" for i in range(0, 100, 7)], scope=ACME)
                print(f"committed {b}", flush=True)

    asyncio.run(main(sys.argv[1], int(sys.argv[2])))
    """
)


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([p for p in sys.path if p])
    return env


def _clustered(n: int, seed: int) -> npt.NDArray[np.float32]:
    rng = np.random.default_rng(seed)
    centres = np.random.default_rng(0).standard_normal((40, DIM)).astype(np.float32)
    out = centres[rng.integers(0, 40, n)] + 0.35 * rng.standard_normal((n, DIM))
    out /= np.linalg.norm(out, axis=1, keepdims=True)
    return out.astype(np.float32)


def _rows(db: Path) -> dict[str, npt.NDArray[np.float32]]:
    with sqlite3.connect(db) as conn:
        rows = conn.execute(
            "SELECT id, vector FROM chunks WHERE org = 'acme' AND domain = 'support'"
        ).fetchall()
    return {cid: np.frombuffer(v, dtype=np.float32) for cid, v in rows}


def _half_written(db: Path) -> bool:
    folder = db.with_name(db.name + ".dense")
    if not folder.exists():
        return False
    return any(p.name.endswith(".tmp") for p in folder.rglob("*"))


def _committed(lines: list[str]) -> int:
    return sum(1 for line in lines if line.startswith("committed "))


async def _answers_from_the_rows(db: Path, committed: int) -> None:
    rows = _rows(db)
    # Every batch the writer said it committed is there, less what it said it deleted
    # (batch b's commit deletes every 7th record of batch b - 1 when b % 3 == 2).
    for b in range(committed):
        kept = {f"b{b}-{i}" for i in range(100) if i % 7}
        assert kept <= set(rows), f"batch {b} lost records"
        sevenths = {f"b{b}-{i}" for i in range(0, 100, 7)}
        if (b + 1) % 3 == 2 and b + 1 < committed:
            assert not sevenths & set(rows), f"batch {b}'s deleted records are back"
        elif (b + 1) % 3 != 2:
            assert sevenths <= set(rows), f"batch {b} lost records"
    ids = sorted(rows)
    matrix = np.stack([rows[i] for i in ids])
    async with SQLiteVectorStore(db, embedder=HashingEmbedder(dim=DIM)) as store:
        for query in _clustered(8, seed=999):
            exact = await store.search_by_vector(query, k=10, scope=ACME, exact=True)
            scores = matrix @ query
            best = [ids[i] for i in np.argsort(-scores, kind="stable")[:10]]
            assert [c.id for _, c in exact] == best
            approx = await store.search_by_vector(query, k=10, scope=ACME)
            assert len(approx) == min(10, len(ids))
            assert {c.id for _, c in approx} <= set(rows)
            overlap = len({c.id for _, c in approx} & set(best))
            assert overlap >= 7, f"approximate search lost the scope ({overlap}/10)"
        statuses = await store.check_indexes()
        assert statuses, "check_indexes reports the scope's indexes"


@pytest.mark.parametrize("moment", ["after_commit", "half_written", "arbitrary"])
def test_kill_9_at_any_step_of_a_write_leaves_a_store_that_answers_from_its_rows(
    tmp_path: Path, moment: str
) -> None:
    db = tmp_path / "store.db"
    proc = subprocess.Popen(
        [sys.executable, "-c", _WRITER, str(db), "60"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(),
    )
    assert proc.stdout is not None
    lines: list[str] = []
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            lines.append(line)
            n = _committed(lines)
            if moment == "after_commit" and n >= 12:
                break  # the rows are in; the index has not caught up with them yet
            if moment == "half_written" and n >= 6:
                while time.monotonic() < deadline and proc.poll() is None:
                    if _half_written(db):
                        break
                    time.sleep(0.0005)
                break
            if moment == "arbitrary" and n >= 5:
                time.sleep(0.37)
                break
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.kill()
        proc.wait()
    # The writer may have committed more than it printed before dying: count what it said.
    asyncio.run(_answers_from_the_rows(db, _committed(lines)))
    # A second opening (after the first one repaired or caught up) answers the same.
    asyncio.run(_answers_from_the_rows(db, _committed(lines)))


_DELETER = _PRELUDE + textwrap.dedent(
    """
    async def main(path):
        async with SQLiteVectorStore(path, embedder=HashingEmbedder(dim=DIM)) as store:
            for i in range(0, 600, 3):
                await store.delete([f"r{i}", f"r{i + 1}", f"r{i + 2}"], scope=ACME)
                print(f"deleted {i} {i + 1} {i + 2}", flush=True)

    asyncio.run(main(sys.argv[1]))
    """
)


def test_a_delete_racing_queries_in_another_process_is_never_returned_once_committed(
    tmp_path: Path,
) -> None:
    db = tmp_path / "store.db"
    vectors = _clustered(1200, seed=5)
    # The first 600 records sit near the queries, so deleting them changes the answers.
    queries = _clustered(1, seed=5)[0:1]
    vectors[:600] = queries[0] + 0.05 * _clustered(600, seed=6)
    vectors[:600] /= np.linalg.norm(vectors[:600], axis=1, keepdims=True)

    async def race() -> None:
        async with SQLiteVectorStore(db, embedder=HashingEmbedder(dim=DIM)) as store:
            await store.upsert_vectors(
                [Chunk(f"r{i}", f"text {i}", {}) for i in range(1200)], vectors, scope=ACME
            )
            await store.search_by_vector(queries[0], k=10, scope=ACME)  # index built, warm
            proc = await asyncio.create_subprocess_exec(
                sys.executable,
                "-c",
                _DELETER,
                str(db),
                stdout=asyncio.subprocess.PIPE,
                env=_env(),
            )
            assert proc.stdout is not None
            deleted: set[str] = set()
            checked = 0

            async def read_deletes() -> None:
                assert proc.stdout is not None
                async for raw in proc.stdout:
                    deleted.update(f"r{i}" for i in raw.decode().split()[1:])

            reader = asyncio.create_task(read_deletes())
            try:
                while proc.returncode is None and checked < 2000:
                    before = set(deleted)  # committed before this query began
                    for exact in (False, True):
                        hits = await store.search_by_vector(
                            queries[0], k=10, scope=ACME, exact=exact
                        )
                        assert len(hits) == 10
                        assert not {c.id for _, c in hits} & before
                    checked += 1
                    await asyncio.sleep(0)
                await proc.wait()
                await reader
            finally:
                if proc.returncode is None:
                    proc.kill()
                    await proc.wait()
                reader.cancel()
            assert len(deleted) == 600 and checked > 5
            hits = await store.search_by_vector(queries[0], k=10, scope=ACME)
            assert all(int(c.id[1:]) >= 600 for _, c in hits)

    asyncio.run(race())


def test_scopes_with_odd_ids_keep_their_dense_indexes_apart(tmp_path: Path) -> None:
    db = tmp_path / "store.db"
    odd = [
        Scope("../..", "a/b"),
        Scope("..", "..%2F"),
        Scope("ünï cødé", "\\x00"),
        Scope("a", "b:c"),
        Scope("a:b", "c"),
    ]
    script = _PRELUDE + textwrap.dedent(
        """
        async def main(path):
            scopes = [Scope("../..", "a/b"), Scope("..", "..%2F"), Scope("ünï cødé", "\\\\x00"),
                      Scope("a", "b:c"), Scope("a:b", "c")]
            async with SQLiteVectorStore(path, embedder=HashingEmbedder(dim=DIM)) as store:
                for n, scope in enumerate(scopes):
                    await store.upsert_vectors(
                        [Chunk(f"s{n}-{i}", "t", {}) for i in range(500)],
                        clustered(500, seed=n), scope=scope,
                    )
                    await store.search_by_vector(clustered(1, seed=50)[0], k=5, scope=scope)

        asyncio.run(main(sys.argv[1]))
        """
    )
    subprocess.run([sys.executable, "-c", script, str(db)], check=True, env=_env())
    folder = db.with_name(db.name + ".dense")
    assert folder.is_dir()
    for path in folder.rglob("*"):
        assert path.resolve().is_relative_to(folder.resolve())

    async def check() -> None:
        async with SQLiteVectorStore(db, embedder=HashingEmbedder(dim=DIM)) as store:
            for n, scope in enumerate(odd):
                for exact in (False, True):
                    hits = await store.search_by_vector(
                        _clustered(1, seed=50)[0], k=20, scope=scope, exact=exact
                    )
                    assert len(hits) == 20
                    assert all(c.id.startswith(f"s{n}-") for _, c in hits)

    asyncio.run(check())
