"""The SQLite store's file layout: tables, triggers, and what ``meta`` records.

The triggers are what make the file safe to share: every change to ``chunks``, by
whoever makes it, bumps the scope's generation (and the file's) and logs the row it
touched in the same transaction, which is how caches and the indexes beside the file,
anywhere, know they are behind and what to catch up on.
``meta`` names the schema version, the embedder whose vectors the file holds (a
different one is refused, since mixing two models' vectors silently ruins ranking),
and a random store id that the indexes beside the file are checked against.
"""

from __future__ import annotations

import sqlite3
import time
import uuid
from pathlib import Path

from agentkit.kernel.errors import StoreError
from agentkit.vector._embedder_id import MIX_HINT, embedder_name, same_vectors
from agentkit.vector.port import Embedder

SCHEMA_VERSION = "3"

# Every change to ``chunks`` bumps its scope's generation (and the file's) and logs the
# row it touched under that generation, in the changing transaction: op 1 a row put
# (inserted, or the new side of an update), 0 a row gone. A derived index at generation
# g catches up by reading the log after g (see _derived). ``change_floor`` is how far
# the log was pruned: an index older than that is rebuilt from the rows instead. A
# logged generation is unique per scope; should the counters ever restart (a file whose
# ``generations`` table was dropped), the newer entry replaces the older rather than
# failing the user's write (indexes stamped then are rebuilt anyway).
def _log(side: str, op: int) -> str:
    """Bump the scope of the ``old``/``new`` row and log that row under its new generation."""
    return f"""
    INSERT INTO generations(org, domain, gen) VALUES ({side}.org, {side}.domain, 1)
        ON CONFLICT (org, domain) DO UPDATE SET gen = gen + 1;
    INSERT OR REPLACE INTO changes(org, domain, gen, chunk_rowid, op)
        SELECT org, domain, gen, {side}.rowid, {op} FROM generations
        WHERE org = {side}.org AND domain = {side}.domain;"""


