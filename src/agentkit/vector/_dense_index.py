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
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from agentkit.vector._derived import (
    DerivedRoot,
    Progress,
    ScopeStates,
    changed_rowids,
    rows_of,
    scope_rows,
)
from agentkit.vector._scope_matrix import top_k
from agentkit.vector._sqlite_schema import scope_generation

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
EXPANSION_SEARCH = 640
# Graph candidates rescored per result wanted.
OVERSAMPLE = 4
# A filter admitting at most this many rows (or this share of the scope) is searched
# exactly over exactly those rows.
FILTER_EXACT_ROWS = 20_000
FILTER_EXACT_SHARE = 0.05
_ADD_BLOCK = 5_000
# Up to this many rows of a base are read with pread rather than through its mapping.
_PREAD_ROWS = 1_024
# Rows a fold copies from the old base to the new one at a time (6 MB of 384-d rows;
# the fold holds about three such blocks at once).
_MERGE_BLOCK = 4_096
# The most changes a delta waits for before a fold (see DenseIndexes.fold_threshold).
FOLD_MAX = 100_000

Vectors = npt.NDArray[np.float32]
Rowids = npt.NDArray[np.int64]
Snapshot = Callable[[Callable[[sqlite3.Connection], "tuple[Base, Delta]"]], "tuple[Base, Delta]"]
"""Runs a function on a connection inside one read transaction, and returns its result."""


