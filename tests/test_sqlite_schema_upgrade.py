"""A store file written by the previous schema version (1, with an FTS5 mirror kept by
triggers) still works: opened for writing it is upgraded in place, opened read-only (as
the CLI's read commands do) it is read as it is and never changed.

The version-1 file is made here by executing that version's own DDL, so the test does
not depend on an older agentkit being installed.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import subprocess
import sys
import uuid
from pathlib import Path

import numpy as np
import pytest

from agentkit.kernel import Scope
from agentkit.kernel.errors import StoreError
from agentkit.vector import Chunk, HashingEmbedder, SQLiteVectorStore
from agentkit.vector._sqlite_schema import SCHEMA_VERSION
from agentkit.vector.sqlite import embedder_name

ACME = Scope("acme", "support")
DIM = 64
OLD_DOCS = [
    ("cat", "the cat sat on the warm mat by the fire", {"kind": "pet"}),
    ("dog", "a dog chased the ball across the park", {"kind": "pet"}),
    ("tax", "income tax returns are due in april", {"kind": "admin"}),
]

# Version 1's schema, verbatim (the FTS5 table and its three triggers are what went).
V1_DDL = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE chunks (
    rowid INTEGER PRIMARY KEY,
    org TEXT NOT NULL,
    domain TEXT NOT NULL,
    id TEXT NOT NULL,
    text TEXT NOT NULL,
    metadata TEXT NOT NULL,
    vector BLOB NOT NULL,
    UNIQUE (org, domain, id)
);
CREATE VIRTUAL TABLE chunks_fts USING fts5(
    text, content='chunks', content_rowid='rowid', tokenize='porter unicode61'
);
CREATE TRIGGER chunks_ai AFTER INSERT ON chunks BEGIN
    INSERT INTO chunks_fts(rowid, text) VALUES (new.rowid, new.text);
END;
CREATE TRIGGER chunks_ad AFTER DELETE ON chunks BEGIN
    INSERT INTO chunks_fts(chunks_fts, rowid, text) VALUES ('delete', old.rowid, old.text);
END;
CREATE TRIGGER chunks_au AFTER UPDATE OF text ON chunks BEGIN
    INSERT INTO chunks_fts(chunks_fts, rowid, text) VALUES ('delete', old.rowid, old.text);
    INSERT INTO chunks_fts(rowid, text) VALUES (new.rowid, new.text);
END;
CREATE TABLE generations (
    org TEXT NOT NULL, domain TEXT NOT NULL, gen INTEGER NOT NULL,
    PRIMARY KEY (org, domain)
) WITHOUT ROWID;
CREATE TABLE file_generation (id INTEGER PRIMARY KEY CHECK (id = 0), gen INTEGER NOT NULL);
INSERT INTO file_generation(id, gen) VALUES (0, 0);
CREATE TABLE scope_writes (
    org TEXT NOT NULL, domain TEXT NOT NULL, at REAL NOT NULL,
    PRIMARY KEY (org, domain)
) WITHOUT ROWID;
CREATE TRIGGER chunks_gen_ai AFTER INSERT ON chunks BEGIN
    INSERT INTO generations(org, domain, gen) VALUES (new.org, new.domain, 1)
        ON CONFLICT (org, domain) DO UPDATE SET gen = gen + 1;
    UPDATE file_generation SET gen = gen + 1;
END;
CREATE TRIGGER chunks_gen_ad AFTER DELETE ON chunks BEGIN
    INSERT INTO generations(org, domain, gen) VALUES (old.org, old.domain, 1)
        ON CONFLICT (org, domain) DO UPDATE SET gen = gen + 1;
    UPDATE file_generation SET gen = gen + 1;
END;
CREATE TRIGGER chunks_gen_au AFTER UPDATE ON chunks BEGIN
    INSERT INTO generations(org, domain, gen) VALUES (old.org, old.domain, 1)
        ON CONFLICT (org, domain) DO UPDATE SET gen = gen + 1;
    INSERT INTO generations(org, domain, gen) VALUES (new.org, new.domain, 1)
        ON CONFLICT (org, domain) DO UPDATE SET gen = gen + 1;
    UPDATE file_generation SET gen = gen + 1;
END;
"""


