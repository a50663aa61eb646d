"""Per-scope dense indexes beside a SQLite store, shared by every process that opens it.

Why: a scope's vectors must not be copied into every process (a million 384-d vectors
are 1.5 GB), nor reloaded whole when another process writes one record. So each scope
has, in ``<file>.dense/<scope hash>/`` (a derived index in the sense of ``_derived``):

- an immutable **base**, memory-mapped by every reader: the scope's rowids (int64,
  ascending), their float32 vectors in the same order (exact search and rescoring read
  only the rows they touch), and, for a scope large enough to need it, an HNSW graph
  (usearch, keyed by rowid, memory-mapped read-only) whose candidates are rescored by
  those float32 vectors. The stamp names the base files and the generation they
  reflect; a new base is written under fresh names and published by replacing the stamp
  (an atomic rename), so a reader never meets a half-written one, and ``kill -9`` at
  any point leaves either the old base or the new one.
- a **delta**: the rows changed since the base's generation, read from the change log
  (only those rows: one record written elsewhere costs one record's work), kept in each
  reading process, searched exactly and merged at query time. Every rowid the delta
  touched is masked out of the base, so a row deleted or replaced since is never
  returned from the stale base. When the delta grows past ``FOLD_AT`` rows a writer
  folds it into a new base.

A base that is missing, damaged, from another store or format, or older than the log
reaches back, is rebuilt from the rows (with progress). Small scopes have no graph and
are searched exactly; ``exact=True`` searches exactly at any size. Filters arrive as the
rowids they admit: few enough, and those rows are searched exactly; otherwise the graph
is asked for more candidates than ``k``, they are checked, and the ask widens until
``k`` pass or everything was looked at (never a short answer while matches exist).
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from agentkit.vector._derived import (
    DerivedRoot,
    Progress,
    changed_rowids,
    rows_of,
    scope_rows,
)
from agentkit.vector._scope_matrix import top_k

FORMAT = 1
# Below this many rows a scope has no graph: an exact product over them is fast enough
# (20k x 384 floats is ~3 ms) and exact.
ANN_FROM = 20_000
# A delta past this many rows is folded into a new base: each reader holds the delta in
# memory and searches it exactly on every query.
FOLD_AT = 20_000
# HNSW parameters (see bench/RESULTS.md, "Dense engines at scale"). The graph holds its
# own copy of the vectors at this precision; results are rescored in float32.
GRAPH_DTYPE = "i8"
CONNECTIVITY = 16
EXPANSION_ADD = 128
EXPANSION_SEARCH = 512
# Graph candidates rescored per result wanted.
OVERSAMPLE = 4
# A filter admitting at most this many rows (or this share of the scope) is searched
# exactly over exactly those rows.
FILTER_EXACT_ROWS = 20_000
FILTER_EXACT_SHARE = 0.05
_ADD_BLOCK = 5_000

Vectors = npt.NDArray[np.float32]
Rowids = npt.NDArray[np.int64]


class Base:
    """One published base, memory-mapped: ``rowids`` ascending, ``vectors`` row-aligned,
    ``graph`` (usearch, keys = rowids) or None when the scope is searched exactly."""

    __slots__ = ("gen", "graph", "graph_path", "name", "rowids", "vectors")

    def __init__(
        self,
        name: str,
        gen: int,
        rowids: Rowids,
        vectors: Vectors,
        graph: Any | None,
        graph_path: Path | None = None,
    ) -> None:
        self.name = name
        self.gen = gen
        self.rowids = rowids
        self.vectors = vectors
        self.graph = graph
        self.graph_path = graph_path  # where the graph was mapped from (to fold it)

    @property
    def n(self) -> int:
        return int(self.rowids.shape[0])

    def positions(self, rowids: Rowids) -> Rowids:
        """Positions of those ``rowids`` that the base holds (others dropped)."""
        if self.n == 0 or rowids.size == 0:
            return np.zeros(0, dtype=np.int64)
        at: Rowids = np.minimum(np.searchsorted(self.rowids, rowids), self.n - 1)
        found: Rowids = at[self.rowids[at] == rowids].astype(np.int64)
        return found


class Delta:
    """The rows changed since a base, as one process read them from the log.

    ``touched``: every rowid changed since the base (masked out of it), ascending;
    ``rowids``/``vectors``: those of them that are the scope's rows now.
    """

    __slots__ = ("base", "gen", "rowids", "touched", "vectors")

    def __init__(self, base: str, gen: int, dim: int) -> None:
        self.base = base
        self.gen = gen
        self.touched: Rowids = np.zeros(0, dtype=np.int64)
        self.rowids: Rowids = np.zeros(0, dtype=np.int64)
        self.vectors: Vectors = np.zeros((0, dim), dtype=np.float32)

    def advanced(self, gen: int, touched: list[int], live: dict[int, bytes], dim: int) -> Delta:
        """A new delta at ``gen``: ``touched`` rows changed since this one, ``live`` the
        vectors of those that are the scope's rows now (this object is left as is, for
        searches in flight)."""
        out = Delta(self.base, gen, dim)
        changed = np.asarray(touched, dtype=np.int64)
        out.touched = np.union1d(self.touched, changed)
        keep = ~np.isin(self.rowids, changed)
        fresh = np.asarray(sorted(live), dtype=np.int64)
        if fresh.size:
            block = np.frombuffer(b"".join(live[int(r)] for r in fresh), dtype=np.float32)
            fresh_vectors = block.reshape(fresh.size, dim)
        else:
            fresh_vectors = np.zeros((0, dim), dtype=np.float32)
        out.rowids = np.concatenate([self.rowids[keep], fresh])
        out.vectors = np.concatenate([self.vectors[keep], fresh_vectors])
        return out


class _Scope:
    __slots__ = ("base", "delta", "lock")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.base: Base | None = None
        self.delta: Delta | None = None


class DenseIndexes:
    """The per-scope dense indexes of one store; ``root`` is the directory beside its file.

    ``writable=False`` (a read-only store) never writes there: a missing or stale base
    is then built in memory for this process. ``ann_from``/``fold_at``: see ``ANN_FROM``
    and ``FOLD_AT`` (the module's values when the object is made, by default).
    """

    def __init__(
        self,
        root: Path,
        store_id: str | None,
        dim: int,
        *,
        writable: bool,
        progress: Progress | None = None,
        ann_from: int | None = None,
        fold_at: int | None = None,
    ) -> None:
        self.dim = dim
        self.ann_from = ANN_FROM if ann_from is None else ann_from
        self.fold_at = FOLD_AT if fold_at is None else fold_at
        self.files = DerivedRoot(
            root, store_id, writable=writable, format={"dense": FORMAT, "dim": dim}
        )
        self.progress = progress
        self._lock = threading.Lock()
        self._scopes: dict[tuple[str, str], _Scope] = {}

    # -- reads ---------------------------------------------------------------------

    def folded(self, bucket: tuple[str, str]) -> int | None:
        """The generation the scope's published base reflects (None: none to trust)."""
        return self.files.stamp(bucket)

    def search(
        self,
        conn: sqlite3.Connection,
        bucket: tuple[str, str],
        gen: int,
        query: Vectors,
        k: int,
        *,
        exact: bool = False,
        allowed: Rowids | None = None,
    ) -> list[tuple[float, int]]:
        """(score, rowid) of the scope's best ``k`` by dot product, best first, as of
        ``conn``'s snapshot at generation ``gen`` (or newer: re-read hits in the
        snapshot). ``allowed``: ascending rowids a filter admits (None: all)."""
        base, delta = self.view(conn, bucket, gen)
        return search(base, delta, query, k, exact=exact, allowed=allowed)

    def view(
        self, conn: sqlite3.Connection, bucket: tuple[str, str], gen: int, *, locked: bool = False
    ) -> tuple[Base, Delta]:
        """The base and delta that together hold the scope at ``gen`` (or newer).

        The published base serves (a newer one than this process mapped is switched to),
        caught up by the change; without a usable one, the scope is built from the rows
        under its file lock (``locked``: the caller holds it already)."""
        scope = self._scope(bucket)
        if not locked:
            with scope.lock:
                got = self._current(conn, bucket, scope, gen)
                if got is not None:
                    scope.base, scope.delta = got
                    return got
        # The file lock before the scope's, always (a fold takes them in that order).
        # A read-only store never writes beside the file, not even a lock file.
        unlocked = locked or not self.files.writable
        with contextlib.nullcontext() if unlocked else self.files.file_lock(bucket), scope.lock:
            # Whoever held the lock may have just published one.
            got = self._current(conn, bucket, scope, gen)
            if got is None:
                got = self._build(conn, bucket, gen)
            scope.base, scope.delta = got
            return got

    def _current(
        self, conn: sqlite3.Connection, bucket: tuple[str, str], scope: _Scope, gen: int
    ) -> tuple[Base, Delta] | None:
        base, delta = scope.base, scope.delta
        for _ in range(2):  # a fold may sweep the files between the stamp and the open
            stamp = self.files.stamp_body(bucket)
            if stamp is None or (base is not None and stamp.get("base") == base.name):
                break
            opened = self._open(bucket, stamp)
            if opened is not None:
                base, delta = opened, Delta(opened.name, opened.gen, self.dim)
                break
        if base is None or delta is None:
            return None
        if delta.gen < gen:
            delta = self._advance(conn, bucket, delta, gen)
            if delta is None:
                return None
        return base, delta

    def _advance(
        self, conn: sqlite3.Connection, bucket: tuple[str, str], delta: Delta, gen: int
    ) -> Delta | None:
        touched = changed_rowids(conn, bucket, delta.gen)
        if touched is None:
            return None  # the log no longer reaches back: rebuild
        live = {int(r): v for r, v in rows_of(conn, bucket, touched, "vector")}
        return delta.advanced(gen, touched, live, self.dim)

    def _open(self, bucket: tuple[str, str], stamp: dict[str, Any]) -> Base | None:
        """The published base the stamp names, memory-mapped; None if it is unreadable."""
        name = stamp.get("base")
        if not isinstance(name, str) or "/" in name or name.startswith("."):
            return None
        folder = self.files.dir(bucket)
        try:
            rowids = np.load(folder / f"{name}.rowids.npy", mmap_mode="r")
            vectors = np.load(folder / f"{name}.vectors.npy", mmap_mode="r")
            if (
                rowids.dtype != np.int64 or rowids.ndim != 1
                or vectors.dtype != np.float32 or vectors.shape != (rowids.shape[0], self.dim)
            ):
                return None
            graph, path = None, None
            if stamp.get("graph"):
                path = folder / f"{name}.usearch"
                graph = _open_graph(path, self.dim, rowids.shape[0])
                if graph is None:
                    return None
        except (OSError, ValueError, EOFError):
            return None
        return Base(name, int(stamp["gen"]), rowids, vectors, graph, path)

    def search_rows(
        self,
        conn: sqlite3.Connection,
        bucket: tuple[str, str],
        query: Vectors,
        k: int,
        *,
        allowed: Rowids | None = None,
    ) -> list[tuple[float, int]]:
        """Exact search over the scope's rows as ``conn`` reads them, nothing kept: for
        a file without generations (opened read-only), where nothing kept can be
        trusted."""
        rowids, vectors = self._rows(conn, bucket)
        base = Base("rows", -1, rowids, vectors, None)
        return search(base, Delta(base.name, -1, self.dim), query, k, allowed=allowed)

    def _build(
        self, conn: sqlite3.Connection, bucket: tuple[str, str], gen: int
    ) -> tuple[Base, Delta]:
        """A base from the scope's rows in ``conn``'s snapshot (published when writable)."""
        rowids, vectors = self._rows(conn, bucket)
        base = self._publish(bucket, gen, rowids, vectors, None)
        return base, Delta(base.name, gen, self.dim)

    def _rows(self, conn: sqlite3.Connection, bucket: tuple[str, str]) -> tuple[Rowids, Vectors]:
        """The scope's rowids (ascending) and vectors in ``conn``'s snapshot."""
        ids: list[npt.NDArray[np.int64]] = []
        blocks: list[Vectors] = []
        for batch in scope_rows(conn, bucket, "vector", kind="dense", progress=self.progress):
            ids.append(np.fromiter((r[0] for r in batch), dtype=np.int64, count=len(batch)))
            flat = np.frombuffer(b"".join(r[1] for r in batch), dtype=np.float32)
            blocks.append(flat.reshape(len(batch), self.dim))
        rowids = np.concatenate(ids) if ids else np.zeros(0, dtype=np.int64)
        vectors = np.concatenate(blocks) if blocks else np.zeros((0, self.dim), np.float32)
        order = np.argsort(rowids, kind="stable")
        return rowids[order], np.ascontiguousarray(vectors[order])

    def readable(self, bucket: tuple[str, str]) -> bool | None:
        """Whether the base the stamp names opens (None: no stamp to follow)."""
        stamp = self.files.stamp_body(bucket)
        return None if stamp is None else self._open(bucket, stamp) is not None

    # -- writes --------------------------------------------------------------------

    def rebuild(self, conn: sqlite3.Connection, bucket: tuple[str, str], gen: int) -> None:
        """Rebuild the scope's base from ``conn``'s snapshot (at ``gen``), on request."""
        scope = self._scope(bucket)
        with self.files.file_lock(bucket), scope.lock:
            scope.base, scope.delta = self._build(conn, bucket, gen)

    def fold(self, conn: sqlite3.Connection, bucket: tuple[str, str], gen: int) -> bool:
        """Fold the scope's delta into a new published base at ``conn``'s snapshot
        (generation ``gen``); True if one was published. Writers call this when the
        delta passed ``FOLD_AT``; it holds the scope's file lock meanwhile."""
        if not self.files.writable:
            return False
        with self.files.file_lock(bucket):
            base, delta = self.view(conn, bucket, gen, locked=True)
            if delta.touched.size == 0:
                return False
            keep = np.ones(base.n, dtype=bool)
            keep[base.positions(delta.touched)] = False
            rowids = np.concatenate([base.rowids[keep], delta.rowids])
            vectors = np.concatenate([np.asarray(base.vectors[keep]), delta.vectors])
            order = np.argsort(rowids, kind="stable")
            rowids, vectors = rowids[order], np.ascontiguousarray(vectors[order])
            new = self._publish(bucket, delta.gen, rowids, vectors, (base, delta))
            scope = self._scope(bucket)
            with scope.lock:
                scope.base, scope.delta = new, Delta(new.name, delta.gen, self.dim)
            return True

    def needs_fold(self, bucket: tuple[str, str]) -> bool:
        scope = self._scope(bucket)
        delta = scope.delta
        return delta is not None and delta.touched.size >= self.fold_at

    def _publish(
        self,
        bucket: tuple[str, str],
        gen: int,
        rowids: Rowids,
        vectors: Vectors,
        previous: tuple[Base, Delta] | None,
    ) -> Base:
        """Write a base under fresh names, then point the stamp at it (atomically).

        The graph is carried over from ``previous`` (its delta's rows removed and added)
        when there is one, else built; a read-only store keeps the base in memory."""
        name = f"base-{gen}-{uuid.uuid4().hex[:8]}"
        graph = None
        if rowids.shape[0] >= self.ann_from:
            graph = _graph(self.dim, rowids, vectors, previous)
        if not self.files.writable:
            return Base(name, gen, rowids, vectors, graph)
        folder = self.files.dir(bucket)
        folder.mkdir(parents=True, exist_ok=True)
        _save_npy(folder / f"{name}.rowids.npy", rowids)
        _save_npy(folder / f"{name}.vectors.npy", vectors)
        if graph is not None:
            tmp = folder / f"{name}.usearch.tmp"
            graph.save(str(tmp))
            _fsync(tmp)
            os.replace(tmp, folder / f"{name}.usearch")
        self.files.write_stamp(bucket, gen, base=name, graph=graph is not None)
        _sweep(folder, keep=name)
        opened = self._open(bucket, {"base": name, "gen": gen, "graph": graph is not None})
        return opened if opened is not None else Base(name, gen, rowids, vectors, graph)

    def _scope(self, bucket: tuple[str, str]) -> _Scope:
        with self._lock:
            scope = self._scopes.get(bucket)
            if scope is None:
                scope = self._scopes[bucket] = _Scope()
            return scope


# -- search --------------------------------------------------------------------------


def search(
    base: Base,
    delta: Delta,
    query: Vectors,
    k: int,
    *,
    exact: bool = False,
    allowed: Rowids | None = None,
) -> list[tuple[float, int]]:
    """(score, rowid) best ``k`` of base (less what the delta touched) and delta."""
    query = np.ascontiguousarray(query, dtype=np.float32)
    masked = base.positions(delta.touched)
    found = _from_delta(delta, query, k, allowed)
    if base.n:
        if allowed is not None and _few(allowed.size, base.n):
            found += _exact_rows(base, base.positions(allowed), masked, query, k)
        elif exact or base.graph is None:
            found += _exact_all(base, masked, query, k, allowed)
        else:
            found += _approximate(base, masked, query, k, allowed)
    found.sort(key=lambda hit: (-hit[0], hit[1]))
    return found[:k]


def _few(admitted: int, n: int) -> bool:
    return admitted <= FILTER_EXACT_ROWS or admitted <= FILTER_EXACT_SHARE * n


def _from_delta(
    delta: Delta, query: Vectors, k: int, allowed: Rowids | None
) -> list[tuple[float, int]]:
    n = int(delta.rowids.shape[0])
    mask = None if allowed is None else np.isin(delta.rowids, allowed)
    return [(s, int(delta.rowids[i])) for s, i in top_k(delta.vectors, n, query, k, mask)]


def _exact_rows(
    base: Base, positions: Rowids, masked: Rowids, query: Vectors, k: int
) -> list[tuple[float, int]]:
    """Exact over these base positions (a filter's rows): only their vectors are read."""
    positions = np.setdiff1d(positions, masked, assume_unique=False)
    if positions.size == 0:
        return []
    block = np.asarray(base.vectors[positions])
    top = top_k(block, positions.size, query, k)
    return [(s, int(base.rowids[positions[i]])) for s, i in top]


def _exact_all(
    base: Base, masked: Rowids, query: Vectors, k: int, allowed: Rowids | None
) -> list[tuple[float, int]]:
    """Exact over the whole base, a block at a time (memory bounded by the block)."""
    out: list[tuple[float, int]] = []
    step = 65_536
    for start in range(0, base.n, step):
        stop = min(start + step, base.n)
        mask = np.ones(stop - start, dtype=bool)
        inside = masked[(masked >= start) & (masked < stop)] - start
        mask[inside] = False
        if allowed is not None:
            mask &= np.isin(base.rowids[start:stop], allowed)
        top = top_k(np.asarray(base.vectors[start:stop]), stop - start, query, k, mask)
        out += [(s, int(base.rowids[start + i])) for s, i in top]
        out.sort(key=lambda hit: (-hit[0], hit[1]))
        del out[k:]
    return out


def _approximate(
    base: Base, masked: Rowids, query: Vectors, k: int, allowed: Rowids | None
) -> list[tuple[float, int]]:
    """The graph's candidates, checked (masked rows and a filter's) and rescored by their
    float32 vectors; the ask widens until ``k`` pass, or falls back to exact."""
    gone = base.rowids[masked] if masked.size else np.zeros(0, dtype=np.int64)
    # Expect a filter to pass its share of the candidates, and masked rows to take theirs.
    share = 1.0 if allowed is None else max(allowed.size / max(base.n, 1), 1e-6)
    share *= max(1.0 - gone.size / max(base.n, 1), 0.05)
    count = int(min(base.n, max(OVERSAMPLE * k, 40) / share))
    graph = base.graph
    assert graph is not None
    while True:
        keys = np.asarray(graph.search(query, count, threads=1).keys, dtype=np.int64)
        keys = keys[~np.isin(keys, gone)]
        if allowed is not None:
            keys = keys[np.isin(keys, allowed)]
        if keys.size >= k:
            at = np.sort(base.positions(keys))
            scores = np.asarray(base.vectors[at]) @ query
            top = np.argsort(-scores, kind="stable")[:k]
            return [(float(scores[i]), int(base.rowids[at[i]])) for i in top]
        if count >= base.n:
            return _exact_all(base, masked, query, k, allowed)
        count = min(base.n, count * 4)


# -- files ---------------------------------------------------------------------------


def _graph(
    dim: int,
    rowids: Rowids,
    vectors: Vectors,
    previous: tuple[Base, Delta] | None,
) -> Any:
    """The HNSW graph over ``rowids``: the previous base's, its delta's rows taken out
    and put in, or a new one, a block of rows at a time."""
    from usearch.index import Index

    def add(graph: Any, keys: Rowids, rows: Vectors) -> None:
        for start in range(0, keys.shape[0], _ADD_BLOCK):
            graph.add(
                keys[start : start + _ADD_BLOCK].astype(np.uint64),
                np.ascontiguousarray(rows[start : start + _ADD_BLOCK]), threads=2,
            )

    if previous is not None and previous[0].graph_path is not None:
        base, delta = previous
        graph = Index(
            ndim=dim, metric="ip", dtype=GRAPH_DTYPE, connectivity=CONNECTIVITY,
            expansion_add=EXPANSION_ADD, expansion_search=EXPANSION_SEARCH,
        )
        graph.load(str(base.graph_path))  # a private, writable copy of the old graph
        stale = np.intersect1d(delta.touched, base.rowids)
        if stale.size:
            graph.remove(stale.astype(np.uint64))
        add(graph, delta.rowids, delta.vectors)
        return graph
    graph = Index(
        ndim=dim, metric="ip", dtype=GRAPH_DTYPE, connectivity=CONNECTIVITY,
        expansion_add=EXPANSION_ADD, expansion_search=EXPANSION_SEARCH,
    )
    add(graph, rowids, vectors)
    return graph


def _open_graph(path: Path, dim: int, n: int) -> Any | None:
    from usearch.index import Index

    try:
        graph = Index.restore(str(path), view=True, expansion_search=EXPANSION_SEARCH)
    except Exception:  # usearch raises RuntimeError/ValueError on a damaged file
        return None
    if graph is None or graph.ndim != dim or len(graph) != n:
        return None
    return graph


def _save_npy(path: Path, array: npt.NDArray[Any]) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as fh:
        np.save(fh, array)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _sweep(folder: Path, keep: str) -> None:
    """Remove bases other than ``keep`` (a process that mapped one keeps reading it:
    unlinking a mapped file frees it only when the last mapping goes)."""
    for path in folder.iterdir():
        if path.name.startswith("base-") and not path.name.startswith(keep + "."):
            with contextlib.suppress(OSError):
                path.unlink()
