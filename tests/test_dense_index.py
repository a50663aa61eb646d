"""The per-scope dense index beside a SQLite store: a memory-mapped base plus a delta read
from the change log, never wrong about what the rows hold.

Real parts throughout: a store file written by ``SQLiteVectorStore``, changes made by
plain ``sqlite3`` connections (as another process or program would), the real usearch
graph, real files damaged the way disks and crashes damage them. Vectors are clustered
(like real embeddings), so the approximate path's recall means something.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import gc
import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import numpy as np
import numpy.typing as npt
import pytest

from agentkit.kernel import Scope
from agentkit.vector import Chunk, HashingEmbedder, SQLiteVectorStore, _dense_index
from agentkit.vector._dense_index import DenseIndexes, Rowids, Vectors
from agentkit.vector._derived import STAMP, scope_dir_name
from agentkit.vector._sqlite_schema import scope_generation, store_id

ACME = Scope("acme", "support")
BUCKET = ("acme", "support")
DIM = 32
N = 3000
_T = TypeVar("_T")


def clustered(n: int, seed: int = 7, dim: int = DIM) -> npt.NDArray[np.float32]:
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((40, dim)).astype(np.float32)
    out = centres[rng.integers(0, 40, n)] + 0.35 * rng.standard_normal((n, dim))
    out /= np.linalg.norm(out, axis=1, keepdims=True)
    return out.astype(np.float32)


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "store.db"
    vectors = clustered(N)

    async def run() -> None:
        async with SQLiteVectorStore(path, embedder=HashingEmbedder(dim=DIM)) as store:
            await store.upsert_vectors(
                [Chunk(f"d{i}", f"text {i}", {"even": i % 2 == 0}) for i in range(N)],
                vectors,
                scope=ACME,
            )

    asyncio.run(run())
    return path


class Reader:
    """A DenseIndexes over the file, as a process opening the store would have one."""

    def __init__(self, db: Path, **kwargs: int) -> None:
        self.db = db
        self.calls: list[tuple[str, int, int]] = []
        self.snapshots = 0
        with sqlite3.connect(db) as conn:
            sid = store_id(conn)
        self.index = DenseIndexes(
            db.with_name(db.name + ".dense"),
            sid,
            DIM,
            writable=True,
            progress=lambda what, done, total: self.calls.append((what, done, total)),
            **kwargs,
        )

    def search(
        self, query: npt.NDArray[np.float32], k: int = 10, **kwargs: object
    ) -> list[tuple[float, int]]:
        conn = sqlite3.connect(self.db, isolation_level=None)
        try:
            conn.execute("BEGIN")
            gen = scope_generation(conn, BUCKET)
            return self.index.search(conn, BUCKET, gen, query, k, **kwargs)  # type: ignore[arg-type]
        finally:
            conn.close()

    def fold(self) -> bool:
        return self.index.fold(BUCKET, self.snapshot)

    def snapshot(self, fn: Callable[[sqlite3.Connection], _T]) -> _T:
        """``fn`` in one read transaction, as the store runs a fold's read."""
        self.snapshots += 1
        conn = sqlite3.connect(self.db, isolation_level=None)
        try:
            conn.execute("BEGIN")
            return fn(conn)
        finally:
            conn.close()


def exact(
    db: Path, query: npt.NDArray[np.float32], k: int = 10, where: str = ""
) -> list[tuple[float, int]]:
    with sqlite3.connect(db) as conn:
        rows = conn.execute(
            f"SELECT rowid, vector FROM chunks WHERE org = 'acme' AND domain = 'support' {where} "
            "ORDER BY rowid"
        ).fetchall()
    ids = np.array([r[0] for r in rows])
    vecs = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(len(rows), DIM)
    scores = vecs @ query
    top = np.argsort(-scores, kind="stable")[:k]
    return [(float(scores[i]), int(ids[i])) for i in top]


def rowid(db: Path, cid: str) -> int:
    with sqlite3.connect(db) as conn:
        return int(conn.execute("SELECT rowid FROM chunks WHERE id = ?", (cid,)).fetchone()[0])


def queries(n: int = 20) -> npt.NDArray[np.float32]:
    return clustered(n, seed=11)


def same(a: list[tuple[float, int]], b: list[tuple[float, int]]) -> bool:
    return [r for _, r in a] == [r for _, r in b] and np.allclose(
        [s for s, _ in a], [s for s, _ in b], atol=1e-5
    )


def test_a_small_scope_is_exact_and_built_once_with_progress(db: Path) -> None:
    reader = Reader(db)
    for q in queries():
        assert same(reader.search(q), exact(db, q))
    assert reader.calls[0][1:] == (0, N) and reader.calls[-1][1:] == (N, N)
    # Published beside the file: another process maps it instead of building it.
    other = Reader(db)
    assert same(other.search(queries()[0]), exact(db, queries()[0]))
    assert other.calls == []