class Base:
    """One published base, memory-mapped: ``rowids`` ascending, ``vectors`` row-aligned,
    ``graph`` (usearch, keys = rowids) or None when the scope is searched exactly."""

    __slots__ = ("_fd", "gen", "graph", "graph_path", "name", "rowids", "vectors")

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
        self._fd: int | None = None

    def __del__(self) -> None:
        if self._fd is not None:
            os.close(self._fd)

    def keep_open(self, path: Path) -> None:
        """Hold the vectors' file open for ``rows`` (opened with the mapping: a fold may
        sweep the name later, the open file stays readable)."""
        with contextlib.suppress(OSError):
            self._fd = os.open(path, os.O_RDONLY)

    @property
    def n(self) -> int:
        return int(self.rowids.shape[0])

    def rows(self, positions: Rowids) -> Vectors:
        """The vectors at ``positions``. A few rows of a mapped file are read with
        ``pread``: through the mapping, each would map the kernel's whole page-cache
        folio around it into this process (up to megabytes a row: 40 rescored rows
        of a million cost ~40 MB of RSS that way)."""
        vectors = self.vectors
        if positions.size > _PREAD_ROWS or self._fd is None or not isinstance(vectors, np.memmap):
            return np.asarray(vectors[positions])
        row = vectors.shape[1] * 4
        out = np.empty((positions.size, vectors.shape[1]), dtype=np.float32)
        for i, at in enumerate(positions.tolist()):
            data = os.pread(self._fd, row, vectors.offset + at * row)
            if len(data) != row:
                raise OSError(f"{vectors.filename} is shorter than its header says")
            out[i] = np.frombuffer(data, dtype=np.float32)
        return out

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
    ``rowids``/``vectors``: those of them that are the scope's rows now (in no order).
    """

    __slots__ = ("_masked", "base", "gen", "rowids", "touched", "vectors")

    def __init__(self, base: str, gen: int, dim: int) -> None:
        self.base = base
        self.gen = gen
        self._masked: tuple[str, Rowids] | None = None
        self.touched: Rowids = np.zeros(0, dtype=np.int64)
        self.rowids: Rowids = np.zeros(0, dtype=np.int64)
        self.vectors: Vectors = np.zeros((0, dim), dtype=np.float32)

    def advanced(self, gen: int, touched: list[int], rowids: Rowids, vectors: Vectors) -> Delta:
        """A new delta at ``gen``: ``touched`` rows changed since this one, ``rowids`` and
        ``vectors`` those of them that are the scope's rows now (this object is left as
        is, for searches in flight)."""
        out = Delta(self.base, gen, int(vectors.shape[1]))
        changed = np.asarray(touched, dtype=np.int64)
        out.touched = np.union1d(self.touched, changed)
        keep = ~np.isin(self.rowids, changed)
        if not keep.any():  # the usual case at a fold: nothing held yet (no copy)
            out.rowids, out.vectors = rowids, vectors
        else:
            out.rowids = np.concatenate([self.rowids[keep], rowids])
            out.vectors = np.concatenate([self.vectors[keep], vectors])
        return out

    def masked(self, base: Base) -> Rowids:
        """Positions in ``base`` of the rows this delta touched (found once per delta:
        every query until the next change masks the same rows)."""
        held = self._masked
        if held is not None and held[0] == base.name:
            return held[1]
        found = base.positions(self.touched)
        self._masked = (base.name, found)
        return found


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
        self._scopes = ScopeStates(_Scope)

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
        # Straight into arrays: no Python object per row outlives its batch.
        rowids = np.empty(len(touched), dtype=np.int64)
        vectors = np.empty((len(touched), self.dim), dtype=np.float32)
        found = 0
        for rowid, blob in rows_of(conn, bucket, touched, "vector"):
            rowids[found] = rowid
            vectors[found] = np.frombuffer(blob, dtype=np.float32)
            found += 1
        return delta.advanced(gen, touched, rowids[:found], vectors[:found])

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
                rowids.dtype != np.int64
                or rowids.ndim != 1
                or vectors.dtype != np.float32
                or vectors.shape != (rowids.shape[0], self.dim)
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
        base = Base(name, int(stamp["gen"]), rowids, vectors, graph, path)
        base.keep_open(folder / f"{name}.vectors.npy")
        return base

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
        base = self._publish(bucket, gen, rowids, vectors)
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

    def fold(self, bucket: tuple[str, str], snapshot: Snapshot) -> bool:
        """Fold the scope's delta into a new published base; True if one was published.

        ``snapshot(fn)`` runs ``fn(conn)`` in one short read transaction: the fold reads
        the delta there (at the scope's generation g) and nothing else, then merges the
        old base's files and the delta into the new base's outside it, a block at a
        time, and publishes it at g (readers catch up from g by the change, as from
        any base). So a fold neither holds a snapshot (the WAL checkpoints meanwhile)
        nor copies the scope into memory: besides a block, it holds the delta and the
        graph, which usearch can only change loaded (its file's size in memory).
        Writers call this when the delta grew (see ``fold_threshold``); it holds the
        scope's file lock meanwhile."""
        if not self.files.writable:
            return False
        with self.files.file_lock(bucket):
            base, delta = snapshot(
                lambda conn: self.view(conn, bucket, scope_generation(conn, bucket), locked=True)
            )
            if delta.touched.size == 0:
                return False
            new = self._publish_merged(bucket, base, delta)
            scope = self._scope(bucket)
            with scope.lock:
                scope.base, scope.delta = new, Delta(new.name, delta.gen, self.dim)
            return True

    def fold_threshold(self, rows: int) -> int:
        """How many changes a base of ``rows`` rows waits for before a fold: half its
        size (a fold rewrites the base, so a base grown from nothing is rewritten a
        bounded number of times over, not once per ``fold_at`` rows), at least
        ``fold_at`` and at most ``FOLD_MAX`` (each reader holds the delta in memory
        and searches it exactly)."""
        return int(min(max(self.fold_at, rows // 2), max(self.fold_at, FOLD_MAX)))

    def needs_fold(self, bucket: tuple[str, str]) -> bool:
        scope = self._scope(bucket)
        delta, base = scope.delta, scope.base
        rows = 0 if base is None else base.n
        return delta is not None and delta.touched.size >= self.fold_threshold(rows)

    def _publish_merged(self, bucket: tuple[str, str], base: Base, delta: Delta) -> Base:
        """A new base from ``base``'s files less what ``delta`` touched, plus ``delta``'s
        rows, in rowid order, streamed block by block (see ``fold``)."""
        keep = np.ones(base.n, dtype=bool)
        keep[base.positions(delta.touched)] = False
        kept = np.flatnonzero(keep)
        combined = np.concatenate([base.rowids[kept], delta.rowids])
        order = np.argsort(combined, kind="stable")
        rowids: Rowids = combined[order]
        del combined, keep
        folder = self.files.dir(bucket)
        folder.mkdir(parents=True, exist_ok=True)
        name = f"base-{delta.gen}-{uuid.uuid4().hex[:8]}"
        vectors_path = folder / f"{name}.vectors.npy"
        source = folder / f"{base.name}.vectors.npy"
        with (
            _NpyRows(source, self.dim) if base.n else contextlib.nullcontext() as old,
            _NpyOut(vectors_path, rowids.shape[0], self.dim) as out,
        ):
            for start in range(0, rowids.shape[0], _MERGE_BLOCK):
                picks = order[start : start + _MERGE_BLOCK]
                block = np.empty((picks.shape[0], self.dim), dtype=np.float32)
                from_base = picks < kept.shape[0]
                if old is not None and from_base.any():
                    where = np.flatnonzero(from_base)
                    old.rows_into(kept[picks[where]], block, where)
                from_delta = np.flatnonzero(~from_base)
                block[from_delta] = delta.vectors[picks[from_delta] - kept.shape[0]]
                out.write(block)
        del order, kept
        _save_npy(folder / f"{name}.rowids.npy", rowids)
        graph = None
        if rowids.shape[0] >= self.ann_from:
            if base.graph_path is not None:
                graph = _folded_graph(self.dim, base, delta)
            else:
                # The base had no graph: it was under ann_from, so with its delta this
                # is a few fold thresholds of rows at most, read whole.
                graph = _new_graph(self.dim)
                with _NpyRows(vectors_path, self.dim) as rows:
                    _add(graph, rowids, rows.span(0, rowids.shape[0]))
        opened = self._finish(bucket, folder, name, delta.gen, rowids, graph)
        if opened is None:
            raise OSError(f"the dense base just written to {folder} does not open")
        return opened

    def _publish(self, bucket: tuple[str, str], gen: int, rowids: Rowids, vectors: Vectors) -> Base:
        """A base from rows in memory (a rebuild), written under fresh names and
        published (a read-only store keeps it in memory)."""
        name = f"base-{gen}-{uuid.uuid4().hex[:8]}"
        graph = None
        if rowids.shape[0] >= self.ann_from:
            graph = _new_graph(self.dim)
            _add(graph, rowids, vectors)
        if not self.files.writable:
            return Base(name, gen, rowids, vectors, graph)
        folder = self.files.dir(bucket)
        folder.mkdir(parents=True, exist_ok=True)
        _save_npy(folder / f"{name}.vectors.npy", vectors)
        _save_npy(folder / f"{name}.rowids.npy", rowids)
        opened = self._finish(bucket, folder, name, gen, rowids, graph)
        return opened if opened is not None else Base(name, gen, rowids, vectors, graph)

    def _finish(
        self,
        bucket: tuple[str, str],
        folder: Path,
        name: str,
        gen: int,
        rowids: Rowids,
        graph: Any | None,
    ) -> Base | None:
        """Save the graph beside the base's arrays, then point the stamp at them (an
        atomic rename: a reader, or a ``kill -9``, meets the old base or the new one).
        The base as mapped from its files (None: they do not open back)."""
        if graph is not None:
            tmp = folder / f"{name}.usearch.tmp"
            graph.save(str(tmp))
            _fsync(tmp)
            os.replace(tmp, folder / f"{name}.usearch")
        self.files.write_stamp(
            bucket, gen, base=name, graph=graph is not None, rows=int(rowids.shape[0])
        )
        _sweep(folder, keep=name)
        opened = self._open(bucket, {"base": name, "gen": gen, "graph": graph is not None})
        if opened is not None and graph is not None:
            graph.reset()  # its memory goes now, not whenever the collector runs
        return opened

    def _scope(self, bucket: tuple[str, str]) -> _Scope:
        return self._scopes.get(bucket)


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
    masked = delta.masked(base)
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
    block = base.rows(positions)
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
            scores = base.rows(at) @ query
            top = np.argsort(-scores, kind="stable")[:k]
            return [(float(scores[i]), int(base.rowids[at[i]])) for i in top]
        if count >= base.n:
            return _exact_all(base, masked, query, k, allowed)
        count = min(base.n, count * 4)


# -- files ---------------------------------------------------------------------------


def _new_graph(dim: int) -> Any:
    from usearch.index import Index

    return Index(
        ndim=dim,
        metric="ip",
        dtype=GRAPH_DTYPE,
        connectivity=CONNECTIVITY,
        expansion_add=EXPANSION_ADD,
        expansion_search=EXPANSION_SEARCH,
    )


def _add(graph: Any, keys: Rowids, rows: Vectors) -> None:
    """Add rows to the graph a block at a time (usearch builds with two threads).

    In the order given: grouping similar rows first (so neighbours sit near each other
    in the file) built 1.7x slower and searched slower at 100k (bench/RESULTS.md)."""
    for start in range(0, keys.shape[0], _ADD_BLOCK):
        graph.add(
            keys[start : start + _ADD_BLOCK].astype(np.uint64),
            np.ascontiguousarray(rows[start : start + _ADD_BLOCK]),
            threads=2,
        )


def _folded_graph(dim: int, base: Base, delta: Delta) -> Any:
    """The base's graph, loaded writable (a private copy: the file's size in memory),
    the delta's touched rows taken out and its current rows put in."""
    graph = _new_graph(dim)
    graph.load(str(base.graph_path))
    stale = np.intersect1d(delta.touched, base.rowids)
    if stale.size:
        graph.remove(stale.astype(np.uint64))
    _add(graph, delta.rowids, delta.vectors)
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


class _NpyRows:
    """Rows of a float32 ``.npy`` matrix read with ``pread`` into blocks: unlike a
    mapping, what was read does not stay in this process's memory."""

    def __init__(self, path: Path, dim: int) -> None:
        self.dim = dim
        self.row = dim * 4
        self.fh = open(path, "rb")  # closed by __exit__
        try:
            version = np.lib.format.read_magic(self.fh)
            read = {
                (1, 0): np.lib.format.read_array_header_1_0,
                (2, 0): np.lib.format.read_array_header_2_0,
            }.get(version)
            if read is None:
                raise ValueError(f"{path}: .npy format {version} is not one this reads")
            shape, fortran, dtype = read(self.fh)
        except BaseException:
            self.fh.close()
            raise
        if fortran or dtype != np.float32 or len(shape) != 2 or shape[1] != dim:
            self.fh.close()
            raise ValueError(f"{path} is not a float32 matrix of width {dim}")
        self.offset = self.fh.tell()

    def __enter__(self) -> _NpyRows:
        return self

    def __exit__(self, *exc: object) -> None:
        self.fh.close()

    def span(self, start: int, stop: int) -> Vectors:
        """Rows ``start`` to ``stop`` (exclusive)."""
        data = os.pread(self.fh.fileno(), (stop - start) * self.row, self.offset + start * self.row)
        if len(data) != (stop - start) * self.row:
            raise ValueError("a dense base's vectors file is shorter than its header says")
        return np.frombuffer(data, dtype=np.float32).reshape(stop - start, self.dim)

    def rows_into(self, positions: Rowids, out: Vectors, at: Rowids) -> None:
        """``out[at] = rows at positions`` (ascending), a bounded span read at a time."""
        i = 0
        while i < positions.shape[0]:
            first = int(positions[i])
            stop = int(np.searchsorted(positions, first + _MERGE_BLOCK, side="left"))
            span = self.span(first, int(positions[stop - 1]) + 1)
            out[at[i:stop]] = span[positions[i:stop] - first]
            i = stop


class _NpyOut:
    """A float32 ``.npy`` matrix of known shape written a block at a time, then synced
    and renamed into place (never seen half written)."""

    def __init__(self, path: Path, n: int, dim: int) -> None:
        self.path = path
        self.tmp = path.with_name(path.name + ".tmp")
        self.fh = open(self.tmp, "wb")  # closed by __exit__
        header = {"descr": "<f4", "fortran_order": False, "shape": (n, dim)}
        np.lib.format.write_array_header_1_0(self.fh, header)

    def __enter__(self) -> _NpyOut:
        return self

    def write(self, block: Vectors) -> None:
        self.fh.write(np.ascontiguousarray(block, dtype=np.float32).data)

    def __exit__(self, exc_type: object, *exc: object) -> None:
        try:
            if exc_type is None:
                self.fh.flush()
                os.fsync(self.fh.fileno())
        finally:
            self.fh.close()
        if exc_type is None:
            os.replace(self.tmp, self.path)
        else:
            self.tmp.unlink(missing_ok=True)


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
