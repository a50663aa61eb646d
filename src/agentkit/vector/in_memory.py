"""InMemoryVectorStore: one contiguous float32 matrix per tenant bucket.

Search is one matrix product over the bucket's live rows plus ``argpartition``
for the top k, so its cost stays close to the bare numpy floor. Rows live in a
capacity-doubling buffer: adding vectors writes into spare rows and only a
growth step copies, so the amortised cost of an add does not depend on how
many rows are already stored.
"""

from __future__ import annotations

import asyncio
import bisect
import copy
import itertools
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from agentkit.kernel.ctx import Scope
from agentkit.kernel.errors import InvalidArgument, InvalidArgumentType
from agentkit.kernel.threads import CommitGate, run_gated
from agentkit.kernel.validate import (
    check_exact,
    check_filter,
    check_ids,
    check_k,
    check_query,
    check_scope,
)
from agentkit.kernel.where import Where, parse_where
from agentkit.vector._forgetting import (
    SCAN_LIMIT,
    check_forget_filter,
    check_prefix,
    check_scan,
)
from agentkit.vector._scope_matrix import ScopeMatrix, top_k
from agentkit.vector._where_columns import WhereColumns
from agentkit.vector.hashing import HashingEmbedder
from agentkit.vector.port import Chunk, Embedder, check_chunks
from agentkit.vector.stats import ScopeStats, StoreStats, document_key

Matrix = npt.NDArray[np.float32]

# Buckets bigger than this are searched (and mutated) in a worker thread: the
# product takes milliseconds there and the event loop must keep running.
_THREAD_ROWS = 20_000


