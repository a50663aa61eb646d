"""PostgresVectorStore: the same VectorPort, on PostgreSQL + pgvector, for scale-out.

One table per collection, keyed by (org_id, domain_id, id) so every statement names its
tenant bucket; an HNSW index answers cosine search, a generated ``tsvector`` with a GIN
index answers word search, and ``jsonb`` metadata takes ``where`` compiled to SQL.

Connections come from a psycopg ``AsyncConnectionPool`` opened on first use, so building
the store costs nothing and a wrong URL fails at the first call with a StoreError. A
pool belongs to one event loop (see ``_bind_loop``). Every search is one round trip:
``hnsw.ef_search`` is a session setting, re-sent only when a connection needs another
value, and the query vector travels once, in binary.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import re
import weakref
from collections.abc import AsyncIterator, Mapping, Sequence
from types import TracebackType
from typing import Any, Self

import numpy as np
import numpy.typing as npt
import psycopg
from psycopg import sql
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from agentkit.kernel.ctx import Scope
from agentkit.kernel.errors import InvalidArgument, InvalidArgumentType, StoreError
from agentkit.kernel.validate import check_exact, check_filter, check_k, check_query
from agentkit.kernel.where import Where, parse_where
from agentkit.vector import _pg_bm25
from agentkit.vector._embedder_id import MIX_HINT, embedder_name, same_vectors
from agentkit.vector._forgetting import (
    SCAN_LIMIT,
    check_forget_filter,
    check_prefix,
    check_scan,
)
from agentkit.vector._pg_schema import SchemaInfo, ensure_schema
from agentkit.vector._pg_sql import (
    SCHEMA_TABLE,
    WRITES_TABLE,
    check_collection,
    check_ids,
    check_indexed_keys,
    check_scope,
    prepare_chunks,
    query_words,
    where_clause,
)
from agentkit.vector.port import Chunk, Embedder
from agentkit.vector.stats import ScopeStats, StoreStats, scope_of

_Conn = psycopg.AsyncConnection[tuple[Any, ...]]
# Batches at least this large go through COPY into a staging table.
COPY_THRESHOLD = 256
# Loads at least this large refresh the planner's statistics before committing.
ANALYZE_THRESHOLD = 5000


# One document per distinct (corpus, path, doc_id) among rows naming a path or a doc_id;
# every other row is its own. Must agree with agentkit.vector.stats.document_key.
_DOCUMENT = sql.SQL(
    "CASE WHEN metadata ? 'path' OR metadata ? 'doc_id' THEN jsonb_build_array("
    "metadata ? 'corpus', metadata -> 'corpus', metadata ? 'path', metadata -> 'path',"
    " metadata ? 'doc_id', metadata -> 'doc_id')::text ELSE 'record:' || id END"
)

# A LIMIT the server accepts (k may be any positive int) and pgvector's ef_search ceiling.
_MAX_LIMIT = 2**31 - 1
_MAX_EF_SEARCH = 1000


def _finite(score: object) -> float:
    value = float(score)  # type: ignore[arg-type]
    return value if math.isfinite(value) else 0.0


def _redact(url: str) -> str:
    return re.sub(r"(//[^:/@]*:)[^@]*@", r"\1***@", url)


async def recorded_embedder(
    url: str, collection: str = "agentkit_chunks"
) -> tuple[str, int] | None:
    """(name, dim) of the embedder a collection's vectors were written with.

    None when the collection is missing or holds no rows, so a command can pick its
    embedder from the store before building one (as the CLI does for SQLite files).
    """
    name = check_collection(collection)
    try:
        conn = await psycopg.AsyncConnection.connect(url, autocommit=True)
    except psycopg.Error as exc:
        raise StoreError(f"cannot connect to PostgreSQL at {_redact(url)}: {exc}") from exc
    async with conn:
        try:
            cur = await conn.execute(
                "SELECT to_regclass(%s) IS NOT NULL AND to_regclass(%s) IS NOT NULL",
                (SCHEMA_TABLE, name),
            )
            ready = await cur.fetchone()
            if not ready or not ready[0]:
                return None
            cur = await conn.execute(
                sql.SQL(
                    "SELECT s.embedder, s.dim FROM {s} AS s"
                    " WHERE s.collection = %s AND EXISTS (SELECT 1 FROM {t})"
                ).format(s=sql.Identifier(SCHEMA_TABLE), t=sql.Identifier(name)),
                (name,),
            )
            row = await cur.fetchone()
        except psycopg.Error as exc:
            raise StoreError(f"cannot read the schema of {name!r}: {exc}") from exc
    return None if row is None else (str(row[0]), int(row[1]))


async def _configure(conn: _Conn) -> None:
    from pgvector.psycopg import register_vector_async  # type: ignore[import-untyped]

    await register_vector_async(conn)


class PostgresVectorStore:
    """A durable, multi-process VectorPort and LexicalPort on PostgreSQL.

    ``url`` is a libpq URL (``postgresql://user:pw@host:5432/db``). ``collection`` names
    the table. ``embedder=None`` opens an existing collection for words, counts, gets
    and deletes only (no model needed); ``create=False`` refuses to create a missing
    collection. The schema registry records the embedder's name and width: vector calls
    with another embedder raise StoreError (an empty collection adopts the new one).

    ``ef_search`` raises the HNSW candidate-list floor (each query uses at least
    ``max(40, 2*k)``); ``hnsw_m`` / ``hnsw_ef_construction`` only matter when the
    collection's index is first created. ``bulk_upsert`` is the initial-load path.

    Args:
        url: A libpq connection URL.
        embedder: The model for vector calls; ``None`` for words, counts, gets and
            deletes only.
        collection: The table this store uses; several collections share a database.
        min_size: Connections the pool keeps open.
        max_size: Connections the pool may open at most.
        create: Whether a missing collection may be created.
        ef_search: The HNSW candidate-list floor for queries.
        hnsw_m: HNSW graph degree, used when the index is first built.
        hnsw_ef_construction: HNSW build-time candidate list, used when the index is
            first built.
        indexed_keys: Metadata keys to keep a btree index on (``metadata -> key``), so
            a ``where`` ordering on them (``$gt``, ``$lt``, ...) is served by the index:
            a selective range filter then costs what its rows cost, not a scan.
            Equality and ``$in`` need none (the metadata GIN index serves them).

    Raises:
        InvalidArgumentType: An empty ``url``, an embedder without a positive int ``dim``,
            or a non-int size or HNSW setting.
        InvalidArgument: A size or HNSW setting below its minimum, or ``max_size`` below
            ``min_size``.
    """

    def __init__(
        self,
        url: str,
        *,
        embedder: Embedder | None,
        collection: str = "agentkit_chunks",
        min_size: int = 1,
        max_size: int = 10,
        create: bool = True,
        ef_search: int = 40,
        hnsw_m: int = 16,
        hnsw_ef_construction: int = 64,
        indexed_keys: Sequence[str] = (),
    ) -> None:
        if not isinstance(url, str) or not url:
            raise InvalidArgumentType("url must be a non-empty libpq URL string")
        dim = None if embedder is None else getattr(embedder, "dim", None)
        if embedder is not None and (isinstance(dim, bool) or not isinstance(dim, int) or dim < 1):
            raise InvalidArgumentType("embedder must be an Embedder with a positive int dim")
        for name, value, low in (
            ("min_size", min_size, 0),
            ("max_size", max_size, 1),
            ("ef_search", ef_search, 1),
            ("hnsw_m", hnsw_m, 2),
            ("hnsw_ef_construction", hnsw_ef_construction, 4),
        ):
            if isinstance(value, bool) or not isinstance(value, int):
                raise InvalidArgumentType(f"{name} must be an int, got {type(value).__name__}")
            if value < low:
                raise InvalidArgument(f"{name} must be >= {low}, got {value}")
        if max_size < min_size:
            raise InvalidArgument(f"max_size ({max_size}) must be >= min_size ({min_size})")
        self.url = url
        self.embedder = embedder
        self.collection = check_collection(collection)
        self.dim: int | None = dim
        self.ef_search = ef_search
        self._create = bool(create)
        self._min_size = min_size
        self._max_size = max_size
        self._hnsw = (hnsw_m, hnsw_ef_construction)
        self._indexed_keys = check_indexed_keys(indexed_keys)
        self._pool: AsyncConnectionPool[_Conn] | None = None
        self._schema: SchemaInfo | None = None
        self._open_lock = asyncio.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._closed = False
        self._table = sql.Identifier(self.collection)
        # hnsw.ef_search last set on each pooled connection (session-level setting).
        self._ef_by_conn: weakref.WeakKeyDictionary[_Conn, int] = weakref.WeakKeyDictionary()

    def __repr__(self) -> str:
        return f"PostgresVectorStore({_redact(self.url)!r}, collection={self.collection!r})"

    # -- lifecycle ---------------------------------------------------------------------

    def _bind_loop(self) -> None:
        """A pool belongs to one event loop; follow the caller to a new one when safe.

        ``asyncio.run`` twice (scripts, notebooks) leaves the first loop closed: its pool
        is abandoned and a fresh one opens on the new loop. A pool whose loop is still
        running elsewhere cannot be shared, and saying so beats psycopg's errors.
        """
        loop = asyncio.get_running_loop()
        if self._loop is loop:
            return
        if self._loop is not None and not self._loop.is_closed() and self._pool is not None:
            raise StoreError(
                f"{self!r} is in use by another running event loop; psycopg pools cannot "
                "cross loops, so open one store per event loop"
            )
        self._loop = loop
        self._pool = None
        self._open_lock = asyncio.Lock()
        self._ef_by_conn = weakref.WeakKeyDictionary()

    async def _ready(self) -> AsyncConnectionPool[_Conn]:
        self._bind_loop()
        if self._pool is not None:
            return self._pool
        async with self._open_lock:
            if self._closed:
                raise StoreError(f"{self!r} is closed")
            if self._pool is None:
                self._schema = await self._bootstrap()
                pool: AsyncConnectionPool[_Conn] = AsyncConnectionPool(
                    self.url,
                    min_size=self._min_size,
                    max_size=self._max_size,
                    open=False,
                    configure=_configure,
                    kwargs={"autocommit": True},
                    name=f"agentkit-{self.collection}",
                )
                try:
                    await pool.open(wait=True, timeout=30)
                except (PoolTimeout, psycopg.Error) as exc:
                    await pool.close()
                    raise StoreError(f"cannot open a pool to {_redact(self.url)}: {exc}") from exc
                self._pool = pool
        return self._pool

    async def _bootstrap(self) -> SchemaInfo:
        try:
            conn = await psycopg.AsyncConnection.connect(self.url, autocommit=True)
        except psycopg.Error as exc:
            raise StoreError(f"cannot connect to PostgreSQL at {_redact(self.url)}: {exc}") from exc
        async with conn:
            try:
                return await ensure_schema(
                    conn,
                    collection=self.collection,
                    dim=self.dim,
                    embedder=None if self.embedder is None else embedder_name(self.embedder),
                    create=self._create,
                    hnsw_m=self._hnsw[0],
                    hnsw_ef_construction=self._hnsw[1],
                    indexed_keys=self._indexed_keys,
                )
            except psycopg.Error as exc:
                raise StoreError(
                    f"cannot create the schema for {self.collection!r}: {exc}"
                ) from exc

    async def open(self) -> Self:
        """Connect, and create or check the schema; idempotent (every call does it lazily)."""
        await self._ready()
        return self

    async def close(self) -> None:
        """Close the pool; the store cannot be used afterwards."""
        if self._loop is not asyncio.get_running_loop():
            self._closed = True  # the pool (if any) lives on a loop we cannot drive
            return
        async with self._open_lock:
            self._closed = True
            pool, self._pool = self._pool, None
        if pool is not None:
            await pool.close()

    async def __aenter__(self) -> Self:
        return await self.open()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    def _check_vectors(self, op: str) -> tuple[SchemaInfo, Embedder]:
        info = self._schema
        assert info is not None
        if self.embedder is None:
            raise StoreError(
                f"{op} needs an embedder; this PostgresVectorStore was opened with "
                "embedder=None (lexical search only)"
            )
        if info.dim != self.dim:
            raise StoreError(
                f"collection {self.collection!r} holds {info.dim}-dimensional vectors but the "
                f"embedder makes {self.dim}; use the embedder it was built with "
                f"({info.embedder}) or another collection"
            )
        name = embedder_name(self.embedder)
        if not same_vectors(info.embedder, name):
            raise StoreError(
                f"collection {self.collection!r} was built with embedder {info.embedder!r}, "
                f"not {name!r}; vectors from different models cannot be compared. " + MIX_HINT
            )
        return info, self.embedder

    async def _embed(self, embedder: Embedder, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        vectors = np.asarray(await embedder.embed(list(texts)), dtype=np.float32)
        if vectors.shape != (len(texts), self.dim):
            raise StoreError(
                f"embedder returned shape {vectors.shape}, expected {(len(texts), self.dim)}"
            )
        if not np.isfinite(vectors).all():
            raise StoreError("embedder returned non-finite values (NaN or infinity)")
        return vectors

    @contextlib.asynccontextmanager
    async def _connection(self, pool: AsyncConnectionPool[_Conn]) -> AsyncIterator[_Conn]:
        """A pooled connection whose driver errors surface as StoreError."""
        try:
            async with pool.connection() as conn:
                yield conn
        except (psycopg.Error, PoolTimeout) as exc:
            raise StoreError(f"PostgreSQL error on {self.collection!r}: {exc}") from exc

    # -- writes -----------------------------------------------------------------------

    async def upsert(self, chunks: Sequence[Chunk], *, scope: Scope) -> None:
        """Insert or replace by id within the scope, all or nothing.

        Batches of COPY_THRESHOLD rows or more go through COPY into a staging table;
        either way one transaction holds the whole batch. Rows whose text, metadata and
        vector are unchanged are not rewritten, so re-ingesting the same content is cheap.
        """
        await self._write(chunks, scope, copy=None, rebuild_index=False)

    async def bulk_upsert(
        self, chunks: Sequence[Chunk], *, scope: Scope, rebuild_index: bool = False
    ) -> None:
        """``upsert`` through COPY whatever the batch size: the bulk-ingest path.

        ``rebuild_index=True`` drops the HNSW index for the load and builds it again
        before the commit. Building a graph once is many times faster than growing it row
        by row, but the table is locked (readers included) until the commit, so keep it
        for initial loads and maintenance windows.
        """
        await self._write(chunks, scope, copy=True, rebuild_index=bool(rebuild_index))

    async def _write(
        self, chunks: Sequence[Chunk], scope: Scope, *, copy: bool | None, rebuild_index: bool
    ) -> None:
        org, dom = check_scope(scope)
        rows = prepare_chunks(chunks)
        if not rows:
            return
        pool = await self._ready()
        _, embedder = self._check_vectors("upsert")
        vectors = await self._embed(embedder, [r[1] for r in rows])
        if copy is None:
            copy = len(rows) >= COPY_THRESHOLD
        async with self._connection(pool) as conn:
            if copy:
                await self._copy_upsert(conn, org, dom, rows, vectors, rebuild_index)
            else:
                await self._insert_upsert(conn, org, dom, rows, vectors)

    def _on_conflict(self) -> sql.Composed:
        return sql.SQL(
            " ON CONFLICT (org_id, domain_id, id) DO UPDATE SET"
            " text = EXCLUDED.text, metadata = EXCLUDED.metadata,"
            " embedding = EXCLUDED.embedding, updated_at = now()"
            " WHERE ({t}.text, {t}.metadata, {t}.embedding)"
            " IS DISTINCT FROM (EXCLUDED.text, EXCLUDED.metadata, EXCLUDED.embedding)"
        ).format(t=self._table)

    async def _insert_upsert(
        self,
        conn: _Conn,
        org: str,
        dom: str,
        rows: list[tuple[str, str, str]],
        vectors: npt.NDArray[np.float32],
    ) -> None:
        stmt = sql.SQL(
            "INSERT INTO {t} (org_id, domain_id, id, text, metadata, embedding)"
            " VALUES (%s, %s, %s, %s, %s::jsonb, %s)"
        ).format(t=self._table) + self._on_conflict()
        params = [(org, dom, i, text, meta, vectors[n]) for n, (i, text, meta) in enumerate(rows)]
        async with conn.transaction(), conn.cursor() as cur:
            await cur.executemany(stmt, params)

    async def _copy_upsert(
        self,
        conn: _Conn,
        org: str,
        dom: str,
        rows: list[tuple[str, str, str]],
        vectors: npt.NDArray[np.float32],
        rebuild_index: bool,
    ) -> None:
        stage = sql.Identifier("_agentkit_stage")
        async with conn.transaction(), conn.cursor() as cur:
            index_def: str | None = None
            if rebuild_index:
                # Rebuilt from the server's own definition, so its m/ef_construction stay.
                await cur.execute(
                    "SELECT indexdef FROM pg_indexes"
                    " WHERE schemaname = current_schema() AND indexname = %s",
                    (f"{self.collection}_hnsw",),
                )
                found = await cur.fetchone()
                if found is not None:
                    index_def = str(found[0])
                    await cur.execute(
                        sql.SQL("DROP INDEX {}").format(sql.Identifier(f"{self.collection}_hnsw"))
                    )
            await cur.execute(
                sql.SQL(
                    "CREATE TEMP TABLE {s} (id text, text text, metadata text,"
                    " embedding vector({d})) ON COMMIT DROP"
                ).format(s=stage, d=sql.Literal(self.dim))
            )
            async with cur.copy(
                sql.SQL(
                    "COPY {s} (id, text, metadata, embedding) FROM STDIN (FORMAT BINARY)"
                ).format(s=stage)
            ) as copy:
                copy.set_types(["text", "text", "text", "vector"])
                for n, (i, text, meta) in enumerate(rows):
                    await copy.write_row((i, text, meta, vectors[n]))
            await cur.execute(
                sql.SQL(
                    "INSERT INTO {t} (org_id, domain_id, id, text, metadata, embedding)"
                    " SELECT %s, %s, id, text, metadata::jsonb, embedding FROM {s}"
                ).format(t=self._table, s=stage)
                + self._on_conflict(),
                (org, dom),
            )
            if index_def is not None:
                await cur.execute(sql.SQL(index_def))  # the server wrote it
            if rebuild_index or len(rows) >= ANALYZE_THRESHOLD:
                # Fresh statistics let the planner pick HNSW for a big tenant and an exact
                # scan of the scope's rows for a small one; stale ones pick wrong.
                await cur.execute(sql.SQL("ANALYZE {}").format(self._table))

    async def delete(self, ids: Sequence[str], *, scope: Scope) -> int:
        """Remove these ids from the scope's bucket only; unknown ids are ignored.

        Returns how many rows went. The row carries its vector and its ``tsvector``, so
        dense and word search lose it in the same commit, in every process.
        """
        org, dom = check_scope(scope)
        wanted = check_ids(ids)
        if not wanted:
            return 0
        pool = await self._ready()
        async with self._connection(pool) as conn, conn.transaction():
            return await self._delete_ids(conn, org, dom, wanted)

    async def delete_where(self, where: Mapping[str, Any], *, scope: Scope) -> int:
        """Remove the scope's rows matching ``where`` (search's rule); how many went.

        The rows are chosen by the same compiled SQL a search filters with, and locked
        before they go, so what goes is exactly what a search with this ``where`` would
        have shown. An empty ``where`` is refused: use ``delete_scope``.
        """
        org, dom = check_scope(scope)
        flt = check_forget_filter(where)
        pool = await self._ready()
        clause, params = where_clause(flt)
        stmt = sql.SQL(
            "SELECT id FROM {t} WHERE org_id = %(org)s AND domain_id = %(dom)s{w}"
            " FOR UPDATE"
        ).format(t=self._table, w=clause)
        async with self._connection(pool) as conn, conn.transaction():
            cur = await conn.execute(stmt, {"org": org, "dom": dom, **params})
            ids = [i for (i,) in await cur.fetchall()]
            return await self._delete_ids(conn, org, dom, ids) if ids else 0

    async def delete_scope(self, *, scope: Scope) -> int:
        """Remove every row of this one scope; other scopes untouched. How many went."""
        org, dom = check_scope(scope)
        pool = await self._ready()
        async with self._connection(pool) as conn, conn.transaction():
            cur = await conn.execute(
                sql.SQL("DELETE FROM {t} WHERE org_id = %s AND domain_id = %s").format(
                    t=self._table
                ),
                (org, dom),
            )
            removed = max(cur.rowcount, 0)
            if removed:
                await self._touch(conn, org, dom)
        return removed

    async def _delete_ids(self, conn: _Conn, org: str, dom: str, ids: list[str]) -> int:
        cur = await conn.execute(
            sql.SQL(
                "DELETE FROM {t} WHERE org_id = %s AND domain_id = %s AND id = ANY(%s)"
            ).format(t=self._table),
            (org, dom, ids),
        )
        removed = max(cur.rowcount, 0)
        if removed:
            await self._touch(conn, org, dom)
        return removed

    async def _touch(self, conn: _Conn, org: str, dom: str) -> None:
        """Stamp the scope's last change, in the deleting transaction (for stats)."""
        await conn.execute(
            sql.SQL(
                "INSERT INTO {w} (collection, org_id, domain_id, at) VALUES (%s, %s, %s, now())"
                " ON CONFLICT (collection, org_id, domain_id) DO UPDATE SET at = EXCLUDED.at"
            ).format(w=sql.Identifier(WRITES_TABLE)),
            (self.collection, org, dom),
        )

    async def scan(
        self,
        *,
        scope: Scope,
        where: Mapping[str, Any] | None = None,
        after: str | None = None,
        limit: int = SCAN_LIMIT,
    ) -> list[Chunk]:
        """A page of the scope's rows by ascending id, ids above ``after`` only.

        Ordered as the primary key orders ``id`` (the database's collation), so paging
        walks the index. Pass a page's last id as ``after`` for the next page.
        """
        org, dom = check_scope(scope)
        checked, cursor, size = check_scan(where, after, limit)
        flt = parse_where(checked)
        pool = await self._ready()
        clause, params = where_clause(flt)
        start = sql.SQL("") if cursor is None else sql.SQL(" AND id > %(after)s")
        async with self._connection(pool) as conn:
            cur = await conn.execute(
                sql.SQL(
                    "SELECT id, text, metadata FROM {t}"
                    " WHERE org_id = %(org)s AND domain_id = %(dom)s{a}{w}"
                    " ORDER BY id LIMIT %(limit)s"
                ).format(t=self._table, a=start, w=clause),
                {"org": org, "dom": dom, "after": cursor, "limit": size, **params},
            )
            return [Chunk(i, text, meta) for i, text, meta in await cur.fetchall()]

    async def ids_with_prefix(
        self, prefix: str, *, scope: Scope, limit: int = SCAN_LIMIT
    ) -> list[str]:
        """The scope's ids that start with ``prefix`` (compared as text: nothing in it is a
        wildcard), ascending, at most ``limit``: how a shortened id, as tables print
        them, is resolved to the records it could name."""
        org, dom = check_scope(scope)
        wanted, size = check_prefix(prefix, limit)
        if "\x00" in wanted:
            return []  # no stored id holds NUL
        pool = await self._ready()
        async with self._connection(pool) as conn:
            # starts_with, not LIKE: a % or _ the user typed is a character, not a pattern.
            cur = await conn.execute(
                sql.SQL(
                    "SELECT id FROM {t} WHERE org_id = %s AND domain_id = %s"
                    " AND starts_with(id, %s) ORDER BY id LIMIT %s"
                ).format(t=self._table),
                (org, dom, wanted, size),
            )
            return [str(row[0]) for row in await cur.fetchall()]

    async def stats(self) -> StoreStats:
        """Per scope: rows, documents, last write; the registry's embedder; the size of
        the table with its indexes and TOAST. Reads only."""
        pool = await self._ready()
        info = self._schema
        assert info is not None
        async with self._connection(pool) as conn:
            cur = await conn.execute(
                sql.SQL(
                    "SELECT org_id, domain_id, count(*), count(DISTINCT {d}),"
                    " extract(epoch FROM max(updated_at))::float8"
                    " FROM {t} GROUP BY org_id, domain_id"
                ).format(t=self._table, d=_DOCUMENT)
            )
            rows = await cur.fetchall()
            cur = await conn.execute(
                sql.SQL(
                    "SELECT org_id, domain_id, extract(epoch FROM at)::float8 FROM {w}"
                    " WHERE collection = %s"
                ).format(w=sql.Identifier(WRITES_TABLE)),
                (self.collection,),
            )
            deletes = {(o, d): float(at) for o, d, at in await cur.fetchall()}
            cur = await conn.execute("SELECT pg_total_relation_size(%s::regclass)",
                                     (self.collection,))
            size = await cur.fetchone()
        scopes: dict[tuple[str, str], ScopeStats] = {}
        for org, dom, records, documents, written in rows:
            last = max(float(written), deletes.get((org, dom), 0.0))
            scopes[(org, dom)] = ScopeStats(scope_of(org, dom), records, documents, last)
        for (org, dom), at in deletes.items():
            if (org, dom) not in scopes:
                scopes[(org, dom)] = ScopeStats(scope_of(org, dom), 0, 0, at)
        return StoreStats(
            kind="postgres",
            location=f"{_redact(self.url)} (collection {self.collection})",
            embedder=info.embedder,
            dim=info.dim,
            bytes_on_disk=None if size is None else int(size[0]),
            scopes=[scopes[key] for key in sorted(scopes)],
        )

    async def get(self, ids: Sequence[str], *, scope: Scope) -> list[Chunk]:
        """The stored chunks among ``ids``, in the order asked; missing ids are skipped."""
        org, dom = check_scope(scope)
        wanted = check_ids(ids)
        if not wanted:
            return []
        pool = await self._ready()
        async with self._connection(pool) as conn:
            cur = await conn.execute(
                sql.SQL(
                    "SELECT id, text, metadata FROM {t}"
                    " WHERE org_id = %s AND domain_id = %s AND id = ANY(%s)"
                ).format(t=self._table),
                (org, dom, wanted),
            )
            found = {i: Chunk(i, text, meta) for i, text, meta in await cur.fetchall()}
        return [found[i] for i in dict.fromkeys(wanted) if i in found]

    async def count(self, *, scope: Scope | None = None) -> int:
        """Rows in one scope's bucket, or in the whole collection when ``scope`` is None."""
        bucket = None if scope is None else check_scope(scope)
        pool = await self._ready()
        async with self._connection(pool) as conn:
            if bucket is None:
                cur = await conn.execute(sql.SQL("SELECT count(*) FROM {t}").format(t=self._table))
            else:
                cur = await conn.execute(
                    sql.SQL(
                        "SELECT count(*) FROM {t} WHERE org_id = %s AND domain_id = %s"
                    ).format(t=self._table),
                    bucket,
                )
            row = await cur.fetchone()
        return int(row[0]) if row else 0

    # -- reads ------------------------------------------------------------------------

    async def search(
        self,
        query: str,
        *,
        k: int,
        scope: Scope,
        where: Mapping[str, Any] | None = None,
        exact: bool = False,
    ) -> list[tuple[float, Chunk]]:
        """Cosine similarity (1 - cosine distance), best first, inside one scope.

        pgvector's HNSW index answers approximately; ``exact=True`` compares the query
        with every row of the scope instead (no index scan), as on SQLite.
        """
        query = check_query(query)
        k = check_k(k)
        flt = check_filter(where)
        exact = check_exact(exact)
        check_scope(scope)
        await self._ready()
        _, embedder = self._check_vectors("search")
        vector = (await self._embed(embedder, [query]))[0]
        return await self._search_vector(vector, k, scope, flt, exact)

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
        flt = check_filter(where)
        exact = check_exact(exact)
        check_scope(scope)
        await self._ready()
        self._check_vectors("search_by_vector")
        try:
            row = np.array(vector, dtype=np.float32).reshape(-1)
        except (TypeError, ValueError) as exc:
            raise InvalidArgumentType(f"vector must be a numeric array: {exc}") from exc
        if row.shape != (self.dim,):
            raise InvalidArgument(f"vector must have {self.dim} values, got shape {row.shape}")
        if not np.isfinite(row).all():
            raise InvalidArgument("vector contains NaN or infinity")
        return await self._search_vector(row, k, scope, flt, exact)

    async def _search_vector(
        self,
        vector: npt.NDArray[np.float32],
        k: int,
        scope: Scope,
        flt: Where | None,
        exact: bool = False,
    ) -> list[tuple[float, Chunk]]:
        org, dom = check_scope(scope)
        pool = await self._ready()
        info, _ = self._check_vectors("search")
        clause, params = where_clause(flt)
        if not float(np.dot(vector, vector)) > 0.0:
            # A zero query (empty text under a hashing embedder) has no direction: cosine
            # is undefined, so every row scores 0.0, as in the in-memory store.
            stmt = sql.SQL(
                "SELECT 0.0::float8 AS score, id, text, metadata FROM {t}"
                " WHERE org_id = %(org)s AND domain_id = %(dom)s{w}"
                " ORDER BY id LIMIT %(limit)s"
            ).format(t=self._table, w=clause)
        else:
            # The vector is sent once (named placeholders are reused) and in binary.
            # Exact: an ORDER BY the HNSW index cannot serve (the distance plus 0), so
            # the planner scans the scope's rows and sorts by the true distance.
            order = "(embedding <=> %(q)s) + 0" if exact else "embedding <=> %(q)s"
            stmt = sql.SQL(
                "SELECT 1 - (embedding <=> %(q)s) AS score, id, text, metadata FROM {t}"
                " WHERE org_id = %(org)s AND domain_id = %(dom)s{w}"
                " ORDER BY " + order + " LIMIT %(limit)s"
            ).format(t=self._table, w=clause)
        base = {"q": vector, "org": org, "dom": dom, **params}

        async def fetch(conn: _Conn, limit: int) -> list[tuple[Any, ...]]:
            # pgvector caps ef_search at 1000; beyond it the iterative scan keeps going.
            ef = min(_MAX_EF_SEARCH, max(self.ef_search, 40, 2 * limit))
            await self._set_ef_search(conn, ef, info)
            cur = await conn.execute(stmt, {**base, "limit": limit})
            return await cur.fetchall()

        return await self._collect(pool, fetch, k)

    async def _set_ef_search(self, conn: _Conn, ef: int, info: SchemaInfo) -> None:
        """Session settings, sent only when a pooled connection needs a different value.

        A transaction with SET LOCAL would cost two extra round trips on every query.
        """
        if self._ef_by_conn.get(conn) == ef:
            return
        await conn.execute("SELECT set_config('hnsw.ef_search', %s, false)", (str(ef),))
        if info.pgvector >= (0, 8) and conn not in self._ef_by_conn:
            # A filtered scan keeps walking the graph until enough rows pass the filter.
            await conn.execute("SELECT set_config('hnsw.iterative_scan', 'relaxed_order', false)")
        self._ef_by_conn[conn] = ef

    async def lexical_search(
        self,
        query: str,
        *,
        k: int,
        scope: Scope,
        where: Mapping[str, Any] | None = None,
    ) -> list[tuple[float, Chunk]]:
        """BM25 over any of the query's words, best first, with the scope's own statistics.

        Document count, average length and document frequencies are the bucket's alone
        (see ``_pg_bm25``), so no other tenant's writes change these scores. Every
        statement runs in one read-only REPEATABLE READ snapshot, so the statistics the
        pruning relies on are the ones the rows are scored with. The ``where`` is in the
        SQL of every round (compiled to jsonb tests): a first round scores the matching
        rows holding the rarest words; its k-th score bounds which rows could still make
        the top k, and the second round asks GIN for those only
        (``_pg_bm25.candidate_clauses``).
        """
        query = check_query(query)
        k = check_k(k)
        flt = check_filter(where)
        org, dom = check_scope(scope)
        text = query_words(query)
        if text is None:
            return []
        pool = await self._ready()
        clause, params = where_clause(flt)
        async with self._connection(pool) as conn, self._snapshot(conn):
            cur = await conn.execute(
                _pg_bm25.terms_statement(),
                {"c": self.collection, "org": org, "dom": dom, "text": text,
                 "table": self.collection},
            )
            terms: dict[str, _pg_bm25.Term] = {}
            rows = await cur.fetchall()
            if not rows or not int(rows[0][2]):
                return []
            docs, avgdl = int(rows[0][2]), int(rows[0][3]) / int(rows[0][2])
            # A bucket holding a fifth of the table or more is searched through GIN.
            stmt = _pg_bm25.score_statement(
                self._table, clause, through_words=5 * docs >= float(rows[0][6] or 0)
            )
            for lexeme, df, _, _, max_tf, min_dl, _ in rows:
                if df > 0:
                    terms[lexeme] = _pg_bm25.term(lexeme, int(df), docs, avgdl, max_tf, min_dl)
            if not terms:
                return []
            lex = sorted(terms)
            base = {
                "org": org,
                "dom": dom,
                "lex": lex,
                "idf": [terms[x].idf for x in lex],
                "avgdl": avgdl,
                **params,
            }

            def fetcher(find: list[str]) -> Any:
                async def fetch(conn: _Conn, limit: int) -> list[tuple[Any, ...]]:
                    cur = await conn.execute(stmt, {**base, "find": find, "limit": limit})
                    return await cur.fetchall()

                return fetch

            everything = list(terms.values())
            first = _pg_bm25.first_round(everything, k)
            found = await self._collect_on(
                conn, fetcher([_pg_bm25.tsquery_of([t.lexeme for t in first])]), k
            )
            if len(first) == len(everything):
                return found  # the first round already scored every matching row
            threshold = found[-1][0] if len(found) >= k else 0.0
            clauses = _pg_bm25.candidate_clauses(everything, threshold)
            seen = {t.lexeme for t in first}
            if all(anchor.lexeme in seen for anchor, _ in clauses):
                return found  # every candidate held a first-round word: all were scored
            find = _pg_bm25.clause_tsqueries(clauses)
            return await self._collect_on(conn, fetcher(find), k)

    @contextlib.asynccontextmanager
    async def _snapshot(self, conn: _Conn) -> AsyncIterator[None]:
        """A read-only REPEATABLE READ transaction on an autocommit connection.

        Sequential scans are off inside it: a bucket's rows are reached through an index
        (the word index or the primary key), never by reading every tenant's rows.
        """
        await conn.execute(
            "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY; SET LOCAL enable_seqscan = off"
        )
        try:
            yield
        except BaseException:
            # A cancelled query leaves the connection busy; the pool then discards it.
            with contextlib.suppress(psycopg.Error):
                await conn.execute("ROLLBACK")
            raise
        await conn.execute("ROLLBACK")  # nothing was written; ends the snapshot

    async def _collect(
        self,
        pool: AsyncConnectionPool[_Conn],
        fetch: Any,
        k: int,
    ) -> list[tuple[float, Chunk]]:
        """Run ``fetch`` (its SQL holds the whole ``where``), widening the limit while
        the index hands back fewer than ``k`` rows and the bucket is not exhausted."""
        async with self._connection(pool) as conn:
            return await self._collect_on(conn, fetch, k)

    async def _collect_on(
        self, conn: _Conn, fetch: Any, k: int
    ) -> list[tuple[float, Chunk]]:
        """``_collect`` on a connection the caller holds (lexical search's snapshot)."""
        limit = min(_MAX_LIMIT, k)
        while True:
            rows = await fetch(conn, limit)
            out = [
                (_finite(score), Chunk(id=i, text=text, metadata=meta))
                for score, i, text, meta in rows
            ]
            if len(out) >= k or len(rows) < limit or limit >= _MAX_LIMIT:
                break
            limit = min(_MAX_LIMIT, limit * 4)
        out.sort(key=lambda pair: (-pair[0], pair[1].id))
        return out[:k]
