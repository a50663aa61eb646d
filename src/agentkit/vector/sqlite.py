"""SQLiteVectorStore: one embedded file serving dense and lexical search.

Rows live in ``chunks`` keyed by (org, domain, id); vectors are float32 blobs. This
module is the store itself: its connections, its writer thread and reader pool, and
the ports. Each other idea has its own module: the file layout, triggers, change log
and embedder record (_sqlite_schema), how every index beside the file is stamped,
caught up by the change and rebuilt (_derived), the dense indexes (_dense_index, whose
exact parts use the dense top-k shared with the in-memory store, _scope_matrix), the
lexical indexes (_lexical_index) and their analyzer (_lexical_text).

Threading: writes run on one dedicated thread that owns the writing connection; reads
run on a small pool of threads, each read on a connection of its own inside one read
transaction (WAL lets them proceed while a write is under way). The pool serves scopes
in turn and never gives one scope every thread, so one tenant's slow queries do not
hold up another's. The event loop never blocks. The store embeds on
the event loop's side (the embedder offloads itself).

Freshness: triggers bump a per-scope generation (and a file-wide one) and log the
changed row in the same transaction as any change to ``chunks``, whoever makes it: this
store, another store object, another process, a plain ``sqlite3`` script. Dense search
reads the scope's memory-mapped base in ``<file>.dense/`` plus the rows changed since
it, from the log, in the read's own transaction (see _dense_index), so it is never
stale, costs a foreign write about one row's work, and holds no per-process copy of a
scope. The text of a hit is read in the same transaction, constrained by scope and
rowid. Writers fold a grown delta into a new base in the background.

Lexical search: BM25 in tantivy, one index per scope in ``<file>.lexical/`` (see
_lexical_index), so a tenant's word statistics come from its own documents only. The
rows stay the truth: each index records the scope generation it reflects, writes apply
to it right after their commit, and a read whose snapshot is newer rebuilds the scope
from its rows. (Files of schema version 1 also kept an FTS5 mirror by triggers; opening
one for writing drops it, see _sqlite_schema.)

Tenant isolation: every statement filters on the scope columns, and lexical statistics
are per scope.

Cost of one query: a lexical query uses at most ``MAX_QUERY_TERMS`` distinct words (its
first ones), so a pasted book costs what its opening paragraph costs.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
import queue
import sqlite3
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from agentkit.kernel.ctx import Scope
from agentkit.kernel.errors import InvalidArgument, InvalidArgumentType, StoreError
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
from agentkit.vector._dense_index import DenseIndexes
from agentkit.vector._derived import Progress, changed_rowids, prune_log
from agentkit.vector._embedder_id import embedder_name as embedder_name
from agentkit.vector._fair_pool import FairPool
from agentkit.vector._forgetting import (
    SCAN_LIMIT,
    check_forget_filter,
    check_prefix,
    check_scan,
)
from agentkit.vector._lexical_index import LexicalIndexes, Staged
from agentkit.vector._lexical_text import query_terms
from agentkit.vector._sqlite_filter import RowFilter
from agentkit.vector._sqlite_schema import (
    SCHEMA,
    check_meta,
    scope_generation,
    split_sql,
    store_id,
    touch,
)
from agentkit.vector._sqlite_where import compile_sqlite
from agentkit.vector.port import Chunk, Embedder, check_chunks
from agentkit.vector.stats import IndexStatus, ScopeStats, StoreStats, bytes_under, scope_of

_T = TypeVar("_T")
_log = logging.getLogger("agentkit.vector")
_MAX_WINDOW = 1 << 30
# A where admitting at most this many of a scope's rows goes into the word index's
# query as that many rowid terms (measured: 0.3 ms for 100 at 100k rows, 7 ms for 1,000;
# tantivy's term-set query was 10x slower still); past it the ranking is read deeper
# and filtered, which costs less.
_ROWID_TERMS = 150
_MAX_ROWID = (1 << 63) - 1

# Readers per store: enough that one slow query leaves room for the others.
_READERS = 4
_READER_MMAP = 1 << 30


def _bucket(scope: object) -> tuple[str, str]:
    checked = check_scope(scope)
    return (checked.org_id or "", checked.domain_id or "")


# One encoder for every row: json.dumps with options builds a new one per call.
_JSON = json.JSONEncoder(allow_nan=False, ensure_ascii=False).encode
# One insert statement's parameters stay around this size (SQLite refuses a string or
# blob over a billion bytes; memory stays modest): a bigger write takes several steps.
_STATEMENT_BYTES = 64 << 20


def _encode_metadata(chunk: Chunk) -> str:
    """JSON; on failure checked key by key so the error names the culprit."""
    meta = chunk.metadata
    if all(isinstance(key, str) for key in meta):
        try:
            return _JSON(meta if type(meta) is dict else dict(meta))
        except (TypeError, ValueError, RecursionError):
            pass  # find and name the culprit below
    for key, value in meta.items():
        if not isinstance(key, str):
            raise InvalidArgument(
                f"chunk {chunk.id!r}: metadata key {key!r} is not a str; "
                "SQLiteVectorStore stores metadata as JSON"
            )
        try:
            json.dumps(value, allow_nan=False)
        except (TypeError, ValueError, RecursionError) as exc:
            raise InvalidArgument(
                f"chunk {chunk.id!r}: metadata[{key!r}] is not JSON-serialisable "
                f"({type(value).__name__}: {exc})"
            ) from None
    return json.dumps(dict(meta), allow_nan=False, ensure_ascii=False)


class SQLiteVectorStore:
    """A durable VectorPort and LexicalPort in one SQLite file (WAL mode).

    ``embedder=None`` opens the file for lexical search and counts only — no model is
    needed to read words — and ``search``/``upsert`` then raise StoreError. With an
    embedder, its ``dim`` and name are recorded on first write and a different one is
    refused on reopen, because mixing two models' vectors silently ruins ranking.
    ``create=False`` refuses to make a new file (read-only commands use it to report a
    mistyped path instead of creating an empty store). ``read_only=True`` goes further:
    the file must already be an agentkit store (else StoreError naming it), and nothing
    is created, migrated or recorded and writes are refused, so a read pointed at the
    wrong file never changes it. ``readers`` is how many reads may run at once.

    Upsert is one transaction per call. A chunk whose text is unchanged keeps its stored
    vector and is not re-embedded, so re-ingesting a corpus costs database writes only.

    The file is opened on first use, so a missing file, a file that is not an agentkit
    store or one recording another embedder raises ``StoreError`` from that first call.

    Args:
        path: The database file.
        embedder: The model for ``search`` and ``upsert``; ``None`` for lexical reads only.
        create: Whether a missing file may be created.
        read_only: Open an existing store without changing anything.
        readers: How many reads may run at once.
        progress: Told ``(what, done, total)`` while an index beside the file is
            rebuilt from the rows (first use, after damage or an upgrade); by default
            large rebuilds are logged on ``agentkit.vector``.

    Raises:
        InvalidArgumentType: A non-path ``path``, an embedder without an int ``dim``, or a
            non-int ``readers``.
        InvalidArgument: ``readers`` below 1.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        embedder: Embedder | None,
        create: bool = True,
        read_only: bool = False,
        readers: int = _READERS,
        progress: Progress | None = None,
    ) -> None:
        if not isinstance(path, (str, Path)):
            raise InvalidArgumentType(f"path must be a str or Path, got {type(path).__name__}")
        if embedder is not None and not isinstance(getattr(embedder, "dim", None), int):
            raise InvalidArgumentType("embedder must have an int dim and an async embed()")
        if isinstance(readers, bool) or not isinstance(readers, int):
            raise InvalidArgumentType(f"readers must be an int, got {type(readers).__name__}")
        if readers < 1:
            raise InvalidArgument(f"readers must be >= 1, got {readers}")
        self.path = Path(path)
        self.embedder = embedder
        self._create = create and not read_only
        self._read_only = read_only
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="agentkit-sqlite")
        # One scope may hold all readers but one, so another tenant always finds one.
        self._read_pool = FairPool(
            readers, per_key=max(1, readers - 1), name="agentkit-sqlite-read"
        )
        self._conn: sqlite3.Connection | None = None
        self._idle: queue.SimpleQueue[sqlite3.Connection] = queue.SimpleQueue()
        self._readers: list[sqlite3.Connection] = []
        self._opened: Future[None] | None = None
        self._open_lock = threading.Lock()
        self._closed = False
        self._cache_lock = threading.Lock()  # guards the reader connection list
        self._progress = progress
        # which rowids a where admits, per scope generation (dense and word search)
        self._row_filter = RowFilter()
        self._lexical: LexicalIndexes | None = None
        self._dense: DenseIndexes | None = None
        self._folding: dict[tuple[str, str], threading.Thread] = {}  # folds under way
        self._written: set[tuple[str, str]] = set()  # scopes to fold before closing
        self._generations = True  # False: a read_only file from before they existed

    def __repr__(self) -> str:
        return f"SQLiteVectorStore({str(self.path)!r}, embedder={self.embedder!r})"

    # -- lifecycle -------------------------------------------------------------------

    async def open(self) -> SQLiteVectorStore:
        """Open (and create, when allowed) the file; idempotent. Every call awaits it."""
        if self._closed:
            raise StoreError(f"store {str(self.path)!r} is closed")
        with self._open_lock:
            if self._opened is None:
                self._opened = self._pool.submit(self._open_sync)
            opened = self._opened
        if not opened.done():
            # shield: a caller cancelled mid-open must not cancel the open for the others.
            await asyncio.shield(asyncio.wrap_future(opened))
        if opened.cancelled() or opened.exception() is not None:
            with self._open_lock:
                if self._opened is opened:
                    self._opened = None  # a failed open may be retried
            opened.result()
        return self

    async def close(self) -> None:
        """Close the connections and stop the threads; safe to call twice.

        Reads already running finish first (they are short), so none loses its
        connection halfway.
        """
        if self._closed:
            return
        self._closed = True
        await asyncio.wrap_future(self._pool.submit(self._close_sync))
        self._pool.shutdown(wait=False)
        await asyncio.to_thread(self._read_pool.shutdown)
        for conn in self._readers:
            conn.close()
        self._readers.clear()

    async def __aenter__(self) -> SQLiteVectorStore:
        return await self.open()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    async def _read(
        self, bucket: tuple[str, str] | None, fn: Callable[..., _T], *args: Any
    ) -> _T:
        """Run ``fn(conn, *args)`` on a reader thread, inside one read transaction.

        Readers are shared out by ``bucket`` in turn (see FairPool), so a tenant with
        many queries in flight delays its own, not everyone's.
        """
        await self.open()
        try:
            future: asyncio.Future[_T] = self._read_pool.submit(
                bucket, self._in_snapshot, fn, *args
            )
        except RuntimeError:  # the pool was shut down by a concurrent close()
            raise StoreError(f"store {str(self.path)!r} is closed") from None
        return await future

    async def _write(self, fn: Callable[..., _T], *args: Any) -> _T:
        """Run a write; if the caller gives up (cancel, timeout) before COMMIT, roll back.

        The worker thread cannot be interrupted, so it is told instead: a write whose
        caller was cancelled must not land later while the caller reports it failed, and
        one already committing is waited for and reported as landed (see CommitGate).
        """
        if self._read_only:
            raise StoreError(f"store {str(self.path)!r} was opened read_only; writes are refused")
        await self.open()
        return await run_gated(
            lambda gate: asyncio.wrap_future(self._pool.submit(fn, *args, gate))
        )

    # -- the ports -------------------------------------------------------------------

    async def upsert(self, chunks: Sequence[Chunk], *, scope: Scope) -> None:
        """Insert or replace by (scope, id); all of ``chunks`` land or none do."""
        bucket = _bucket(scope)
        rows = [(chunk, _encode_metadata(chunk)) for chunk in check_chunks(chunks)]
        if not rows:
            return
        embedder = self._need_embedder("upsert")
        # Later copies of one id win, as if the batch were applied in order.
        latest = {chunk.id: (chunk, meta) for chunk, meta in rows}
        stored = await self._read(bucket, _stored, bucket, list(latest))
        todo = [c.text for c, _ in latest.values() if stored.get(c.id, (None,))[0] != c.text]
        fresh = await embedder.embed(todo) if todo else None
        if fresh is not None:
            fresh = np.ascontiguousarray(fresh, dtype=np.float32)  # rows bind as they are
            if fresh.shape != (len(todo), embedder.dim):
                raise StoreError(
                    f"embedder returned shape {fresh.shape}, expected {(len(todo), embedder.dim)}"
                )
        writes: list[tuple[str, str, str, npt.NDArray[np.float32]]] = []
        j = 0
        for chunk, meta in latest.values():
            old = stored.get(chunk.id)
            if old is not None and old[0] == chunk.text:
                vector = old[1]
            else:
                assert fresh is not None
                vector = fresh[j]
                j += 1
            writes.append((chunk.id, chunk.text, meta, vector))
        await self._write(self._upsert_sync, bucket, writes)

    async def upsert_vectors(
        self, chunks: Sequence[Chunk], vectors: npt.ArrayLike, *, scope: Scope
    ) -> None:
        """``upsert`` with precomputed vectors, one row per chunk: the embedder is skipped.

        For callers holding vectors from this store's own model (an import, a copy
        between stores). Rows must be finite and ``dim`` wide; they are scaled to unit
        length here, as the embedder's are. All land or none do.
        """
        bucket = _bucket(scope)
        batch = check_chunks(chunks)
        rows = [(chunk, _encode_metadata(chunk)) for chunk in batch]
        dim = self._need_embedder("upsert_vectors").dim
        try:
            matrix = np.array(vectors, dtype=np.float32, copy=True, order="C")
        except (TypeError, ValueError) as exc:
            raise InvalidArgumentType(f"vectors must be a numeric array: {exc}") from exc
        if matrix.shape != (len(rows), dim):
            raise InvalidArgument(
                f"vectors must have shape ({len(rows)}, {dim}), got {matrix.shape}"
            )
        if not np.isfinite(matrix).all():
            raise InvalidArgument("vectors contain NaN or infinity")
        if not rows:
            return
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        np.divide(matrix, norms, out=matrix, where=norms > 0)
        # Later copies of one id win, as if the batch were applied in order.
        latest = {chunk.id: (chunk.text, meta, matrix[i]) for i, (chunk, meta) in enumerate(rows)}
        writes = [(cid, text, meta, row) for cid, (text, meta, row) in latest.items()]
        await self._write(self._upsert_sync, bucket, writes)

    async def search(
        self,
        query: str,
        *,
        k: int,
        scope: Scope,
        where: Mapping[str, Any] | None = None,
        exact: bool = False,
    ) -> list[tuple[float, Chunk]]:
        """Cosine similarity over the scope's vectors, best first.

        Large scopes are searched approximately (an HNSW graph, candidates rescored by
        their stored vectors; recall@10 about 0.97, see docs); ``exact=True`` compares
        the query with every vector of the scope (that ``where`` admits).
        """
        query = check_query(query)
        k = check_k(k)
        bucket = _bucket(scope)
        flt = check_filter(where)
        exact = check_exact(exact)
        embedder = self._need_embedder("search")
        vector = np.asarray(await embedder.embed([query]), dtype=np.float32).reshape(-1)
        return await self._read(bucket, self._search_sync, bucket, vector, k, flt, exact)

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
        k = check_k(k)
        bucket = _bucket(scope)
        flt = check_filter(where)
        exact = check_exact(exact)
        dim = self._need_embedder("search_by_vector").dim
        query = _unit_vector(vector, dim)
        return await self._read(bucket, self._search_sync, bucket, query, k, flt, exact)

    async def lexical_search(
        self,
        query: str,
        *,
        k: int,
        scope: Scope,
        where: Mapping[str, Any] | None = None,
    ) -> list[tuple[float, Chunk]]:
        """BM25 over the scope's chunks (English stemming), higher is better.

        Statistics come from this scope's documents only. Only the query's first
        ``MAX_QUERY_TERMS`` distinct words are used, each as a plain term.
        """
        query = check_query(query)
        k = check_k(k)
        bucket = _bucket(scope)
        flt = check_filter(where)
        tokens = query_terms(query)
        if not tokens:
            return []
        return await self._read(bucket, self._lexical_sync, bucket, tokens, k, flt)

    async def delete(self, ids: Sequence[str], *, scope: Scope) -> int:
        """Remove ``ids`` from the scope's bucket; unknown ids are ignored. How many went.

        Gone at once from dense and word search, here and in every other connection's
        next read (the scope's generation moves and the change is logged).
        """
        bucket = _bucket(scope)
        wanted = check_ids(ids)
        if not wanted:
            return 0
        return await self._write(self._delete_sync, bucket, wanted)

    async def delete_where(self, where: Mapping[str, Any], *, scope: Scope) -> int:
        """Remove the scope's records matching ``where`` (search's rule); how many went.

        The match is decided inside the deleting transaction, so a record changed
        meanwhile is judged by what it holds when it goes. An empty ``where`` is
        refused: use ``delete_scope``.
        """
        bucket = _bucket(scope)
        clause, params = compile_sqlite(check_forget_filter(where))

        def pick(db: sqlite3.Connection) -> list[str]:
            # The filter compiled to SQL, evaluated in the deleting transaction; the ids
            # gathered in one result row (stepping row by row would retake the GIL per
            # row while the file's write lock is held, see _insert_rows).
            (found,) = db.execute(
                "SELECT json_group_array(id) FROM chunks WHERE org = ? AND domain = ?"
                f" AND {clause}",
                (*bucket, *params),
            ).fetchone()
            chosen: list[str] = json.loads(found)
            return chosen

        return await self._write(self._remove_sync, bucket, pick)

    async def delete_scope(self, *, scope: Scope) -> int:
        """Remove every record of this one scope; other scopes untouched. How many went."""
        bucket = _bucket(scope)
        return await self._write(self._remove_sync, bucket, lambda db: None)

    async def scan(
        self,
        *,
        scope: Scope,
        where: Mapping[str, Any] | None = None,
        after: str | None = None,
        limit: int = SCAN_LIMIT,
    ) -> list[Chunk]:
        """A page of the scope's records by ascending id (SQLite's binary order), ids
        above ``after`` only. Pass a page's last id as ``after`` for the next page."""
        bucket = _bucket(scope)
        checked, cursor, size = check_scan(where, after, limit)
        return await self._read(bucket, _scan, bucket, parse_where(checked), cursor, size)

    async def ids_with_prefix(
        self, prefix: str, *, scope: Scope, limit: int = SCAN_LIMIT
    ) -> list[str]:
        """The scope's ids that start with ``prefix`` (compared as text: nothing in it is a
        wildcard), ascending, at most ``limit``: how a shortened id, as tables print
        them, is resolved to the records it could name."""
        bucket = _bucket(scope)
        wanted, size = check_prefix(prefix, limit)
        return await self._read(bucket, _with_prefix, bucket, wanted, size)

    async def stats(self) -> StoreStats:
        """Per scope: records, documents, last write; plus embedder and bytes on disk
        (the file, its WAL and shared-memory files, and the lexical indexes beside it).

        Reads only, so it works on a store opened ``read_only``.
        """
        embedder, dim, scopes = await self._read(None, _stats)
        files = [self.path.with_name(self.path.name + s) for s in ("", "-wal", "-shm")]
        size = await asyncio.to_thread(
            bytes_under, [*files, self._lexical_root(), self._dense_root()]
        )
        return StoreStats(
            kind="sqlite",
            location=str(self.path),
            embedder=embedder,
            dim=dim,
            bytes_on_disk=size,
            scopes=scopes,
        )

    async def check_indexes(self) -> list[IndexStatus]:
        """The state of every scope's lexical and dense index beside the file (see
        IndexStatus); reads only."""
        return await self._read(None, self._check_sync)

    async def rebuild_indexes(self, *, scope: Scope | None = None) -> int:
        """Rebuild the lexical and dense indexes of ``scope`` (None: every scope) from
        the rows, reporting to ``progress``; how many scopes were rebuilt. Reads go on
        meanwhile (each index is swapped in whole). Not on a read-only store."""
        if self._read_only:
            raise StoreError(f"store {str(self.path)!r} is open read_only; cannot rebuild")
        wanted = None if scope is None else _bucket(scope)
        buckets = await self._read(None, self._scopes_sync)
        done = 0
        for bucket in buckets:
            if wanted is not None and bucket != wanted:
                continue
            await self._read(bucket, self._rebuild_sync, bucket)
            done += 1
        return done

    async def get(self, ids: Sequence[str], *, scope: Scope) -> list[Chunk]:
        """The stored chunks among ``ids``, in the order asked; missing ids are skipped."""
        bucket = _bucket(scope)
        wanted = check_ids(ids)
        if not wanted:
            return []
        return await self._read(bucket, _get, bucket, wanted)

    async def held_ids(self, ids: Sequence[str], *, scope: Scope) -> list[str]:
        """Which of ``ids`` the scope holds, in the order asked: ``get`` for a caller
        that only checks presence (an import verifying its writes), so no text or
        metadata is read or decoded."""
        bucket = _bucket(scope)
        wanted = check_ids(ids)
        if not wanted:
            return []
        return await self._read(bucket, _held, bucket, wanted)

    async def count(self, *, scope: Scope | None = None) -> int:
        """Chunks in one scope's bucket, or in the whole file when ``scope`` is None."""
        bucket = None if scope is None else _bucket(scope)
        return await self._read(bucket, _count, bucket)

    def _need_embedder(self, op: str) -> Embedder:
        if self.embedder is None:
            raise StoreError(
                f"{op} needs an embedder; this SQLiteVectorStore was opened with embedder=None "
                "(lexical search only)"
            )
        return self.embedder

    # -- worker-thread side: connections ---------------------------------------------

    def _db(self) -> sqlite3.Connection:
        if self._conn is None:
            raise StoreError(f"store {str(self.path)!r} is not open")
        return self._conn

    def _in_snapshot(self, fn: Callable[..., _T], *args: Any) -> _T:
        """``fn(conn, *args)`` on an idle reader connection, in one read transaction.

        Everything a read looks at (the scope's generation, its rows, their text) comes
        from one snapshot of the file, whatever other connections commit meanwhile.
        """
        try:
            conn = self._idle.get_nowait()
        except queue.Empty:
            conn = self._connect_reader()
        try:
            conn.execute("BEGIN")
            try:
                return fn(conn, *args)
            finally:
                _rollback(conn)
        except sqlite3.Error as exc:
            raise StoreError(f"reading store {str(self.path)!r} failed: {exc}") from exc
        finally:
            if conn.in_transaction:  # could not even roll back: never reuse it
                with self._cache_lock:
                    self._readers.remove(conn)
                conn.close()
            else:
                self._idle.put(conn)

    def _connect_reader(self) -> sqlite3.Connection:
        # mode=rw: a reader never creates the file (open() made or found it already).
        try:
            conn = sqlite3.connect(
                f"{self.path.resolve().as_uri()}?mode=rw", uri=True, isolation_level=None,
                timeout=30.0, check_same_thread=False,
            )
            conn.execute("PRAGMA busy_timeout = 30000")
            conn.execute("PRAGMA query_only = ON")
            # A hit's text sits on overflow pages; mapped, reading it is a memory copy
            # rather than a read() per page (address space only, not resident memory).
            conn.execute(f"PRAGMA mmap_size = {_READER_MMAP}")
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open store {str(self.path)!r} for reading: {exc}") from exc
        with self._cache_lock:
            self._readers.append(conn)
        return conn

    def _open_sync(self) -> None:
        if self._read_only:
            self._open_read_only()
            return
        path = self.path
        if not path.parent.exists():
            if not self._create:
                raise StoreError(f"no store at {str(path)!r}: directory {str(path.parent)!r} "
                                 "does not exist")
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise StoreError(f"cannot create directory for store {str(path)!r}: {exc}") from exc
        if not self._create and not path.exists():
            raise StoreError(f"no store at {str(path)!r} (ingest something first)")
        if path.exists() and path.is_dir():
            raise StoreError(f"store path {str(path)!r} is a directory, not a SQLite file")
        try:
            conn = sqlite3.connect(str(path), isolation_level=None, timeout=30.0)
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open store {str(path)!r}: {exc}") from exc
        try:
            conn.execute("PRAGMA busy_timeout = 30000")
            mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if str(mode).lower() != "wal":
                raise StoreError(f"store {str(path)!r} could not switch to WAL mode ({mode})")
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute("BEGIN IMMEDIATE")
            for statement in split_sql(SCHEMA):
                conn.execute(statement)
            check_meta(conn, self.path, self.embedder)
            conn.execute("COMMIT")
            sid = store_id(conn)
            self._lexical = LexicalIndexes(
                self._lexical_root(), sid, writable=True, progress=self._progress
            )
            self._dense = DenseIndexes(
                self._dense_root(), sid, self._dim(conn), writable=True, progress=self._progress
            )
        except sqlite3.DatabaseError as exc:
            _rollback(conn)
            conn.close()
            raise StoreError(f"{str(path)!r} is not a usable agentkit store: {exc}") from exc
        except BaseException:
            _rollback(conn)
            conn.close()
            raise
        self._conn = conn

    def _open_read_only(self) -> None:
        # mode=rw never creates the file; query_only makes SQLite refuse any change, yet
        # (unlike mode=ro) the connection still removes the WAL side files it opened.
        path = self.path
        try:
            conn = sqlite3.connect(
                f"{path.resolve().as_uri()}?mode=rw", uri=True, isolation_level=None,
                timeout=30.0,
            )
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open store {str(path)!r}: {exc}") from exc
        try:
            conn.execute("PRAGMA query_only = ON")
            conn.execute("PRAGMA busy_timeout = 30000")
            tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
            if not {"meta", "chunks"} <= tables:
                raise StoreError(f"{str(path)!r} is not an agentkit store")
            check_meta(conn, self.path, self.embedder, record=False)
        except sqlite3.DatabaseError as exc:
            conn.close()
            raise StoreError(f"{str(path)!r} is not a usable agentkit store: {exc}") from exc
        except BaseException:
            conn.close()
            raise
        # A file no writer of this version has opened yet has no generation counters:
        # its scopes are then read afresh each time instead of cached.
        self._generations = {"generations", "file_generation"} <= tables
        sid = store_id(conn)
        self._lexical = LexicalIndexes(
            self._lexical_root(), sid, writable=False, progress=self._progress
        )
        self._dense = DenseIndexes(
            self._dense_root(), sid, self._dim(conn), writable=False, progress=self._progress
        )
        self._conn = conn

    def _lexical_root(self) -> Path:
        return self.path.with_name(self.path.name + ".lexical")

    def _lex(self) -> LexicalIndexes:
        if self._lexical is None:
            raise StoreError(f"store {str(self.path)!r} is not open")
        return self._lexical

    def _dense_root(self) -> Path:
        return self.path.with_name(self.path.name + ".dense")

    def _dense_indexes(self) -> DenseIndexes:
        if self._dense is None:
            raise StoreError(f"store {str(self.path)!r} is not open")
        return self._dense

    def _folded(self, bucket: tuple[str, str]) -> int | None:
        """The oldest generation any index of the scope is stamped at (None: one has no
        stamp): the change log is kept from there on."""
        stamps = [self._lex().folded(bucket), self._dense_indexes().folded(bucket)]
        return None if None in stamps else min(s for s in stamps if s is not None)

    def _close_sync(self) -> None:
        for thread in list(self._folding.values()):
            thread.join()
        # What this store wrote is folded before it goes, so the next process (a
        # read-only CLI query, which never writes an index) maps a current base
        # rather than reading the rows since from the log.
        if self._dense is not None and self._conn is not None:
            for bucket in sorted(self._written):
                with contextlib.suppress(Exception):
                    self._fold_if_grown(bucket, at_least=self._dense.fold_at // 4, wait=True)
        self._written.clear()
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        self._row_filter.clear()

    # -- generations -------------------------------------------------------------------

    def _generation(self, conn: sqlite3.Connection, bucket: tuple[str, str]) -> int | None:
        """The scope's generation in ``conn``'s snapshot; None when the file has none."""
        return scope_generation(conn, bucket) if self._generations else None

    def _dim(self, conn: sqlite3.Connection) -> int:
        if self.embedder is not None:
            return self.embedder.dim
        row = conn.execute("SELECT value FROM meta WHERE key = 'dim'").fetchone()
        return int(row[0]) if row else 1

    # -- worker-thread side: writes ----------------------------------------------------

    def _upsert_sync(
        self,
        bucket: tuple[str, str],
        writes: list[tuple[str, str, str, npt.NDArray[np.float32]]],
        gate: CommitGate | None = None,
    ) -> None:
        db = self._db()
        lexical = self._lex()
        with self._begin(db, bucket):
            before, after, _, staged = self._upsert_rows(db, bucket, writes, gate)
            lexical.finish(staged, bucket, before, after, db)
        self._fold_if_grown(bucket)

    @contextlib.contextmanager
    def _begin(self, db: sqlite3.Connection, bucket: tuple[str, str]) -> Iterator[None]:
        """BEGIN IMMEDIATE, then the scope's lexical lock (always in that order, so two
        writers never wait on each other crosswise); the body commits or rolls back."""
        db.execute("BEGIN IMMEDIATE")
        try:
            lock = self._lex().writing(bucket)
            lock.__enter__()
        except BaseException:
            _rollback(db)
            raise
        try:
            yield
        finally:
            lock.__exit__(None, None, None)

    def _upsert_rows(
        self,
        db: sqlite3.Connection,
        bucket: tuple[str, str],
        writes: list[tuple[str, str, str, npt.NDArray[np.float32]]],
        gate: CommitGate | None,
    ) -> tuple[int, int, list[int], Staged | None]:
        """The upsert's transaction (begun by the caller): its generations before/after,
        each write's rowid (ids the scope held keep theirs), and the lexical index's
        changes, staged for ``finish`` once the rows are committed.

        One statement for all rows (executemany). New rows get their rowids here, after
        the file's highest (what SQLite would pick itself; the write lock is held), so
        no lookup of them follows (per-row RETURNING, or reading them back, costs more
        than the writes themselves), and the index's documents are handed to tantivy
        before the rows are written: it indexes them on its own thread meanwhile.
        (Should the file's rowids ever near the top of their range, SQLite picks them
        instead; they are looked up, and the index is given them after the commit.)
        """
        lexical = self._lex()
        staged: Staged | None = None
        try:
            before = scope_generation(db, bucket)
            ids = [w[0] for w in writes]
            held = _rowids(db, bucket, ids)
            top = int(db.execute("SELECT coalesce(max(rowid), 0) FROM chunks").fetchone()[0])
            assign = top + len(ids) < _MAX_ROWID
            given: list[int | None] = []
            for cid in ids:
                if cid in held or not assign:
                    given.append(None)  # held: the conflict keeps its rowid
                else:
                    top += 1
                    given.append(top)
            if assign:
                rowids = [held[cid] if rowid is None else rowid
                          for rowid, cid in zip(given, ids, strict=True)]
                empty = not held and not db.execute(
                    "SELECT EXISTS (SELECT 1 FROM chunks WHERE org = ? AND domain = ?)", bucket
                ).fetchone()[0]
                staged = lexical.stage(
                    bucket, before, list(zip(rowids, [w[1] for w in writes], strict=True)),
                    list(held.values()), empty=empty,
                )
            _insert_rows(db, bucket, given, writes)
            if not assign:
                found = {**_rowids(db, bucket, ids), **held}
                rowids = [found[cid] for cid in ids]
            touch(db, bucket)
            prune_log(db, bucket, self._folded(bucket))
            after = scope_generation(db, bucket)
            _commit_unless(db, gate)
        except sqlite3.Error as exc:
            _rollback(db)
            lexical.abort(staged)
            raise StoreError(f"upsert into {str(self.path)!r} failed, nothing written: {exc}") \
                from exc
        except BaseException:
            _rollback(db)
            lexical.abort(staged)
            raise
        if not assign:
            staged = lexical.stage(
                bucket, before, list(zip(rowids, [w[1] for w in writes], strict=True)),
                list(held.values()),
            )
        return before, after, rowids, staged

    def _delete_sync(
        self, bucket: tuple[str, str], ids: list[str], gate: CommitGate | None = None
    ) -> int:
        return self._remove_sync(bucket, lambda db: ids, gate)

    def _remove_sync(
        self,
        bucket: tuple[str, str],
        pick: Callable[[sqlite3.Connection], list[str] | None],
        gate: CommitGate | None = None,
    ) -> int:
        """Delete the ids ``pick`` chooses (None: the whole scope) in one transaction.

        ``pick`` runs inside the write transaction, so what it chose is exactly what
        goes. The lexical index drops them right after the commit, and the generation
        the triggers bump makes every other connection's cache and index catch up.
        Returns rows removed.
        """
        db = self._db()
        with self._begin(db, bucket):
            try:
                before = scope_generation(db, bucket)
                ids = pick(db)
                # The rowids gathered in one result row, then one DELETE: RETURNING would
                # step (and retake the GIL) once per row; see _insert_rows.
                rowids: list[int] = []
                if ids is None:
                    (found,) = db.execute(
                        "SELECT json_group_array(rowid) FROM chunks WHERE org = ? AND domain = ?",
                        bucket,
                    ).fetchone()
                    rowids = json.loads(found)
                    db.execute("DELETE FROM chunks WHERE org = ? AND domain = ?", bucket)
                else:
                    for part in _parts(ids):
                        marks = ",".join("?" * len(part))
                        (found,) = db.execute(
                            "SELECT json_group_array(rowid) FROM chunks "
                            f"WHERE org = ? AND domain = ? AND id IN ({marks})",
                            (*bucket, *part),
                        ).fetchone()
                        gone: list[int] = json.loads(found)
                        if gone:
                            db.execute(
                                "DELETE FROM chunks "
                                "WHERE rowid IN (SELECT value FROM json_each(?))",
                                (found,),
                            )
                            rowids += gone
                removed = len(rowids)
                if removed:
                    touch(db, bucket)
                    prune_log(db, bucket, self._folded(bucket))
                after = scope_generation(db, bucket)
                _commit_unless(db, gate)
            except sqlite3.Error as exc:
                _rollback(db)
                raise StoreError(
                    f"delete from {str(self.path)!r} failed, nothing removed: {exc}"
                ) from exc
            except BaseException:
                _rollback(db)
                raise
            self._lex().apply(bucket, before, after, [], None if ids is None else rowids, db)
        self._fold_if_grown(bucket)
        return removed

    def _fold_if_grown(
        self, bucket: tuple[str, str], *, at_least: int | None = None, wait: bool = False
    ) -> None:
        """Fold the scope's dense delta into a new base once ``at_least`` changes came
        since the base (default: the index's ``fold_threshold`` for the base's size), on
        a thread of its own (a large scope's fold takes a while, and reads go on from
        the old base meanwhile), or here when ``wait``. Runs on the writer thread.

        A writer that outruns the folds (a bulk load builds the graph slower than it
        writes rows) waits for the fold under way once the delta reached twice the
        threshold, so every reader's delta stays bounded rather than the whole load
        landing in it and in the fold at close."""
        dense = self._dense_indexes()
        if not dense.files.writable:
            return
        self._written.add(bucket)

        def behind() -> tuple[int, int]:
            """(changes since the published base, the threshold for its size)"""
            stamp = dense.files.stamp_body(bucket)
            folded = -1 if stamp is None else int(stamp["gen"])
            rows = stamp.get("rows") if stamp is not None else None
            threshold = dense.fold_threshold(rows if isinstance(rows, int) else 0)
            # One generation per changed row (see _sqlite_schema): changes since.
            since = scope_generation(self._db(), bucket) - max(folded, 0)
            return (since if folded >= 0 else max(since, 1)), (
                threshold if at_least is None else at_least
            )

        changes, threshold = behind()
        running = self._folding.get(bucket)
        if running is not None:
            if changes < 2 * threshold:
                return
            running.join()
            changes, threshold = behind()  # that fold took in what was there when it read
        if changes < max(1, threshold):
            return

        def fold() -> None:
            dense.fold(bucket, self._in_snapshot)

        if wait:
            fold()
            return

        def run() -> None:
            try:
                fold()
            except Exception:  # a derived index: the next fold or read rebuilds it
                _log.warning("folding the dense index of %s/%s failed", *bucket, exc_info=True)
            finally:
                self._folding.pop(bucket, None)

        # Not a daemon: a process leaving without close() finishes the fold first
        # rather than tearing the interpreter down under it.
        thread = threading.Thread(target=run, name="agentkit-sqlite-fold")
        self._folding[bucket] = thread
        thread.start()

    # -- reader-thread side --------------------------------------------------------------

    @staticmethod
    def _scopes_sync(conn: sqlite3.Connection) -> list[tuple[str, str]]:
        rows = conn.execute("SELECT DISTINCT org, domain FROM chunks ORDER BY org, domain")
        return [(str(o), str(d)) for o, d in rows]

    def _rebuild_sync(self, conn: sqlite3.Connection, bucket: tuple[str, str]) -> None:
        gen = scope_generation(conn, bucket)
        self._lex().rebuild(conn, bucket, gen)
        self._dense_indexes().rebuild(conn, bucket, gen)

    def _check_sync(self, conn: sqlite3.Connection) -> list[IndexStatus]:
        out: list[IndexStatus] = []
        dense = self._dense_indexes()
        for bucket in self._scopes_sync(conn):
            gen = self._generation(conn, bucket) or 0
            scope = scope_of(*bucket)
            for kind, stamp in (
                ("lexical", self._lex().folded(bucket)), ("dense", dense.folded(bucket))
            ):
                if stamp is None:
                    state = "missing"
                elif kind == "dense" and not dense.readable(bucket):
                    state = "damaged"
                elif stamp >= gen:
                    state = "current"
                elif changed_rowids(conn, bucket, stamp) is None:
                    state = "stale"
                else:
                    state = "behind"
                out.append(IndexStatus(scope, kind, gen, stamp, state))
        return out

    def _search_sync(
        self,
        conn: sqlite3.Connection,
        bucket: tuple[str, str],
        vector: npt.NDArray[np.float32],
        k: int,
        where: Where | None,
        exact: bool = False,
    ) -> list[tuple[float, Chunk]]:
        """The scope's dense index at this snapshot, then the hits' rows from it.

        A ``where`` becomes the rowids it admits, which the index searches among (so
        the k come from matching rows only). A hit the snapshot no longer holds (the
        index ran ahead of it) is skipped, and the index asked for more.
        """
        gen = self._generation(conn, bucket)
        allowed = None
        if where is not None:
            allowed, _ = self._row_filter.admitted(conn, bucket, gen, where)
            if not allowed.size:
                return []
        dense = self._dense_indexes()
        out: list[tuple[float, Chunk]] = []
        want = k
        while True:
            if gen is None:  # a read-only file from before generations: nothing to trust
                ranked = dense.search_rows(conn, bucket, vector, want, allowed=allowed)
            else:
                ranked = dense.search(
                    conn, bucket, gen, vector, want, exact=exact, allowed=allowed
                )
            out.clear()
            self._collect(conn, ranked, bucket, k, where, out)
            if len(out) >= k or len(ranked) < want:
                return out
            want *= 2

    def _lexical_sync(
        self,
        conn: sqlite3.Connection,
        bucket: tuple[str, str],
        tokens: list[str],
        k: int,
        where: Where | None,
    ) -> list[tuple[float, Chunk]]:
        """BM25 from the scope's own index, then the scope's rows for the head of it.

        The index answers at this snapshot's generation or newer (see _lexical_index);
        each hit is re-read here by rowid and scope, so a row deleted or moved since is
        skipped. A ``where`` is evaluated on the scope's metadata columns first: a few
        admitted rowids go into the index's query, so the ranking holds matching rows
        only; more are kept to while the ranking is read as deep as their share needs.
        """
        gen = self._generation(conn, bucket)
        if gen == 0 and not conn.execute(  # never written to (rows of an older file count)
            "SELECT EXISTS (SELECT 1 FROM chunks WHERE org = ? AND domain = ?)", bucket
        ).fetchone()[0]:
            return []
        lexical = self._lex()
        out: list[tuple[float, Chunk]] = []
        only: Sequence[int] | None = None
        keep: npt.NDArray[np.int64] | None = None  # admitted rowids, sorted
        window = k
        if where is not None:
            admitted, total = self._row_filter.admitted(conn, bucket, gen, where)
            if not len(admitted):
                return []
            if len(admitted) <= _ROWID_TERMS:
                only = admitted.tolist()
            elif len(admitted) < total:
                # More rows than a query should name: the ranking is read deeper (as
                # deep as the admitted share says k matches lie) and kept to them.
                keep = admitted  # ascending
                window = math.ceil(2 * k * total / len(admitted))
        offset, window = 0, min(window, _MAX_WINDOW)
        try:
            while len(out) < k:
                ranked = lexical.search(conn, bucket, gen, tokens, window, offset, only=only)
                if keep is not None and ranked:
                    found = np.fromiter((r for _, r in ranked), np.int64, len(ranked))
                    at = np.minimum(np.searchsorted(keep, found), len(keep) - 1)
                    hits = keep[at] == found
                    self._collect(conn, [h for h, ok in zip(ranked, hits, strict=True) if ok],
                                  bucket, k, where, out)
                else:
                    self._collect(conn, ranked, bucket, k, where, out)
                if len(ranked) < window:
                    break
                offset += window
                window = min(window * 4, _MAX_WINDOW)
        except (OSError, ValueError) as exc:
            raise StoreError(f"lexical search on {str(self.path)!r} failed: {exc}") from exc
        return out

    @staticmethod
    def _collect(
        conn: sqlite3.Connection,
        ranked: list[tuple[float, int]],
        bucket: tuple[str, str],
        k: int,
        where: Where | None,
        out: list[tuple[float, Chunk]],
    ) -> None:
        """Append the scope's rows among ``ranked`` (score, rowid; best first) to ``out``,
        up to k."""
        for part in _parts(ranked):
            marks = ",".join("?" * len(part))
            rows = {
                r[0]: r[1:]
                for r in conn.execute(
                    f"SELECT rowid, id, text, metadata FROM chunks WHERE rowid IN ({marks}) "
                    "AND +org = ? AND +domain = ?",  # "+": look rows up by rowid
                    (*(r[1] for r in part), *bucket),
                )
            }
            for score, rowid in part:
                row = rows.get(rowid)
                if row is None:
                    continue
                meta = json.loads(row[2])
                if where is not None and not where.matches(meta):
                    continue  # the index ran ahead of this snapshot: judge what it reads
                out.append((score, Chunk(row[0], row[1], meta)))
                if len(out) >= k:
                    return


def _unit_vector(vector: npt.ArrayLike, dim: int) -> npt.NDArray[np.float32]:
    """A finite float32 row of width ``dim``, scaled to unit length (zero stays zero)."""
    try:
        row = np.array(vector, dtype=np.float32).reshape(-1)
    except (TypeError, ValueError) as exc:
        raise InvalidArgumentType(f"vector must be a numeric array: {exc}") from exc
    if row.shape != (dim,):
        raise InvalidArgument(f"vector must have {dim} values, got shape {row.shape}")
    if not np.isfinite(row).all():
        raise InvalidArgument("vector contains NaN or infinity")
    norm = float(np.linalg.norm(row))
    return row / norm if norm > 0 else row


def _scan(
    conn: sqlite3.Connection,
    bucket: tuple[str, str],
    where: Where | None,
    after: str | None,
    limit: int,
) -> list[Chunk]:
    """Walk the (org, domain, id) index from ``after``: ``limit`` rows the compiled
    ``where`` admits."""
    clause, params = compile_sqlite(where) if where is not None else ("1", [])
    rows = conn.execute(
        "SELECT id, text, metadata FROM chunks WHERE org = ? AND domain = ? AND id > ? "
        f"AND {clause} ORDER BY id LIMIT ?",
        (*bucket, "" if after is None else after, *params, limit),
    ).fetchall()
    return [Chunk(cid, text, json.loads(meta)) for cid, text, meta in rows]


# One document per distinct (corpus, path, doc_id) among records naming a path or a
# doc_id; every other record is its own. Must agree with stats.document_key.
_DOCUMENT = (
    "CASE WHEN json_type(metadata, '$.path') IS NOT NULL "
    "OR json_type(metadata, '$.doc_id') IS NOT NULL "
    "THEN json_array(json_extract(metadata, '$.corpus'), json_type(metadata, '$.corpus'), "
    "json_extract(metadata, '$.path'), json_type(metadata, '$.path'), "
    "json_extract(metadata, '$.doc_id'), json_type(metadata, '$.doc_id')) "
    "ELSE 'record:' || id END"
)


def _stats(conn: sqlite3.Connection) -> tuple[str | None, int | None, list[ScopeStats]]:
    meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
    dim = meta.get("dim")
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    writes: dict[tuple[str, str], float] = {}
    if "scope_writes" in tables:
        writes = {(o, d): float(at) for o, d, at in conn.execute(
            "SELECT org, domain, at FROM scope_writes"
        )}
    scopes: dict[tuple[str, str], ScopeStats] = {}
    for org, domain, records, documents in conn.execute(
        f"SELECT org, domain, count(*), count(DISTINCT {_DOCUMENT}) FROM chunks "
        "GROUP BY org, domain"
    ):
        scopes[(org, domain)] = ScopeStats(
            scope_of(org, domain), int(records), int(documents), writes.get((org, domain))
        )
    for (org, domain), at in writes.items():
        if (org, domain) not in scopes:
            scopes[(org, domain)] = ScopeStats(scope_of(org, domain), 0, 0, at)
    return (
        meta.get("embedder"),
        None if dim is None else int(dim),
        [scopes[key] for key in sorted(scopes)],
    )


def _texts(
    conn: sqlite3.Connection, bucket: tuple[str, str], wanted: list[tuple[int, str]]
) -> dict[int, str]:
    """Text by rowid, read only within ``bucket`` and only where the id is still ours."""
    ids = dict(wanted)
    out: dict[int, str] = {}
    for part in _parts(wanted):
        marks = ",".join("?" * len(part))
        # "+org": without it SQLite may walk the scope's whole (org, domain) index to
        # find a handful of rowids; with it each row is one rowid lookup.
        for rowid, cid, text in conn.execute(
            f"SELECT rowid, id, text FROM chunks WHERE rowid IN ({marks}) "
            "AND +org = ? AND +domain = ?",
            (*(rowid for rowid, _ in part), *bucket),
        ):
            if ids.get(rowid) == cid:
                out[rowid] = text
    return out


def _insert_rows(
    conn: sqlite3.Connection,
    bucket: tuple[str, str],
    rowids: list[int | None],
    writes: list[tuple[str, str, str, npt.NDArray[np.float32]]],
) -> None:
    """Insert or update ``writes`` (rowid None: SQLite picks it), a statement step per
    ``_STATEMENT_BYTES`` or so.

    The rows travel as one JSON array and the vectors as one blob, so the whole insert
    runs in a single ``sqlite3_step`` without the GIL. ``executemany`` releases and
    retakes the GIL once per row, and while any other thread of the process runs Python
    each retake can wait out the interpreter's switch interval: a write of thousands of
    rows then held the file's write lock for minutes instead of a fraction of a second.
    """
    rows: list[list[object]] = []
    blobs: list[memoryview] = []
    offset = 1  # where the next vector starts in the joined blob; substr() counts from 1
    carried = 0  # about how many bytes the statement's two parameters hold so far
    for rowid, (cid, text, meta, vector) in zip(rowids, writes, strict=True):
        size = vector.nbytes
        weight = size + len(cid) + len(text) + len(meta)
        if rows and carried + weight > _STATEMENT_BYTES:
            _insert_step(conn, bucket, rows, blobs)
            rows, blobs, offset, carried = [], [], 1, 0
        rows.append([rowid, cid, text, meta, offset, size])
        blobs.append(vector.data)  # C-contiguous float32 rows: their bytes as they are
        offset += size
        carried += weight
    if rows:
        _insert_step(conn, bucket, rows, blobs)


def _insert_step(
    conn: sqlite3.Connection, bucket: tuple[str, str], rows: list[list[object]],
    blobs: list[memoryview],
) -> None:
    conn.execute(
        "INSERT INTO chunks(rowid, org, domain, id, text, metadata, vector) "
        "SELECT r.value ->> 0, ?1, ?2, r.value ->> 1, r.value ->> 2, r.value ->> 3, "
        "substr(?3, r.value ->> 4, r.value ->> 5) FROM json_each(?4) AS r "
        "WHERE true ORDER BY r.key "  # WHERE: an upsert's SELECT needs one (SQLite's grammar)
        "ON CONFLICT(org, domain, id) DO UPDATE SET text = excluded.text, "
        "metadata = excluded.metadata, vector = excluded.vector",
        (*bucket, b"".join(blobs), _JSON(rows)),
    )


def _rowids(conn: sqlite3.Connection, bucket: tuple[str, str], ids: list[str]) -> dict[str, int]:
    """Rowid by id, for those of ``ids`` the scope holds: one result row per part, for
    the reason ``_insert_rows`` gives."""
    out: dict[str, int] = {}
    for part in _parts(ids):
        marks = ",".join("?" * len(part))
        (found,) = conn.execute(
            "SELECT json_group_array(json_array(id, rowid)) FROM chunks "
            f"WHERE org = ? AND domain = ? AND id IN ({marks})",
            (*bucket, *part),
        ).fetchone()
        out.update(json.loads(found))
    return out


def _stored(
    conn: sqlite3.Connection, bucket: tuple[str, str], ids: list[str]
) -> dict[str, tuple[str, npt.NDArray[np.float32]]]:
    out: dict[str, tuple[str, npt.NDArray[np.float32]]] = {}
    for part in _parts(ids):
        marks = ",".join("?" * len(part))
        for cid, text, blob in conn.execute(
            f"SELECT id, text, vector FROM chunks WHERE org = ? AND domain = ? "
            f"AND id IN ({marks})",
            (*bucket, *part),
        ):
            out[cid] = (text, np.frombuffer(blob, dtype=np.float32))
    return out


def _get(conn: sqlite3.Connection, bucket: tuple[str, str], ids: list[str]) -> list[Chunk]:
    found: dict[str, Chunk] = {}
    for part in _parts(ids):
        marks = ",".join("?" * len(part))
        for cid, text, meta in conn.execute(
            f"SELECT id, text, metadata FROM chunks WHERE org = ? AND domain = ? "
            f"AND id IN ({marks})",
            (*bucket, *part),
        ):
            found[cid] = Chunk(cid, text, json.loads(meta))
    return [found[i] for i in dict.fromkeys(ids) if i in found]


def _held(conn: sqlite3.Connection, bucket: tuple[str, str], ids: list[str]) -> list[str]:
    found: set[str] = set()
    for part in _parts(ids):
        marks = ",".join("?" * len(part))
        found.update(r[0] for r in conn.execute(
            f"SELECT id FROM chunks WHERE org = ? AND domain = ? AND id IN ({marks})",
            (*bucket, *part),
        ))
    return [i for i in dict.fromkeys(ids) if i in found]


def _with_prefix(
    conn: sqlite3.Connection, bucket: tuple[str, str], prefix: str, limit: int
) -> list[str]:
    # Binary order puts every id that starts with ``prefix`` in one run beginning at
    # ``prefix`` itself: walk the unique index from there and stop at the first other id.
    out: list[str] = []
    cur = conn.execute(
        "SELECT id FROM chunks WHERE org = ? AND domain = ? AND id >= ? ORDER BY id",
        (*bucket, prefix),
    )
    try:
        for (cid,) in cur:
            if not cid.startswith(prefix) or len(out) >= limit:
                break
            out.append(cid)
    finally:
        cur.close()
    return out


def _count(conn: sqlite3.Connection, bucket: tuple[str, str] | None) -> int:
    if bucket is None:
        row = conn.execute("SELECT count(*) FROM chunks").fetchone()
    else:
        row = conn.execute(
            "SELECT count(*) FROM chunks WHERE org = ? AND domain = ?", bucket
        ).fetchone()
    return int(row[0])


def _parts(values: Sequence[_T], size: int = 500) -> list[Sequence[_T]]:
    # Stay well under SQLite's bound-parameter limit.
    return [values[i : i + size] for i in range(0, len(values), size)]


def _commit_unless(conn: sqlite3.Connection, gate: CommitGate | None) -> None:
    if gate is not None and not gate.enter():
        raise StoreError("the caller gave up on this write before it committed; rolled back")
    conn.execute("COMMIT")


def _rollback(conn: sqlite3.Connection) -> None:
    if conn.in_transaction:
        conn.execute("ROLLBACK")
