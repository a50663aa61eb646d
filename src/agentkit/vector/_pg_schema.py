"""Creating and checking a collection's schema, once, under an advisory lock.

``agentkit_schema`` records, per collection, the schema version, the vector width and
the embedder that wrote it, so a store opened later with another width or model is
refused instead of silently mixing incomparable vectors.
"""

from __future__ import annotations

from dataclasses import dataclass

import psycopg
from psycopg import sql

from agentkit.kernel.errors import StoreError
from agentkit.vector import _pg_bm25
from agentkit.vector._embedder_id import same_vectors
from agentkit.vector._pg_sql import SCHEMA_TABLE, WRITES_TABLE, key_index

# 2: BM25 statistics tables and their triggers. 3: per-term bounds (max tf, shortest
# document per tf) beside df, kept by renamed trigger functions. Older collections are
# upgraded and backfilled on open; older code refuses a newer collection.
SCHEMA_VERSION = 3
# Any constant works; it only has to be the same in every process touching the schema.
_LOCK_KEY = 0x61676B74  # "agkt"


@dataclass(frozen=True, slots=True)
class SchemaInfo:
    version: int
    dim: int
    embedder: str
    pgvector: tuple[int, ...]


def _version_tuple(text: str) -> tuple[int, ...]:
    out: list[int] = []
    for part in text.split("."):
        digits = "".join(ch for ch in part if ch.isdigit())
        out.append(int(digits) if digits else 0)
    return tuple(out)


async def ensure_schema(
    conn: psycopg.AsyncConnection[tuple[object, ...]],
    *,
    collection: str,
    dim: int | None,
    embedder: str | None,
    create: bool,
    hnsw_m: int,
    hnsw_ef_construction: int,
    indexed_keys: tuple[str, ...] = (),
) -> SchemaInfo:
    """Create the extension, the registry and the collection's table if missing.

    Returns what the registry says, which may differ from ``dim``/``embedder``: the
    caller decides when a mismatch matters (vector calls), so lexical reads and
    deletes still work on a store opened with another embedder. An EMPTY collection
    is re-dimensioned for the new embedder instead, since nothing would be mixed.
    ``dim=None`` (no embedder) or ``create=False`` never creates a collection.
    """
    table = sql.Identifier(collection)
    async with conn.transaction():
        # Serialises first use across processes: CREATE ... IF NOT EXISTS still races.
        await conn.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK_KEY,))
        if dim is None or not create:
            known = await _has_registry(conn) and bool(
                await (
                    await conn.execute(
                        sql.SQL("SELECT 1 FROM {} WHERE collection = %s").format(
                            sql.Identifier(SCHEMA_TABLE)
                        ),
                        (collection,),
                    )
                ).fetchone()
            )
            if not known:
                raise StoreError(
                    f"collection {collection!r} does not exist in this database "
                    "(ingest something first"
                    + (", with an embedder)" if dim is None else ")")
                )
        row = await (
            await conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
        ).fetchone()
        if row is None:
            try:
                async with conn.transaction():
                    await conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            except psycopg.Error as exc:
                raise StoreError(
                    "the pgvector extension is not installed in this database and could not "
                    f"be created ({exc}); run CREATE EXTENSION vector as a superuser"
                ) from exc
            row = await (
                await conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
            ).fetchone()
        pgvector = _version_tuple(str(row[0])) if row else (0,)
        await conn.execute(
            sql.SQL(
                "CREATE TABLE IF NOT EXISTS {} ("
                " collection text PRIMARY KEY,"
                " version integer NOT NULL,"
                " dim integer NOT NULL,"
                " embedder text NOT NULL,"
                " created_at timestamptz NOT NULL DEFAULT now())"
            ).format(sql.Identifier(SCHEMA_TABLE))
        )
        # Deletes stamp it (a deleted row keeps no updated_at); stats reads it.
        await conn.execute(
            sql.SQL(
                "CREATE TABLE IF NOT EXISTS {} ("
                " collection text NOT NULL,"
                " org_id text NOT NULL,"
                " domain_id text NOT NULL,"
                " at timestamptz NOT NULL,"
                " PRIMARY KEY (collection, org_id, domain_id))"
            ).format(sql.Identifier(WRITES_TABLE))
        )
        found = await (
            await conn.execute(
                sql.SQL("SELECT version, dim, embedder FROM {} WHERE collection = %s").format(
                    sql.Identifier(SCHEMA_TABLE)
                ),
                (collection,),
            )
        ).fetchone()
        if found is None:
            assert dim is not None and embedder is not None  # checked above
            version, width, name = SCHEMA_VERSION, dim, embedder
            await conn.execute(
                sql.SQL(
                    "INSERT INTO {} (collection, version, dim, embedder) VALUES (%s, %s, %s, %s)"
                ).format(sql.Identifier(SCHEMA_TABLE)),
                (collection, version, width, name),
            )
        else:
            version, width, name = int(found[0]), int(found[1]), str(found[2])  # type: ignore[call-overload]
            if version > SCHEMA_VERSION:
                raise StoreError(
                    f"collection {collection!r} has schema version {version}, newer than this "
                    f"agentkit understands ({SCHEMA_VERSION}); upgrade agentkit-memory"
                )
            if dim is not None and (width != dim or not same_vectors(name, str(embedder))):
                width, name = await _rebuild_if_empty(
                    conn, collection, (width, name), (dim, str(embedder))
                )
        existed = await _has_table(conn, collection)
        await conn.execute(_pg_bm25.TOKENS_FUNCTION)  # the table's tokens column calls it
        await conn.execute(
            sql.SQL(
                "CREATE TABLE IF NOT EXISTS {t} ("
                " org_id text NOT NULL,"
                " domain_id text NOT NULL,"
                " id text NOT NULL,"
                " text text NOT NULL,"
                " metadata jsonb NOT NULL DEFAULT '{{}}'::jsonb,"
                " embedding vector({dim}) NOT NULL,"
                " tsv tsvector GENERATED ALWAYS AS"
                " (to_tsvector('english'::regconfig, text)) STORED,"
                " {tokens},"
                " updated_at timestamptz NOT NULL DEFAULT now(),"
                " PRIMARY KEY (org_id, domain_id, id))"
            ).format(t=table, dim=sql.Literal(width), tokens=sql.SQL(_pg_bm25.TOKENS_COLUMN))
        )
        await conn.execute(
            sql.SQL(
                "CREATE INDEX IF NOT EXISTS {i} ON {t} USING hnsw (embedding vector_cosine_ops)"
                " WITH (m = {m}, ef_construction = {ef})"
            ).format(
                i=sql.Identifier(f"{collection}_hnsw"),
                t=table,
                m=sql.Literal(hnsw_m),
                ef=sql.Literal(hnsw_ef_construction),
            )
        )
        await conn.execute(
            sql.SQL("CREATE INDEX IF NOT EXISTS {i} ON {t} USING gin (tsv)").format(
                i=sql.Identifier(f"{collection}_tsv"), t=table
            )
        )
        await conn.execute(
            sql.SQL(
                "CREATE INDEX IF NOT EXISTS {i} ON {t} USING gin (metadata jsonb_path_ops)"
            ).format(i=sql.Identifier(f"{collection}_meta"), t=table)
        )
        # Range filters on these keys are served by a btree; statistics on the type
        # guard every compiled ordering carries let the planner see how many rows a
        # filter keeps (without them it guesses 0.5%, and sorts where HNSW is cheaper).
        expression_stats = conn.info.server_version >= 140000
        for key in indexed_keys:
            index, expression = key_index(collection, key)
            await conn.execute(
                sql.SQL("CREATE INDEX IF NOT EXISTS {i} ON {t} ({e})").format(
                    i=sql.Identifier(index), t=table, e=expression
                )
            )
            if expression_stats:
                stats = sql.Identifier(f"{index}_t")
                await conn.execute(
                    sql.SQL("CREATE STATISTICS IF NOT EXISTS {s} ON (jsonb_typeof({e})) FROM {t}")
                    .format(s=stats, e=expression, t=table)
                )
        if not existed or found is None or version < SCHEMA_VERSION:
            await _pg_bm25.install(conn, collection, fresh=not existed)
            if version < SCHEMA_VERSION:
                version = SCHEMA_VERSION
                await conn.execute(
                    sql.SQL("UPDATE {} SET version = %s WHERE collection = %s").format(
                        sql.Identifier(SCHEMA_TABLE)
                    ),
                    (version, collection),
                )
    return SchemaInfo(version=version, dim=width, embedder=name, pgvector=pgvector)