_BUMP_FILE = "\n    UPDATE file_generation SET gen = gen + 1;\nEND;\n"
TRIGGERS = (
    "CREATE TRIGGER IF NOT EXISTS chunks_gen_ai AFTER INSERT ON chunks BEGIN"
    + _log("new", 1) + _BUMP_FILE
    + "CREATE TRIGGER IF NOT EXISTS chunks_gen_ad AFTER DELETE ON chunks BEGIN"
    + _log("old", 0) + _BUMP_FILE
    + "CREATE TRIGGER IF NOT EXISTS chunks_gen_au AFTER UPDATE ON chunks BEGIN"
    + _log("old", 0) + _log("new", 1) + _BUMP_FILE
)

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS chunks (
    rowid INTEGER PRIMARY KEY,
    org TEXT NOT NULL,
    domain TEXT NOT NULL,
    id TEXT NOT NULL,
    text TEXT NOT NULL,
    metadata TEXT NOT NULL,
    vector BLOB NOT NULL,
    UNIQUE (org, domain, id)
);
CREATE TABLE IF NOT EXISTS generations (
    org TEXT NOT NULL,
    domain TEXT NOT NULL,
    gen INTEGER NOT NULL,
    PRIMARY KEY (org, domain)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS file_generation (
    id INTEGER PRIMARY KEY CHECK (id = 0),
    gen INTEGER NOT NULL
);
INSERT OR IGNORE INTO file_generation(id, gen) VALUES (0, 0);
CREATE TABLE IF NOT EXISTS scope_writes (
    org TEXT NOT NULL,
    domain TEXT NOT NULL,
    at REAL NOT NULL,
    PRIMARY KEY (org, domain)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS changes (
    org TEXT NOT NULL,
    domain TEXT NOT NULL,
    gen INTEGER NOT NULL,
    chunk_rowid INTEGER NOT NULL,
    op INTEGER NOT NULL,
    PRIMARY KEY (org, domain, gen)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS change_floor (
    org TEXT NOT NULL,
    domain TEXT NOT NULL,
    gen INTEGER NOT NULL,
    PRIMARY KEY (org, domain)
) WITHOUT ROWID;
""" + TRIGGERS

# Version 1 kept an FTS5 mirror of ``chunks`` by triggers. Lexical search moved to the
# tantivy indexes beside the file, so version 2 drops the mirror: it doubled the cost
# of every write and nothing read it. Version 3 logs each change (the triggers are
# replaced; ``SCHEMA`` already made the tables): changes made before the upgrade were
# never logged, so every scope's log starts at its generation then. An older file is
# upgraded when opened for writing (one transaction) and read as it is when opened
# read-only (its indexes are then rebuilt, never caught up by change).
_UPGRADES: dict[str, str] = {
    "1": """
DROP TRIGGER IF EXISTS chunks_ai;
DROP TRIGGER IF EXISTS chunks_ad;
DROP TRIGGER IF EXISTS chunks_au;
DROP TABLE IF EXISTS chunks_fts;
""",
    "2": """
DROP TRIGGER IF EXISTS chunks_gen_ai;
DROP TRIGGER IF EXISTS chunks_gen_ad;
DROP TRIGGER IF EXISTS chunks_gen_au;
""" + TRIGGERS + """
INSERT INTO change_floor(org, domain, gen) SELECT org, domain, gen FROM generations
    WHERE true ON CONFLICT (org, domain) DO UPDATE SET gen = max(gen, excluded.gen);
""",
}
READABLE_VERSIONS = frozenset({SCHEMA_VERSION, *_UPGRADES})


def check_meta(
    conn: sqlite3.Connection, path: Path, embedder: Embedder | None, *, record: bool = True
) -> None:
    """Refuse a file of an unknown schema version or another embedder's vectors; when
``record``, upgrade an older file, then write this version, the embedder's dim and
name, and the store id (the caller's write transaction holds all of it)."""
    meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
    version = meta.get("schema_version")
    if not record and version is None:
        raise StoreError(f"{str(path)!r} is not an agentkit store (no schema version)")
    if version is not None and version not in READABLE_VERSIONS:
        raise StoreError(
            f"store {str(path)!r} has schema version {version}; "
            f"this agentkit reads versions {', '.join(sorted(READABLE_VERSIONS))}"
        )
    if record and version is not None and version != SCHEMA_VERSION:
        _upgrade(conn, version)
    updates = {"schema_version": SCHEMA_VERSION}
    # Names this file to the lexical indexes beside it, so an index built for
    # another file that once had this name is never trusted.
    updates["store_id"] = meta.get("store_id") or uuid.uuid4().hex
    if embedder is not None:
        dim, name = str(embedder.dim), embedder_name(embedder)
        had_dim, had_name = meta.get("dim"), meta.get("embedder")
        if had_dim is not None and (had_dim != dim or not same_vectors(str(had_name), name)):
            empty = conn.execute("SELECT NOT EXISTS (SELECT 1 FROM chunks)").fetchone()[0]
            if not empty:
                raise StoreError(
                    f"store {str(path)!r} holds vectors from embedder {had_name!r} "
                    f"(dim {had_dim}); refusing to mix in {name!r} (dim {dim}). "
                    + MIX_HINT
                )
        updates["dim"], updates["embedder"] = dim, name
    if not record:
        return
    for key, value in updates.items():
        if meta.get(key) != value:
            conn.execute(
                "INSERT INTO meta(key, value) VALUES (?, ?) "
                "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                (key, value),
            )


def _upgrade(conn: sqlite3.Connection, version: str) -> None:
    """Bring an older file to SCHEMA_VERSION inside the caller's write transaction."""
    while version != SCHEMA_VERSION:
        for statement in split_sql(_UPGRADES[version]):
            conn.execute(statement)
        version = str(int(version) + 1)


def store_id(conn: sqlite3.Connection) -> str | None:
    row = conn.execute("SELECT value FROM meta WHERE key = 'store_id'").fetchone()
    return None if row is None else str(row[0])


def scope_generation(conn: sqlite3.Connection, bucket: tuple[str, str]) -> int:
    row = conn.execute(
        "SELECT gen FROM generations WHERE org = ? AND domain = ?", bucket
    ).fetchone()
    return 0 if row is None else int(row[0])


def touch(conn: sqlite3.Connection, bucket: tuple[str, str]) -> None:
    """Record when the scope last changed, in the changing transaction (for stats)."""
    conn.execute(
        "INSERT INTO scope_writes(org, domain, at) VALUES (?, ?, ?) "
        "ON CONFLICT (org, domain) DO UPDATE SET at = excluded.at",
        (*bucket, time.time()),
    )


def split_sql(script: str) -> list[str]:
    """Statements of the schema script; triggers keep their inner ``;``."""
    out: list[str] = []
    buf: list[str] = []
    for line in script.strip().splitlines():
        buf.append(line)
        text = "\n".join(buf).strip()
        if text.endswith(";") and sqlite3.complete_statement(text):
            out.append(text)
            buf = []
    return out
