"""The SQLite store's dense index, shared by processes, under crashes, races and damage.

Every check compares with the truth: an exact product over the rows the file holds,
read with plain ``sqlite3``. Small thresholds (a graph from 200 rows, a fold every 150
changes) make the approximate path, folds and their publication happen at test sizes;
the code paths are the ones a million-record scope takes.
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
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from agentkit.kernel import Scope
from agentkit.vector import Chunk, HashingEmbedder, SQLiteVectorStore, _dense_index
from agentkit.vector._dense_index import DenseIndexes
from agentkit.vector._derived import STAMP

ACME = Scope("acme", "support")
DIM = 32
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def small_thresholds(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_dense_index, "ANN_FROM", 200)
    monkeypatch.setattr(_dense_index, "FOLD_AT", 150)


def clustered(n: int, seed: int) -> npt.NDArray[np.float32]:
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((30, DIM)).astype(np.float32)
    out = centres[rng.integers(0, 30, n)] + 0.35 * rng.standard_normal((n, DIM))
    out /= np.linalg.norm(out, axis=1, keepdims=True)
    return out.astype(np.float32)


def truth(db: Path, scope: Scope, query: npt.NDArray[np.float32], k: int) -> list[str]:
    with sqlite3.connect(db) as conn:
        rows = conn.execute(
            "SELECT id, vector FROM chunks WHERE org = ? AND domain = ? ORDER BY rowid",
            (scope.org_id, scope.domain_id),
        ).fetchall()
    if not rows:
        return []
    vecs = np.frombuffer(b"".join(r[1] for r in rows), np.float32).reshape(len(rows), DIM)
    scores = vecs @ query
    return [rows[i][0] for i in np.argsort(-scores, kind="stable")[:k]]


def ids_in(db: Path, scope: Scope) -> set[str]:
    with sqlite3.connect(db) as conn:
        rows = conn.execute(
            "SELECT id FROM chunks WHERE org = ? AND domain = ?", (scope.org_id, scope.domain_id)
        )
        return {r[0] for r in rows}


async def load(store: SQLiteVectorStore, n: int, seed: int, scope: Scope = ACME,
               prefix: str = "d") -> None:
    vectors = clustered(n, seed)
    await store.upsert_vectors(
        [Chunk(f"{prefix}{i}", f"text {i}") for i in range(n)], vectors, scope=scope
    )


def _wait_for_folds() -> None:
    deadline = time.monotonic() + 30
    while any(t.name == "agentkit-sqlite-fold" for t in __import__("threading").enumerate()):
        assert time.monotonic() < deadline, "a fold never finished"
        time.sleep(0.05)


async def test_exact_and_approximate_search_agree_with_the_rows(tmp_path: Path) -> None:
    db = tmp_path / "store.db"
    async with SQLiteVectorStore(db, embedder=HashingEmbedder(dim=DIM)) as store:
        await load(store, 1000, seed=1)
        hits = 0
        for q in clustered(10, seed=2):
            want = truth(db, ACME, q, 10)
            exact = await store.search_by_vector(q, k=10, scope=ACME, exact=True)
            assert [c.id for _, c in exact] == want
            approx = await store.search_by_vector(q, k=10, scope=ACME)
            hits += len({c.id for _, c in approx} & set(want))
        assert hits >= 90
        with pytest.raises(TypeError, match="exact"):
            await store.search_by_vector(q, k=3, scope=ACME, exact="yes")  # type: ignore[arg-type]


async def test_folds_happen_as_a_scope_grows_and_reads_stay_true(tmp_path: Path) -> None:
    db = tmp_path / "store.db"
    async with SQLiteVectorStore(db, embedder=HashingEmbedder(dim=DIM)) as store:
        q = clustered(1, seed=9)[0]
        for batch in range(8):
            await load(store, 100, seed=10 + batch, prefix=f"b{batch}-")
            await store.delete([f"b{batch}-{i}" for i in range(0, 100, 10)], scope=ACME)
            got = await store.search_by_vector(q, k=10, scope=ACME, exact=True)
            assert [c.id for _, c in got] == truth(db, ACME, q, 10)
        _wait_for_folds()
        folder = next(p for p in (tmp_path / "store.db.dense").iterdir() if p.is_dir())
        stamp = json.loads((folder / STAMP).read_text())
        assert stamp["graph"] and stamp["gen"] > 0  # a fold published a graph
        got = await store.search_by_vector(q, k=10, scope=ACME, exact=True)
        assert [c.id for _, c in got] == truth(db, ACME, q, 10)


async def test_a_writer_that_outruns_the_folds_waits_for_the_one_under_way(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bulk load writes rows faster than a fold adds them to the graph; the writer
    waits once the changes since the base reach twice the fold threshold, so what each
    reader holds beside the base (and searches exactly) stays bounded."""
    started, release = threading.Event(), threading.Event()
    fold = DenseIndexes.fold

    def held_fold(self: DenseIndexes, bucket: tuple[str, str], snapshot: Any) -> bool:
        started.set()
        assert release.wait(60)
        return fold(self, bucket, snapshot)

    monkeypatch.setattr(DenseIndexes, "fold", held_fold)
    db = tmp_path / "store.db"
    async with SQLiteVectorStore(db, embedder=HashingEmbedder(dim=DIM)) as store:
        await load(store, 160, seed=1, prefix="a")  # 160 changes >= 150: a fold starts
        assert await asyncio.to_thread(started.wait, 30)
        await load(store, 100, seed=2, prefix="b")  # 260 < 2 x 150: no wait
        write = asyncio.ensure_future(load(store, 100, seed=3, prefix="c"))  # 360: waits
        await asyncio.sleep(0.5)
        assert not write.done()  # held until the fold under way is done
        release.set()
        await asyncio.wait_for(write, 60)
        _wait_for_folds()
        folder = next(p for p in (tmp_path / "store.db.dense").iterdir() if p.is_dir())
        assert json.loads((folder / STAMP).read_text())["gen"] >= 260
        q = clustered(1, seed=3)[0]
        got = await store.search_by_vector(q, k=10, scope=ACME, exact=True)
        assert [c.id for _, c in got] == truth(db, ACME, q, 10)


