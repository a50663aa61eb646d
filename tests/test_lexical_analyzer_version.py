"""A lexical index cut by other analyzer rules is never read: it is rebuilt from the rows.

Changing how text becomes terms (stemming, stopwords) changes what an index holds, so
an index built by other rules would silently miss documents. Each index's sidecar names
the analyzer version that built it, and any other version counts as no index at all.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import sqlite3
from pathlib import Path

from agentkit.kernel import Scope
from agentkit.vector import Chunk, HashingEmbedder, SQLiteVectorStore
from agentkit.vector._lexical_index import scope_dir_name
from agentkit.vector._lexical_text import ANALYZER_VERSION

SCOPE = Scope("acme", "support")


def _sidecar(db: Path) -> Path:
    return (
        db.with_name(db.name + ".lexical") / scope_dir_name(("acme", "support"))
        / "agentkit-generation.json"
    )


async def _ids(store: SQLiteVectorStore, query: str) -> set[str]:
    return {c.id for _, c in await store.lexical_search(query, k=10, scope=SCOPE)}


def _stale_index_stamped(tmp_path: Path, analyzer: int) -> Path:
    """A store whose index holds an older state of the rows, its sidecar claiming the
    current generation with analyzer version ``analyzer``."""
    db = tmp_path / "store.db"
    root = db.with_name(db.name + ".lexical")

    async def build() -> None:
        async with SQLiteVectorStore(db, embedder=HashingEmbedder(dim=32)) as store:
            await store.upsert([Chunk("old", "alpha")], scope=SCOPE)
        shutil.copytree(root, tmp_path / "kept")
        async with SQLiteVectorStore(db, embedder=HashingEmbedder(dim=32)) as store:
            await store.delete(["old"], scope=SCOPE)
            await store.upsert([Chunk("new", "alpha beta")], scope=SCOPE)

    asyncio.run(build())
    with sqlite3.connect(db) as conn:
        gen = conn.execute(
            "SELECT gen FROM generations WHERE org = 'acme' AND domain = 'support'"
        ).fetchone()[0]
    shutil.rmtree(root)
    shutil.copytree(tmp_path / "kept", root)
    body = json.loads(_sidecar(db).read_text())
    body.update(gen=gen, analyzer=analyzer)
    _sidecar(db).write_text(json.dumps(body))
    return db


def test_an_index_from_another_analyzer_is_rebuilt_for_a_writer(tmp_path: Path) -> None:
    db = _stale_index_stamped(tmp_path, ANALYZER_VERSION + 1)

    async def run() -> None:
        async with SQLiteVectorStore(db, embedder=HashingEmbedder(dim=32)) as store:
            assert await _ids(store, "alpha") == {"new"}
            assert await _ids(store, "beta") == {"new"}

    asyncio.run(run())
    stamp = json.loads(_sidecar(db).read_text())
    assert stamp["analyzer"] == ANALYZER_VERSION  # the rebuild re-stamped it


def test_an_index_from_another_analyzer_is_not_read_by_a_read_only_store(
    tmp_path: Path,
) -> None:
    db = _stale_index_stamped(tmp_path, ANALYZER_VERSION + 1)

    async def run() -> None:
        async with SQLiteVectorStore(db, embedder=None, read_only=True) as store:
            assert await _ids(store, "beta") == {"new"}

    asyncio.run(run())
    stamp = json.loads(_sidecar(db).read_text())
    assert stamp["analyzer"] == ANALYZER_VERSION + 1  # read-only: nothing on disk changed


def test_the_stale_index_would_be_served_under_the_current_stamp(tmp_path: Path) -> None:
    """Self-check of the fixture: with this code's own version the sidecar is trusted
    and the stale contents answer, so the tests above pass only through the stamp."""
    db = _stale_index_stamped(tmp_path, ANALYZER_VERSION)

    async def run() -> None:
        async with SQLiteVectorStore(db, embedder=None, read_only=True) as store:
            assert await _ids(store, "beta") == set()  # the stale index never saw "beta"

    asyncio.run(run())