@dataclass(eq=False)
class _Bucket:
    """One scope's records. ``lock`` is held only for short bookkeeping.

    Searches pin the current snapshot and compute outside the lock. Appends
    write past every pinned reader's row count, so they never disturb one; a
    replace or delete while a search is pinned first copies the snapshot
    (copy-on-write) so the reader keeps a consistent view.
    """

    dim: int
    lock: threading.Lock = field(default_factory=threading.Lock)
    # The rows a search reads, never modified in place while ``snap.readers`` > 0.
    snap: ScopeMatrix[Chunk] = field(init=False)
    # Bumped by every mutation; the filter columns below are valid for one version.
    version: int = 0
    columns: WhereColumns | None = None
    columns_version: int = -1
    # Unix time of the last change (write or delete); 0.0 before the first.
    written_at: float = 0.0
    # The live ids in ascending order, valid for one version (scan pages by id).
    ordered: tuple[int, list[str]] = field(default=(-1, []), repr=False)

    def __post_init__(self) -> None:
        self.snap = ScopeMatrix(self.dim)

    def size(self) -> int:
        return self.snap.n

    def _writable(self) -> ScopeMatrix[Chunk]:
        snap = self.snap
        if snap.readers:
            snap = snap.copy()
            self.snap = snap
        return snap

    def apply(self, chunks: list[Chunk], vectors: Matrix) -> None:
        """Insert or replace by id; within one batch the last copy of an id wins."""
        with self.lock:
            self.version += 1
            self.written_at = time.time()
            snap = self.snap
            if any(c.id in snap.pos for c in chunks):
                snap = self._writable()  # a replace rewrites rows a search may read
            snap.put_many([c.id for c in chunks], chunks, vectors)

    def remove(self, ids: Sequence[str]) -> int:
        """Delete by swapping the last live row into the hole: O(1) per id.

        Returns how many of ``ids`` were present (and are now gone).
        """
        with self.lock:
            return self._remove_locked(ids)

    def remove_where(self, where: Where) -> int:
        """Delete every row matching ``where``, chosen and removed under one lock.

        Chosen by the same column mask a search uses: a filter that deletes is
        exactly the filter that finds."""
        with self.lock:
            snap = self.snap
            n = snap.n
            mask = self._columns_locked(snap.payloads, n).mask(where)
            return self._remove_locked([snap.payloads[i].id for i in np.flatnonzero(mask)])

    def clear(self) -> int:
        """Delete every row; searches in flight keep the snapshot they pinned."""
        with self.lock:
            n = self.snap.n
            if n:
                self.version += 1
                self.written_at = time.time()
                self.snap = ScopeMatrix(self.dim)
            return n

    def _ordered_locked(self) -> list[str]:
        """The live ids in ascending order (cached per version); ``lock`` held."""
        version, ordered = self.ordered
        if version != self.version:
            ordered = sorted(self.snap.pos)
            self.ordered = (self.version, ordered)
        return ordered

    def with_prefix(self, prefix: str, limit: int) -> list[str]:
        """Up to ``limit`` ids starting with ``prefix``: one run in sorted order."""
        with self.lock:
            ordered = self._ordered_locked()
            out: list[str] = []
            for i in range(bisect.bisect_left(ordered, prefix), len(ordered)):
                if not ordered[i].startswith(prefix) or len(out) >= limit:
                    break
                out.append(ordered[i])
            return out

    def page(self, where: Where | None, after: str | None, limit: int) -> list[Chunk]:
        """Up to ``limit`` rows matching ``where`` with ids above ``after``, by id."""
        with self.lock:
            ordered = self._ordered_locked()
            start = 0 if after is None else bisect.bisect_right(ordered, after)
            out: list[Chunk] = []
            chunks, pos = self.snap.payloads, self.snap.pos
            for cid in itertools.islice(ordered, start, None):
                chunk = chunks[pos[cid]]
                if where is not None and not where.matches(chunk.metadata):
                    continue
                out.append(chunk)
                if len(out) >= limit:
                    break
        return [_copy(c) for c in out]

    def _remove_locked(self, ids: Sequence[str]) -> int:
        """``remove`` with ``lock`` held."""
        present = [cid for cid in dict.fromkeys(ids) if cid in self.snap.pos]
        if not present:
            return 0
        self.version += 1
        self.written_at = time.time()
        snap = self._writable()
        for cid in present:
            snap.remove(cid)
        return len(present)

    def search(self, query: Matrix, k: int, where: Where | None) -> list[tuple[float, Chunk]]:
        with self.lock:
            snap = self.snap
            snap.readers += 1
            n = snap.n
            matrix = snap.vectors
            version = self.version
        try:
            mask = None
            if where is not None:
                mask = self._columns(snap.payloads, n, version).mask(where)
            chunks = snap.payloads
            return [(score, _copy(chunks[i])) for score, i in top_k(matrix, n, query, k, mask)]
        finally:
            with self.lock:
                snap.readers -= 1

    def _columns(self, chunks: list[Chunk], n: int, version: int) -> WhereColumns:
        """The filter columns of this version's rows: built on the first filtered search
        after a write, reused (and grown key by key) until the next one."""
        with self.lock:
            if self.columns_version == version and self.columns is not None:
                return self.columns
        columns = WhereColumns(lambda i: chunks[i].metadata, n)
        with self.lock:
            if self.version == version:
                self.columns, self.columns_version = columns, version
        return columns

    def _columns_locked(self, chunks: list[Chunk], n: int) -> WhereColumns:
        """``_columns`` with ``lock`` held (the rows cannot change meanwhile)."""
        if self.columns_version != self.version or self.columns is None:
            self.columns = WhereColumns(lambda i: chunks[i].metadata, n)
            self.columns_version = self.version
        return self.columns


def _copy(chunk: Chunk) -> Chunk:
    """Metadata is deep-copied in and out: no caller mutation reaches the store."""
    if not chunk.metadata:
        return Chunk(chunk.id, chunk.text, {})
    try:
        metadata = copy.deepcopy(dict(chunk.metadata))
    except Exception as exc:
        raise InvalidArgument(
            f"metadata of chunk {chunk.id!r} cannot be copied ({type(exc).__name__}: {exc})"
        ) from exc
    return Chunk(chunk.id, chunk.text, metadata)


def _apply_unless_closed(
    gate: CommitGate, bucket: _Bucket, chunks: list[Chunk], vectors: Matrix
) -> None:
    if gate.enter():
        bucket.apply(chunks, vectors)


def _normalised(vectors: object, rows: int, dim: int, what: str) -> Matrix:
    """float32, C-contiguous, finite, unit rows (zero rows stay zero)."""
    try:
        array = np.array(vectors, dtype=np.float32, order="C", copy=True)
    except (TypeError, ValueError) as exc:
        raise InvalidArgumentType(f"{what} must be a numeric array: {exc}") from exc
    if array.shape != (rows, dim):
        raise InvalidArgument(f"{what} must have shape ({rows}, {dim}), got {array.shape}")
    if not np.isfinite(array).all():
        raise InvalidArgument(f"{what} contains NaN or infinity")
    norms = np.linalg.norm(array, axis=1, keepdims=True)
    np.divide(array, norms, out=array, where=norms > 0)
    return array