def test_the_graph_answers_with_high_recall_rescored_exactly(db: Path) -> None:
    reader = Reader(db, ann_from=1000)
    hits = 0
    for q in queries():
        got, want = reader.search(q), exact(db, q)
        hits += len({r for _, r in got} & {r for _, r in want})
        scores = {r: s for s, r in exact(db, q, k=N)}
        for score, r in got:  # every score is the float32 product, not the graph's
            assert score == pytest.approx(scores[r], abs=1e-5)
    assert hits / (10 * len(queries())) >= 0.9
    for q in queries(5):
        assert same(reader.search(q, exact=True), exact(db, q))


def test_another_process_write_is_caught_up_by_the_change(db: Path) -> None:
    reader = Reader(db, ann_from=1000)
    q = queries()[0]
    reader.search(q)
    built = len(reader.calls)
    best = exact(db, q)[0][1]
    with sqlite3.connect(db, isolation_level=None) as other:
        # A row that now matches q best, the former best deleted, one moved away.
        other.execute(
            "UPDATE chunks SET vector = ? WHERE id = 'd7'", (q.astype(np.float32).tobytes(),)
        )
        other.execute("DELETE FROM chunks WHERE rowid = ?", (best,))
    got = reader.search(q)
    assert got[0][1] == rowid(db, "d7") and got[0][0] == pytest.approx(1.0, abs=1e-5)
    assert best not in {r for _, r in got}
    assert len(reader.calls) == built  # no rebuild: two rows read from the log
    for query in queries(5):
        assert same(reader.search(query, exact=True), exact(db, query))


def test_a_fold_publishes_a_new_base_that_others_switch_to(db: Path) -> None:
    reader = Reader(db, ann_from=1000, fold_at=50)
    q = queries()[1]
    reader.search(q)
    with sqlite3.connect(db, isolation_level=None) as other:
        other.execute("DELETE FROM chunks WHERE rowid % 40 = 0")
        moved = [r for (r,) in other.execute("SELECT rowid FROM chunks WHERE rowid % 40 = 1")]
        near = q + 0.2 * clustered(len(moved), seed=3)
        near /= np.linalg.norm(near, axis=1, keepdims=True)
        other.executemany(
            "UPDATE chunks SET vector = ? WHERE rowid = ?",
            [(v.astype(np.float32).tobytes(), r) for v, r in zip(near, moved, strict=True)],
        )
    watcher = Reader(db, ann_from=1000)
    watcher.search(q)
    reader.search(q)
    # ~150 changes on a 3,000-row base: folds wait for half the base (not fold_at),
    # so a growing scope is rewritten a bounded number of times; a fold asked for runs.
    assert not reader.index.needs_fold(BUCKET)
    assert reader.index.fold_threshold(3000) == 1500
    stamp = db.with_name(db.name + ".dense") / scope_dir_name(BUCKET) / STAMP
    old = json.loads(stamp.read_text())
    assert reader.fold()
    new = json.loads(stamp.read_text())
    assert new["base"] != old["base"] and new["gen"] > old["gen"] and new["graph"]
    folder = stamp.parent
    assert not [p for p in folder.iterdir() if p.name.startswith(old["base"])]  # swept
    for query in [q, *queries(5)]:
        assert same(watcher.search(query, exact=True), exact(db, query))
        assert {r for _, r in watcher.search(query)} & {r for _, r in exact(db, query)}
    assert watcher.index.view(sqlite3.connect(db), BUCKET, new["gen"])[0].name == new["base"]


@pytest.mark.parametrize("damage", ["truncate", "garbage", "format", "store"])
def test_a_damaged_or_foreign_base_is_rebuilt(db: Path, damage: str) -> None:
    Reader(db, ann_from=1000).search(queries()[0])
    folder = db.with_name(db.name + ".dense") / scope_dir_name(BUCKET)
    stamp = json.loads((folder / STAMP).read_text())
    if damage == "truncate":
        path = folder / f"{stamp['base']}.vectors.npy"
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    elif damage == "garbage":
        (folder / f"{stamp['base']}.usearch").write_bytes(b"\x00garbage" * 999)
    elif damage == "format":
        (folder / STAMP).write_text(json.dumps({**stamp, "dense": 999}))
    else:
        (folder / STAMP).write_text(json.dumps({**stamp, "store": "another file"}))
    fresh = Reader(db, ann_from=1000)
    for q in queries(5):
        assert same(fresh.search(q, exact=True), exact(db, q))
    assert fresh.calls, "rebuilt from the rows, with progress"
    assert json.loads((folder / STAMP).read_text())["base"] != stamp["base"]