def write_v1(path: Path, *, version: str = "1") -> None:
    """A store as version 1 left it: WAL mode, meta recorded, rows (and their FTS5
    mirror, by the triggers) for ACME."""
    embedder = HashingEmbedder(dim=DIM)
    vectors = embedder.embed_sync([text for _, text, _ in OLD_DOCS])
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode = WAL")
        conn.executescript(V1_DDL)
        conn.execute("BEGIN")
        conn.executemany("INSERT INTO meta(key, value) VALUES (?, ?)", [
            ("schema_version", version), ("store_id", uuid.uuid4().hex),
            ("dim", str(DIM)), ("embedder", embedder_name(embedder)),
        ])
        conn.executemany(
            "INSERT INTO chunks(org, domain, id, text, metadata, vector) "
            "VALUES ('acme', 'support', ?, ?, ?, ?)",
            [(cid, text, json.dumps(meta), np.asarray(vectors[i], np.float32).tobytes())
             for i, (cid, text, meta) in enumerate(OLD_DOCS)],
        )
        conn.execute("COMMIT")
        assert conn.execute(
            "SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH 'cat'"
        ).fetchone()[0] == 1
    finally:
        conn.close()


def layout(path: Path) -> tuple[str, set[str]]:
    """(schema_version, names of every table and trigger) as the file holds them."""
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
        version = conn.execute(
            "SELECT value FROM meta WHERE key = 'schema_version'"
        ).fetchone()[0]
        names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
    return str(version), names


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


FTS_PARTS = {"chunks_fts", "chunks_ai", "chunks_ad", "chunks_au"}


async def test_a_new_store_has_no_fts5_mirror(tmp_path: Path) -> None:
    db = tmp_path / "new.db"
    async with SQLiteVectorStore(db, embedder=HashingEmbedder(dim=DIM)) as store:
        await store.upsert([Chunk("a", "alpha words")], scope=ACME)
    version, names = layout(db)
    assert version == SCHEMA_VERSION
    assert not names & FTS_PARTS
    assert {"chunks", "meta", "generations", "chunks_gen_ai"} <= names


async def test_read_only_open_reads_a_version_1_file_and_changes_nothing(
    tmp_path: Path,
) -> None:
    db = tmp_path / "old.db"
    write_v1(db)
    before = digest(db)
    async with SQLiteVectorStore(db, embedder=HashingEmbedder(dim=DIM), read_only=True) as st:
        assert await st.count(scope=ACME) == 3
        lexical = await st.lexical_search("cats on mats", k=3, scope=ACME)
        assert [c.id for _, c in lexical] == ["cat"]
        dense = await st.search("income tax in april", k=1, scope=ACME)
        assert [c.id for _, c in dense] == ["tax"]
        assert {s.records for s in (await st.stats()).scopes} == {3}
        with pytest.raises(StoreError, match="read_only"):
            await st.upsert([Chunk("new", "new words")], scope=ACME)
    assert digest(db) == before
    version, names = layout(db)
    assert version == "1" and FTS_PARTS <= names
    assert not (tmp_path / "old.db.lexical").exists()  # read-only never writes an index


def test_cli_read_commands_work_on_a_version_1_file_and_change_nothing(
    tmp_path: Path,
) -> None:
    db = tmp_path / "old.db"
    write_v1(db)
    before = digest(db)
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTKIT_")}
    env["AGENTKIT_EMBEDDER"] = "hashing"
    reads = (["stats", "--json"], ["query", "--lexical", "warm mat", "--scope", "acme/support"])
    for args in reads:
        result = subprocess.run(
            [sys.executable, "-m", "agentkit.cli", *args, "--store", str(db)],
            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
        )
        assert result.returncode == 0, result.stderr
        assert "Traceback" not in result.stderr
        if args[0] == "stats":
            assert json.loads(result.stdout)["chunks"] == 3
        else:
            assert "warm mat" in result.stdout
    assert digest(db) == before
    version, names = layout(db)
    assert version == "1" and FTS_PARTS <= names