class InMemoryVectorStore:
    """A VectorPort held in process memory, bucketed by Scope.

    Each scope is its own bucket with its own matrix; a search only ever reads
    the caller's bucket, so tenant isolation is structural rather than a filter.
    The same id in two scopes is two records. Nothing is persisted.

    Args:
        embedder: What turns text into vectors; ``None`` uses ``HashingEmbedder()``.

    Raises:
        InvalidArgument: An embedder whose ``dim`` is not a positive int.
    """

    def __init__(self, embedder: Embedder | None = None) -> None:
        self.embedder: Embedder = embedder if embedder is not None else HashingEmbedder()
        dim = getattr(self.embedder, "dim", None)
        if isinstance(dim, bool) or not isinstance(dim, int) or dim < 1:
            raise InvalidArgument(f"embedder.dim must be a positive int, got {dim!r}")
        self.dim: int = dim
        self._buckets: dict[Scope, _Bucket] = {}
        self._buckets_lock = threading.Lock()

    def __repr__(self) -> str:
        return f"InMemoryVectorStore(embedder={self.embedder!r}, buckets={len(self._buckets)})"

    def _bucket(self, scope: Scope) -> _Bucket:
        with self._buckets_lock:
            bucket = self._buckets.get(scope)
            if bucket is None:
                bucket = self._buckets[scope] = _Bucket(self.dim)
            return bucket

    async def upsert(self, chunks: Sequence[Chunk], *, scope: Scope) -> None:
        """Embed and insert, replacing any record with the same id in this scope."""
        batch = check_chunks(chunks)
        check_scope(scope)
        if not batch:
            return
        stored = [_copy(c) for c in batch]
        raw = await self.embedder.embed([c.text for c in batch])
        vectors = _normalised(raw, len(batch), self.dim, "embedder output")
        await self._apply(scope, stored, vectors)

    async def upsert_vectors(
        self, chunks: Sequence[Chunk], vectors: npt.ArrayLike, *, scope: Scope
    ) -> None:
        """Insert precomputed embeddings, one row per chunk, skipping the embedder.

        For callers who already hold vectors from the same model as
        ``embedder``. Rows must be finite with width ``dim``; they are
        normalised here so cosine stays a plain dot product.
        """
        batch = check_chunks(chunks)
        check_scope(scope)
        matrix = _normalised(vectors, len(batch), self.dim, "vectors")
        if not batch:
            return
        await self._apply(scope, [_copy(c) for c in batch], matrix)

    async def _apply(self, scope: Scope, chunks: list[Chunk], vectors: Matrix) -> None:
        bucket = self._bucket(scope)
        if bucket.size() + len(chunks) > _THREAD_ROWS:
            # Gated, so a caller that timed out never sees the batch land afterwards.
            await run_gated(
                lambda gate: asyncio.to_thread(_apply_unless_closed, gate, bucket, chunks, vectors)
            )
        else:
            bucket.apply(chunks, vectors)

    async def search(
        self,
        query: str,
        *,
        k: int,
        scope: Scope,
        where: Mapping[str, Any] | None = None,
        exact: bool = False,
    ) -> list[tuple[float, Chunk]]:
        """Top-k by cosine within ``scope``, best first; ``where`` masks rows first.

        Always exact (one product over the scope's rows, the dense top-k the SQLite
        store's index uses for its exact parts); ``exact`` is accepted so code written
        for the durable stores runs unchanged."""
        check_exact(exact)
        query = check_query(query)
        k = check_k(k)
        filters = check_filter(where)
        check_scope(scope)
        bucket = self._buckets.get(scope)
        if bucket is None or bucket.size() == 0:
            return []
        raw = await self.embedder.embed([query])
        vector = _normalised(raw, 1, self.dim, "embedder output")[0]
        if bucket.size() > _THREAD_ROWS:
            return await asyncio.to_thread(bucket.search, vector, k, filters)
        return bucket.search(vector, k, filters)

    async def search_by_vector(
        self,
        vector: npt.ArrayLike,
        *,
        k: int,
        scope: Scope,
        where: Mapping[str, Any] | None = None,
        exact: bool = False,
    ) -> list[tuple[float, Chunk]]:
        """``search`` for a caller that already holds the query's vector (same model)."""
        check_exact(exact)
        k = check_k(k)
        filters = check_filter(where)
        check_scope(scope)
        query = _normalised([vector], 1, self.dim, "vector")[0]
        bucket = self._buckets.get(scope)
        if bucket is None or bucket.size() == 0:
            return []
        if bucket.size() > _THREAD_ROWS:
            return await asyncio.to_thread(bucket.search, query, k, filters)
        return bucket.search(query, k, filters)

    async def get(self, ids: Sequence[str], *, scope: Scope) -> list[Chunk]:
        """The stored chunks among ``ids``, in the order asked; missing ids are skipped."""
        wanted = check_ids(ids)
        check_scope(scope)
        bucket = self._buckets.get(scope)
        if bucket is None or not wanted:
            return []
        with bucket.lock:
            chunks, pos = bucket.snap.payloads, bucket.snap.pos
            found = [chunks[pos[i]] for i in dict.fromkeys(wanted) if i in pos]
        return [_copy(c) for c in found]

    async def delete(self, ids: Sequence[str], *, scope: Scope) -> int:
        """Remove these ids from ``scope``; unknown ids are ignored. Returns how many went."""
        wanted = check_ids(ids)
        check_scope(scope)
        bucket = self._buckets.get(scope)
        if bucket is None or not wanted:
            return 0
        return bucket.remove(wanted)

    async def delete_where(self, where: Mapping[str, Any], *, scope: Scope) -> int:
        """Remove every record of ``scope`` matching ``where`` (search's rule); how many.

        An empty ``where`` is refused: use ``delete_scope`` to empty a scope.
        """
        filters = check_forget_filter(where)
        check_scope(scope)
        bucket = self._buckets.get(scope)
        if bucket is None:
            return 0
        if bucket.size() > _THREAD_ROWS:
            return await asyncio.to_thread(bucket.remove_where, filters)
        return bucket.remove_where(filters)

    async def delete_scope(self, *, scope: Scope) -> int:
        """Remove every record of this one scope; other scopes are untouched. How many."""
        check_scope(scope)
        bucket = self._buckets.get(scope)
        return 0 if bucket is None else bucket.clear()

    async def scan(
        self,
        *,
        scope: Scope,
        where: Mapping[str, Any] | None = None,
        after: str | None = None,
        limit: int = SCAN_LIMIT,
    ) -> list[Chunk]:
        """A page of the scope's records by ascending id, ids above ``after`` only.

        Pass the last id of one page as ``after`` to get the next; an empty page ends.
        """
        checked, cursor, size = check_scan(where, after, limit)
        filters = parse_where(checked)
        check_scope(scope)
        bucket = self._buckets.get(scope)
        if bucket is None:
            return []
        if bucket.size() > _THREAD_ROWS:
            return await asyncio.to_thread(bucket.page, filters, cursor, size)
        return bucket.page(filters, cursor, size)

    async def ids_with_prefix(
        self, prefix: str, *, scope: Scope, limit: int = SCAN_LIMIT
    ) -> list[str]:
        """The scope's ids that start with ``prefix`` (compared as text: nothing in it is a
        wildcard), ascending, at most ``limit``: how a shortened id, as tables print
        them, is resolved to the records it could name."""
        wanted, size = check_prefix(prefix, limit)
        check_scope(scope)
        bucket = self._buckets.get(scope)
        return [] if bucket is None else bucket.with_prefix(wanted, size)

    async def stats(self) -> StoreStats:
        """Records, documents and last change per scope (nothing is on disk)."""
        from agentkit.vector.sqlite import embedder_name  # the one spelling of a name

        scopes: list[ScopeStats] = []
        with self._buckets_lock:
            buckets = list(self._buckets.items())
        for scope, bucket in buckets:
            with bucket.lock:
                chunks = bucket.snap.payloads[: bucket.snap.n]
                written = bucket.written_at
            if not chunks and not written:
                continue
            documents = len({document_key(c.id, c.metadata) for c in chunks})
            scopes.append(ScopeStats(scope, len(chunks), documents, written or None))
        scopes.sort(key=lambda s: (s.scope.org_id or "", s.scope.domain_id or ""))
        return StoreStats(
            kind="memory",
            location="in-process",
            embedder=embedder_name(self.embedder),
            dim=self.dim,
            bytes_on_disk=None,
            scopes=scopes,
        )

    async def close(self) -> None:
        """Nothing to release; here so code can treat every store alike."""

    async def __aenter__(self) -> InMemoryVectorStore:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def count(self, *, scope: Scope | None = None) -> int:
        """Records in ``scope``, or in every bucket when ``scope`` is None."""
        if scope is None:
            return sum(b.size() for b in list(self._buckets.values()))
        bucket = self._buckets.get(check_scope(scope))
        return 0 if bucket is None else bucket.size()