@pytest.mark.parametrize("every", [2, 97, 1500])
def test_a_filter_never_gets_a_short_answer_while_matches_exist(db: Path, every: int) -> None:
    reader = Reader(db, ann_from=1000)
    with sqlite3.connect(db) as conn:
        allowed = np.array(
            [r for (r,) in conn.execute(f"SELECT rowid FROM chunks WHERE rowid % {every} = 0")],
            dtype=np.int64,
        )
    for q in queries(5):
        got = reader.search(q, allowed=np.sort(allowed))
        want = exact(db, q, where=f"AND rowid % {every} = 0")
        assert len(got) == min(10, len(allowed))
        assert all(r % every == 0 for _, r in got)
        assert len({r for _, r in got} & {r for _, r in want}) >= 0.8 * len(want)
        assert same(reader.search(q, allowed=np.sort(allowed), exact=True), want)


def test_a_fold_holds_no_read_snapshot_while_it_builds(
    db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fold reads the delta in one short transaction and builds the new base after
    it, so the WAL can be checkpointed (and stop growing) while a long fold runs."""
    reader = Reader(db, ann_from=1000)
    q = queries()[2]
    reader.search(q)  # a base with a graph
    with sqlite3.connect(db, isolation_level=None) as other:
        other.execute("DELETE FROM chunks WHERE rowid % 30 = 0")
        other.execute("UPDATE chunks SET vector = ? WHERE rowid = 5", (q.tobytes(),))
    checkpoints: list[tuple[int, int, int]] = []
    add = _dense_index._add

    def add_then_checkpoint(graph: object, keys: Rowids, rows: Vectors) -> None:
        # Mid-fold, another connection commits and asks for a full checkpoint: it
        # completes only if no transaction still reads an older snapshot.
        with sqlite3.connect(db, isolation_level=None) as other:
            other.execute("UPDATE chunks SET text = text || '.' WHERE rowid = 7")
            checkpoints.append(other.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone())
        add(graph, keys, rows)

    monkeypatch.setattr(_dense_index, "_add", add_then_checkpoint)
    assert reader.fold()
    assert reader.snapshots == 1 and checkpoints
    assert all(busy == 0 for busy, _, _ in checkpoints), checkpoints
    assert (db.parent / (db.name + "-wal")).stat().st_size == 0  # truncated: none held it
    # The base published at the fold's generation; the commits made during the fold
    # are caught up by the change.
    for query in [q, *queries(5)]:
        assert same(reader.search(query, exact=True), exact(db, query))
    assert reader.search(q)[0][1] == 5


def test_a_fold_streams_the_base_instead_of_copying_it(tmp_path: Path) -> None:
    """A fold's extra memory is a block of rows, not the scope: the old base's vectors
    are read from its file a block at a time into the new one (no copies of the whole
    scope in the writer, and no mapped pages of it left behind)."""
    dim, n = 256, 120_000
    path = tmp_path / "big.db"

    async def create() -> None:
        async with SQLiteVectorStore(path, embedder=HashingEmbedder(dim=dim)) as store:
            await store.upsert_vectors([Chunk("seed", "seed")], clustered(1, dim=dim), scope=ACME)

    asyncio.run(create())
    rng = np.random.default_rng(5)

    def insert(count: int, start: int) -> None:
        vectors = rng.standard_normal((count, dim)).astype(np.float32)
        with sqlite3.connect(path, isolation_level=None) as other:
            other.execute("BEGIN")
            other.executemany(
                "INSERT INTO chunks(org, domain, id, text, metadata, vector) "
                "VALUES ('acme', 'support', ?, 't', '{}', ?)",
                [(f"r{start + i}", v.tobytes()) for i, v in enumerate(vectors)],
            )
            other.execute("COMMIT")

    insert(n, 0)
    with sqlite3.connect(path) as conn:
        sid = store_id(conn)
    index = DenseIndexes(
        path.with_name(path.name + ".dense"), sid, dim, writable=True, ann_from=10**9
    )
    reader = Reader.__new__(Reader)
    reader.db, reader.snapshots, reader.index = path, 0, index
    q = rng.standard_normal(dim).astype(np.float32)
    reader.search(q)  # the base: n rows, 117 MB of vectors, searched exactly
    insert(2_000, n)
    gc.collect()
    with contextlib.suppress(OSError, AttributeError):  # memory freed above leaves the RSS
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    Path("/proc/self/clear_refs").write_text("5")  # VmHWM := VmRSS from here
    before = _status_kb("VmHWM")
    assert reader.fold()
    extra_mb = (_status_kb("VmHWM") - before) / 1024
    scope_mb = n * dim * 4 / 2**20
    assert extra_mb < scope_mb / 3, f"a fold took {extra_mb:.0f} MB for a {scope_mb:.0f} MB scope"
    with sqlite3.connect(path) as conn:
        rows = conn.execute("SELECT rowid, vector FROM chunks ORDER BY rowid").fetchall()
    base = index.view(sqlite3.connect(path), BUCKET, 0)[0]
    assert base.rowids.tolist() == [r for r, _ in rows]
    assert np.array_equal(np.asarray(base.vectors[-1]), np.frombuffer(rows[-1][1], np.float32))


def _status_kb(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise AssertionError(field)