async def _has_registry(conn: psycopg.AsyncConnection[tuple[object, ...]]) -> bool:
    row = await (
        await conn.execute("SELECT to_regclass(%s) IS NOT NULL", (SCHEMA_TABLE,))
    ).fetchone()
    return bool(row and row[0])


async def _rebuild_if_empty(
    conn: psycopg.AsyncConnection[tuple[object, ...]],
    collection: str,
    recorded: tuple[int, str],
    wanted: tuple[int, str],
) -> tuple[int, str]:
    """Adopt the new embedder when the collection holds no rows; else keep the record."""
    table = sql.Identifier(collection)
    if await _has_table(conn, collection):
        row = await (
            await conn.execute(sql.SQL("SELECT EXISTS (SELECT 1 FROM {})").format(table))
        ).fetchone()
        if row and row[0]:
            return recorded
        await conn.execute(
            sql.SQL("ALTER TABLE {} ALTER COLUMN embedding TYPE vector({})").format(
                table, sql.Literal(wanted[0])
            )
        )
    await conn.execute(
        sql.SQL("UPDATE {} SET dim = %s, embedder = %s WHERE collection = %s").format(
            sql.Identifier(SCHEMA_TABLE)
        ),
        (wanted[0], wanted[1], collection),
    )
    return wanted


async def _has_table(conn: psycopg.AsyncConnection[tuple[object, ...]], name: str) -> bool:
    row = await (await conn.execute("SELECT to_regclass(%s) IS NOT NULL", (name,))).fetchone()
    return bool(row and row[0])
