"""The SQLite store's in-memory copy of each scope's vectors, never stale.

A cached scope carries the generation it reflects (the counter the schema's triggers
bump in every transaction that changes the scope, whoever makes it: this process,
another one, a plain ``sqlite3`` script). A read uses the copy only if the generation
in its own snapshot is the same, and otherwise loads the scope from that snapshot, so
a cached matrix is never stale and never wrong about whose row it is. This store's own
writes patch the copy right after their commit instead of dropping it.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from agentkit.vector._scope_matrix import ScopeMatrix

Row = list[Any]
"""A cached row's payload: ``[rowid, metadata]``, metadata raw JSON until parsed."""

Scope = ScopeMatrix[Row]


class ScopeCache:
    """Scopes by (org, domain). ``dim`` says how wide a file's vectors are."""

    def __init__(self, dim: Callable[[sqlite3.Connection], int]) -> None:
        self._dim = dim
        self._lock = threading.Lock()
        self._scopes: dict[tuple[str, str], Scope] = {}

    def pin(
        self, conn: sqlite3.Connection, bucket: tuple[str, str], gen: int | None
    ) -> tuple[Scope, int]:
        """The scope's vectors as ``conn``'s snapshot (at ``gen``) holds them, its first
        ``n`` rows, marked in use until ``unpin``.

        The cached copy serves when its generation is the snapshot's; otherwise the
        scope is loaded from the snapshot, and kept if it is newer than what is cached.
        Rows a later write appends lie past ``n`` and are not read. ``gen=None`` (a
        file without generations) always loads and never caches.
        """
        with self._lock:
            index = self._scopes.get(bucket)
            if index is not None and gen is not None and index.gen == gen:
                index.readers += 1
                return index, index.n
        fresh = self._load(conn, bucket, -1 if gen is None else gen)
        with self._lock:
            index = self._scopes.get(bucket)
            if gen is not None and (index is None or index.gen < gen):
                self._scopes[bucket] = fresh
            fresh.readers += 1
            return fresh, fresh.n

    def unpin(self, index: Scope) -> None:
        with self._lock:
            index.readers -= 1

    def patch(
        self,
        bucket: tuple[str, str],
        before: int,
        after: int,
        touches_rows: Callable[[Scope], bool],
        apply: Callable[[Scope], None],
    ) -> None:
        """Bring the cached scope from generation ``before`` to ``after`` after our commit.

        ``before`` was read inside our write transaction, so a commit by another
        connection that landed while we waited for the lock is already counted in it:
        a cache older than ``before`` missed that commit and is dropped, never patched.
        """
        if before == after:
            return
        with self._lock:
            index = self._scopes.get(bucket)
            if index is None or index.gen == after:
                return
            if index.gen != before:
                del self._scopes[bucket]
                return
            if index.readers and touches_rows(index):
                index = index.copy()  # searches in flight keep the rows they read
                self._scopes[bucket] = index
            apply(index)
            index.gen = after

    def clear(self) -> None:
        with self._lock:
            self._scopes.clear()

    def _load(self, conn: sqlite3.Connection, bucket: tuple[str, str], gen: int) -> Scope:
        dim = self._dim(conn)
        rows = conn.execute(
            "SELECT rowid, id, metadata, vector FROM chunks WHERE org = ? AND domain = ?",
            bucket,
        ).fetchall()
        if not rows:
            return ScopeMatrix(dim, gen)
        vectors = np.frombuffer(b"".join(r[3] for r in rows), dtype=np.float32)
        return ScopeMatrix.of(
            dim, gen, [r[1] for r in rows], [[r[0], r[2]] for r in rows],
            vectors.reshape(len(rows), dim).copy(),
        )


def metadata(index: Scope, at: int) -> dict[str, Any]:
    """Row ``at``'s metadata, parsed on first use (most searches never look)."""
    row = index.payloads[at]
    value = row[1]
    if isinstance(value, str):
        value = json.loads(value)
        row[1] = value
    return value  # type: ignore[no-any-return]