async def test_a_deleted_record_is_never_returned_from_a_stale_base(tmp_path: Path) -> None:
    db = tmp_path / "store.db"
    async with SQLiteVectorStore(db, embedder=HashingEmbedder(dim=DIM)) as store:
        await load(store, 600, seed=3)
        queries = clustered(5, seed=4)
        for q in queries:
            await store.search_by_vector(q, k=10, scope=ACME)  # the base is mapped now
        # Another program deletes every record some query ranks first, and half the rest.
        doomed = set()
        for q in queries:
            doomed |= set(truth(db, ACME, q, 20))
        doomed |= {f"d{i}" for i in range(0, 600, 2)}
        with sqlite3.connect(db) as other:
            other.executemany("DELETE FROM chunks WHERE id = ?", [(d,) for d in doomed])
        for q in queries:
            for exact in (False, True):
                got = await store.search_by_vector(q, k=50, scope=ACME, exact=exact)
                assert not {c.id for _, c in got} & doomed
                assert len(got) == 50


async def test_deletes_racing_queries_never_show_a_deleted_record(tmp_path: Path) -> None:
    db = tmp_path / "store.db"
    async with SQLiteVectorStore(db, embedder=HashingEmbedder(dim=DIM)) as store:
        await load(store, 800, seed=5)
        queries = clustered(20, seed=6)
        gone: set[str] = set()

        async def deleter() -> None:
            for start in range(0, 800, 40):
                batch = [f"d{i}" for i in range(start, start + 40, 3)]
                await store.delete(batch, scope=ACME)
                gone.update(batch)  # only once the delete returned

        async def reader() -> None:
            for _ in range(3):
                for q in queries:
                    before = set(gone)
                    got = await store.search_by_vector(q, k=10, scope=ACME)
                    assert not {c.id for _, c in got} & before

        await asyncio.gather(deleter(), reader(), reader())


ODD = [
    Scope("a/b", "../c"),
    Scope("ünïcødé", "🙂 emoji"),
    Scope("dots.", ".."),
    Scope("x" * 300, "long"),
    Scope("acme", "support "),
]


async def test_tenants_with_odd_scope_ids_each_see_their_own(tmp_path: Path) -> None:
    db = tmp_path / "store.db"
    async with SQLiteVectorStore(db, embedder=HashingEmbedder(dim=DIM)) as store:
        for i, scope in enumerate([ACME, *ODD]):
            await load(store, 250, seed=20 + i, scope=scope, prefix=f"t{i}-")
        for i, scope in enumerate([ACME, *ODD]):
            for q in clustered(3, seed=40 + i):
                got = await store.search_by_vector(q, k=10, scope=scope)
                assert {c.id for _, c in got} <= ids_in(db, scope)
                exact = await store.search_by_vector(q, k=10, scope=scope, exact=True)
                assert [c.id for _, c in exact] == truth(db, scope, q, 10)
    names = [p.name for p in (tmp_path / "store.db.dense").iterdir()]
    assert all(len(n.split(".")[0]) == 64 for n in names)  # hashes: no id reaches a path