async def test_writable_open_upgrades_a_version_1_file_in_place(tmp_path: Path) -> None:
    db = tmp_path / "old.db"
    write_v1(db)
    async with SQLiteVectorStore(db, embedder=HashingEmbedder(dim=DIM)) as store:
        assert await store.count(scope=ACME) == 3  # opening is what upgrades
        version, names = layout(db)
        assert version == SCHEMA_VERSION and not names & FTS_PARTS
        # The old rows are all still there, for both searches, and writes work.
        await store.upsert([Chunk("bus", "the night bus leaves at midnight")], scope=ACME)
        await store.delete(["dog"], scope=ACME)
        lexical = await store.lexical_search("night bus", k=3, scope=ACME)
        assert [c.id for _, c in lexical] == ["bus"]
        assert [c.id for _, c in await store.search("warm mat", k=1, scope=ACME)] == ["cat"]
        assert await store.lexical_search("dog ball", k=3, scope=ACME) == []
        assert sorted(c.id for c in await store.scan(scope=ACME)) == ["bus", "cat", "tax"]
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    # Reopening the upgraded file (and reading it read-only) needs nothing more.
    async with SQLiteVectorStore(db, embedder=HashingEmbedder(dim=DIM), read_only=True) as st:
        assert await st.count(scope=ACME) == 3
    assert layout(db)[0] == SCHEMA_VERSION


async def test_an_unknown_schema_version_is_refused_unchanged(tmp_path: Path) -> None:
    db = tmp_path / "future.db"
    write_v1(db, version="99")
    before = digest(db)
    for read_only in (False, True):
        store = SQLiteVectorStore(db, embedder=HashingEmbedder(dim=DIM), read_only=read_only)
        with pytest.raises(StoreError, match="schema version 99"):
            await store.count(scope=ACME)
        await store.close()
    assert digest(db) == before


def write_v2(path: Path) -> None:
    """A store as version 2 left it: version 1's layout without the FTS5 mirror, and
    generation triggers that log nothing."""
    write_v1(path, version="2")
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        for name in ("chunks_ai", "chunks_ad", "chunks_au"):
            conn.execute(f"DROP TRIGGER {name}")
        conn.execute("DROP TABLE chunks_fts")
    finally:
        conn.close()


async def test_a_version_2_file_gets_a_change_log_that_starts_at_its_generation(
    tmp_path: Path,
) -> None:
    db = tmp_path / "v2.db"
    write_v2(db)
    before = digest(db)
    async with SQLiteVectorStore(db, embedder=HashingEmbedder(dim=DIM), read_only=True) as st:
        assert [c.id for _, c in await st.lexical_search("warm mat", k=3, scope=ACME)] == ["cat"]
    assert digest(db) == before and layout(db)[0] == "2"
    with sqlite3.connect(db) as conn:
        (gen,) = conn.execute("SELECT gen FROM generations").fetchone()
    async with SQLiteVectorStore(db, embedder=HashingEmbedder(dim=DIM)) as store:
        assert [c.id for _, c in await store.lexical_search("warm mat", k=3, scope=ACME)] == [
            "cat"
        ]
        # Changes before the upgrade were never logged: the log starts at that generation,
        # so an index older than it is rebuilt, never "caught up" from a log that lies.
        with sqlite3.connect(db, isolation_level=None) as other:
            floor = other.execute("SELECT gen FROM change_floor").fetchone()[0]
            assert floor == gen
            other.execute("UPDATE chunks SET text = 'zebra crossing' WHERE id = 'dog'")
            logged = other.execute("SELECT op FROM changes ORDER BY gen").fetchall()
            assert [op for (op,) in logged] == [0, 1]
        hits = await store.lexical_search("zebra", k=3, scope=ACME)
        assert [c.id for _, c in hits] == ["dog"]
        assert await store.lexical_search("dog ball", k=3, scope=ACME) == []
    assert layout(db)[0] == SCHEMA_VERSION
