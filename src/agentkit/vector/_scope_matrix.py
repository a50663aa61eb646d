"""One scope's vectors in a growable matrix, and the one dense top-k every store uses.

Both the in-memory store and the SQLite store's cache keep a scope the same way: rows
in a capacity-doubling float32 buffer (an append writes into spare rows; only growth
copies), one payload per row (whatever a result needs besides the vector), ids mapped
to rows, deletes by swapping the last row into the hole. ``readers`` counts searches
using the object right now: a caller about to rewrite rows they read (a replace, a
delete) works on ``copy()`` instead, while appending past their row count is safe.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Generic, TypeVar

import numpy as np
import numpy.typing as npt

Matrix = npt.NDArray[np.float32]
P = TypeVar("P")
_MIN_CAPACITY = 16


class ScopeMatrix(Generic[P]):
    """Rows ``[:n]`` of ``vectors`` are live; ``ids[i]``/``payloads[i]`` describe row i."""

    __slots__ = ("dim", "gen", "ids", "n", "payloads", "pos", "readers", "vectors")

    def __init__(self, dim: int, gen: int = 0) -> None:
        self.dim = dim
        self.gen = gen  # what version of the scope these rows reflect (caller's meaning)
        self.readers = 0
        self.n = 0
        self.vectors: Matrix = np.zeros((0, dim), dtype=np.float32)
        self.ids: list[str] = []
        self.payloads: list[P] = []
        self.pos: dict[str, int] = {}

    @classmethod
    def of(
        cls, dim: int, gen: int, ids: list[str], payloads: list[P], vectors: Matrix
    ) -> ScopeMatrix[P]:
        """A matrix holding exactly these rows (``vectors`` is kept, not copied)."""
        out: ScopeMatrix[P] = cls(dim, gen)
        out.vectors, out.n = vectors, len(ids)
        out.ids, out.payloads = ids, payloads
        out.pos = {cid: i for i, cid in enumerate(ids)}
        return out

    def copy(self) -> ScopeMatrix[P]:
        twin: ScopeMatrix[P] = ScopeMatrix(self.dim, self.gen)
        twin.n = self.n
        twin.vectors = self.vectors.copy()
        twin.ids = list(self.ids)
        twin.payloads = list(self.payloads)
        twin.pos = dict(self.pos)
        return twin

    def put_many(self, ids: Sequence[str], payloads: Sequence[P], vectors: Matrix) -> None:
        """Insert or replace by id; within one call the last copy of an id wins."""
        last = {cid: i for i, cid in enumerate(ids)}
        replace = [(self.pos[cid], i) for cid, i in last.items() if cid in self.pos]
        append = [i for cid, i in last.items() if cid not in self.pos]
        if replace:
            self.vectors[[r for r, _ in replace]] = vectors[[i for _, i in replace]]
            for row, i in replace:
                self.payloads[row] = payloads[i]
        if not append:
            return
        n = self.n
        need = n + len(append)
        if need > self.vectors.shape[0]:
            grown = np.empty(
                (max(need, 2 * self.vectors.shape[0], _MIN_CAPACITY), self.dim), dtype=np.float32
            )
            grown[:n] = self.vectors[:n]
            self.vectors = grown  # searches in flight keep their own reference
        # The common batch (all new, no repeated id) is a plain slice copy.
        self.vectors[n:need] = vectors if len(append) == len(vectors) else vectors[append]
        for offset, i in enumerate(append):
            self.pos[ids[i]] = n + offset
            self.ids.append(ids[i])
            self.payloads.append(payloads[i])
        self.n = need  # last: a reader never counts a row before it is whole

    def remove(self, chunk_id: str) -> bool:
        """Drop one id (swap the last row into its hole); False if it was not here."""
        at = self.pos.pop(chunk_id, None)
        if at is None:
            return False
        last = self.n - 1
        if at != last:
            self.vectors[at] = self.vectors[last]
            self.ids[at] = self.ids[last]
            self.payloads[at] = self.payloads[last]
            self.pos[self.ids[at]] = at
        self.ids.pop()
        self.payloads.pop()
        self.n = last
        return True


class _Scratch(threading.local):
    """One score buffer per thread, grown as needed: a search writes its n scores into
    it instead of allocating (and page-faulting in) a fresh array every query."""

    def __init__(self) -> None:
        self.scores: npt.NDArray[np.float32] = np.empty(0, dtype=np.float32)

    def take(self, n: int) -> npt.NDArray[np.float32]:
        if self.scores.shape[0] < n:
            self.scores = np.empty(max(n, 2 * self.scores.shape[0]), dtype=np.float32)
        return self.scores[:n]


_SCRATCH = _Scratch()


def top_k(
    vectors: Matrix, n: int, query: Matrix, k: int, mask: npt.NDArray[np.bool_] | None = None
) -> list[tuple[float, int]]:
    """(score, row) of the best ``k`` of rows ``[:n]`` by dot product, best first.

    The mask (rows allowed) applies before the cut, so a selective filter still yields
    up to ``k`` matches. Equal scores come back in row order, ties at the cut included
    (the lowest rows win), so results are stable.

    Everything stays float32 and in place: the product goes into this thread's scratch
    buffer, and the cut is a value partition (cheaper than an index partition) that
    finds the k-th best score, then the rows at or above it. The product is einsum, not
    BLAS: it reads the matrix once at memory speed on this thread, while a threaded
    BLAS matrix-vector product is no faster (memory-bound) yet leaves its worker
    threads spinning on the other cores, which slows the lexical half running beside
    it and every other thread of the process.
    """
    if n == 0:
        return []
    if query.dtype != np.float32:
        query = query.astype(np.float32)
    if mask is not None:
        return _top_masked(vectors, n, query, k, mask)
    scores = _SCRATCH.take(n)
    np.einsum("ij,j->i", vectors[:n], query, out=scores)
    valid = n
    kk = min(k, valid)
    if kk == n:
        top = np.arange(n)
    else:
        cut = np.partition(scores, n - kk)[n - kk]
        top = np.flatnonzero(scores >= cut)  # ascending rows; ties at the cut may add some
    order = top[np.argsort(-scores[top], kind="stable")][:kk]
    return [(float(scores[i]), int(i)) for i in order]


# Below this share of admitted rows, a filtered search reads only those rows (a gather
# costs about what reading them costs); above it, the whole product is cheaper.
_GATHER_SHARE = 0.25


def _top_masked(
    vectors: Matrix, n: int, query: Matrix, k: int, mask: npt.NDArray[np.bool_]
) -> list[tuple[float, int]]:
    """``top_k`` over the rows ``mask`` admits only: scored and cut among themselves, so
    a filter costs no more than the rows it keeps (a partition over a mostly masked-out
    array, the obvious way, is several times slower than the whole product)."""
    rows = np.flatnonzero(mask[:n])
    valid = len(rows)
    if valid == 0:
        return []
    if valid <= _GATHER_SHARE * n:
        scores = np.einsum("ij,j->i", vectors[rows], query)
    else:
        full = _SCRATCH.take(n)
        np.einsum("ij,j->i", vectors[:n], query, out=full)
        scores = full[rows]
    kk = min(k, valid)
    if kk == valid:
        top = np.arange(valid)
    else:
        cut = np.partition(scores, valid - kk)[valid - kk]
        top = np.flatnonzero(scores >= cut)  # ascending rows; ties at the cut may add some
    order = top[np.argsort(-scores[top], kind="stable")][:kk]
    return [(float(scores[i]), int(rows[i])) for i in order]