@pytest.mark.parametrize("damage", ["truncate", "garbage", "delete"])
async def test_a_damaged_index_file_is_rebuilt_from_the_rows(
    tmp_path: Path, damage: str
) -> None:
    db = tmp_path / "store.db"
    q = clustered(1, seed=8)[0]
    async with SQLiteVectorStore(db, embedder=HashingEmbedder(dim=DIM)) as store:
        await load(store, 500, seed=7)
        await store.search_by_vector(q, k=10, scope=ACME)
    folder = next(p for p in (tmp_path / "store.db.dense").iterdir() if p.is_dir())
    victims = [p for p in folder.iterdir() if p.name.startswith("base-")]
    assert victims
    for path in victims:
        if damage == "truncate":
            path.write_bytes(path.read_bytes()[: path.stat().st_size // 3])
        elif damage == "garbage":
            path.write_bytes(os.urandom(path.stat().st_size))
        else:
            path.unlink()
    calls: list[tuple[str, int, int]] = []
    async with SQLiteVectorStore(
        db, embedder=HashingEmbedder(dim=DIM), progress=lambda *a: calls.append(a)
    ) as store:
        got = await store.search_by_vector(q, k=10, scope=ACME, exact=True)
        assert [c.id for _, c in got] == truth(db, ACME, q, 10)
        got = await store.search_by_vector(q, k=10, scope=ACME)
        assert {c.id for _, c in got} <= ids_in(db, ACME)
    assert calls and calls[-1][1:] == (500, 500)


READER = textwrap.dedent(
    """
    import asyncio, json, sys
    import numpy as np
    from agentkit.kernel import Scope
    from agentkit.vector import HashingEmbedder, SQLiteVectorStore

    async def main():
        store = SQLiteVectorStore(sys.argv[1], embedder=HashingEmbedder(dim=int(sys.argv[2])))
        async with store:
            for line in sys.stdin:
                q = np.array(json.loads(line), dtype=np.float32)
                got = await store.search_by_vector(q, k=5, scope=Scope("acme", "support"))
                print(json.dumps([c.id for _, c in got]), flush=True)

    asyncio.run(main())
    """
)


async def _seeded(db: Path, n: int, seed: int) -> None:
    async with SQLiteVectorStore(db, embedder=HashingEmbedder(dim=DIM)) as store:
        await load(store, n, seed=seed)


def test_a_long_lived_reader_process_sees_another_process_write(tmp_path: Path) -> None:
    db = tmp_path / "store.db"
    asyncio.run(_seeded(db, 400, seed=11))
    reader = subprocess.Popen(
        [sys.executable, "-c", READER, str(db), str(DIM)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    assert reader.stdin is not None and reader.stdout is not None

    def ask(q: npt.NDArray[np.float32]) -> list[str]:
        assert reader.stdin is not None and reader.stdout is not None
        reader.stdin.write(json.dumps(q.tolist()) + "\n")
        reader.stdin.flush()
        return list(json.loads(reader.stdout.readline()))

    try:
        q = clustered(1, seed=12)[0]
        first = ask(q)
        assert first == truth(db, ACME, q, 5)[: len(first)]

        async def write() -> None:
            async with SQLiteVectorStore(db, embedder=HashingEmbedder(dim=DIM)) as writer:
                await writer.upsert_vectors(
                    [Chunk("fresh", "a new record")], q[None, :], scope=ACME
                )
                await writer.delete([first[0]], scope=ACME)

        asyncio.run(write())
        again = ask(q)
        assert again[0] == "fresh" and first[0] not in again
    finally:
        reader.stdin.close()
        reader.wait(timeout=60)


WRITER = textwrap.dedent(
    """
    import asyncio, sys
    import numpy as np
    from agentkit.kernel import Scope
    from agentkit.vector import Chunk, HashingEmbedder, SQLiteVectorStore
    from agentkit.vector import _dense_index
    _dense_index.ANN_FROM, _dense_index.FOLD_AT = 200, 150

    async def main():
        dim = int(sys.argv[2])
        rng = np.random.default_rng(int(sys.argv[3]))
        async with SQLiteVectorStore(sys.argv[1], embedder=HashingEmbedder(dim=dim)) as store:
            batch = 0
            while True:
                ids = [f"w{batch}-{i}" for i in range(60)]
                vecs = rng.standard_normal((60, dim)).astype(np.float32)
                await store.upsert_vectors([Chunk(i, i) for i in ids], vecs,
                                           scope=Scope("acme", "support"))
                await store.delete(ids[::4], scope=Scope("acme", "support"))
                await store.search_by_vector(vecs[0], k=3, scope=Scope("acme", "support"))
                batch += 1
                print(batch, flush=True)

    asyncio.run(main())
    """
)


@pytest.mark.parametrize("delay", [0.4, 1.1, 2.3])
def test_kill_9_at_any_point_leaves_a_store_that_answers_correctly(
    tmp_path: Path, delay: float
) -> None:
    db = tmp_path / "store.db"
    asyncio.run(_seeded(db, 300, seed=13))
    child = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(db), str(DIM), str(int(delay * 10))],
        stdout=subprocess.PIPE, text=True, cwd=ROOT,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    assert child.stdout is not None
    child.stdout.readline()  # one batch in, folds under way
    time.sleep(delay)
    os.kill(child.pid, signal.SIGKILL)
    child.wait(timeout=30)

    async def check() -> None:
        async with SQLiteVectorStore(db, embedder=HashingEmbedder(dim=DIM)) as store:
            live = ids_in(db, ACME)
            for q in clustered(5, seed=14):
                got = await store.search_by_vector(q, k=10, scope=ACME, exact=True)
                assert [c.id for _, c in got] == truth(db, ACME, q, 10)
                approx = await store.search_by_vector(q, k=10, scope=ACME)
                assert len(approx) == 10 and {c.id for _, c in approx} <= live

    asyncio.run(check())
