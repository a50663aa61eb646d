"""Tenant isolation on PostgreSQL: the reliability property, with pgvector underneath.

Reuses the stack grammar, traffic and checks of tests/reliability/test_isolation.py
(loaded by path, as tests here run with --import-mode=importlib) and adds two leaves: a
VectorMemory and a LexicalMemory over one PostgresVectorStore on the session's real
server, a fresh collection per example.
"""

from __future__ import annotations

import asyncio
import importlib.util
import sys
import uuid
from pathlib import Path
from typing import Any

import psycopg
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from psycopg import sql

from agentkit.kernel import Ctx, Scope
from agentkit.state.memory import LexicalMemory, MemoryItem, MemorySource, VectorMemory
from agentkit.vector import Chunk, HashingEmbedder
from agentkit.vector.postgres import PostgresVectorStore


def _load_isolation() -> Any:
    path = Path(__file__).parents[1] / "reliability" / "test_isolation.py"
    spec = importlib.util.spec_from_file_location("agentkit_reliability_isolation", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


iso = _load_isolation()


class PgHarness(iso.Harness):  # type: ignore[name-defined,misc]
    """The reliability harness, plus leaves over one Postgres collection per example."""

    def __init__(self, root: Path, url: str) -> None:
        super().__init__(root)
        self.url = url
        self.collection = f"iso_{uuid.uuid4().hex[:12]}"
        self.store: PostgresVectorStore | None = None

    def _pg(self) -> PostgresVectorStore:
        if self.store is None:
            store = PostgresVectorStore(
                self.url, embedder=HashingEmbedder(dim=iso.DIM), collection=self.collection
            )
            self.store = store

            async def seed(s: Scope, items: list[MemoryItem]) -> None:
                chunks = [Chunk(f"seed-{i}", it.content, {}) for i, it in enumerate(items)]
                await store.upsert(chunks, scope=s)

            self.seeders.append(seed)
            self.closers.append(self._drop)
        return self.store

    async def _drop(self) -> None:
        assert self.store is not None
        await self.store.close()
        async with await psycopg.AsyncConnection.connect(self.url, autocommit=True) as conn:
            await conn.execute(
                sql.SQL("DROP TABLE IF EXISTS {}").format(sql.Identifier(self.collection))
            )
            exists = await (
                await conn.execute("SELECT to_regclass('agentkit_schema') IS NOT NULL")
            ).fetchone()
            if exists == (True,):
                await conn.execute(
                    "DELETE FROM agentkit_schema WHERE collection = %s", (self.collection,)
                )

    def _leaf(self, kind: str) -> MemorySource:
        if kind == "pg":
            self.count += 1
            return VectorMemory(self._pg(), name=f"pg{self.count}")
        if kind == "pglex":
            self.count += 1
            return LexicalMemory(self._pg(), name=f"pglex{self.count}")
        return super()._leaf(kind)  # type: ignore[no-any-return]


pg_leaf = st.sampled_from(["pg", "pglex", "pg", "vector"]).map(lambda kind: ("leaf", kind))
pg_stacks = st.recursive(pg_leaf, iso._extend, max_leaves=4)


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(spec=pg_stacks, traffic=iso.ops)
def test_no_item_crosses_tenants_on_postgres(pg_url: str, spec: Any, traffic: list[Any]) -> None:
    async def scenario() -> None:
        harness = PgHarness(Path("/nonexistent"), pg_url)
        stack = harness.build(spec)
        try:
            await harness.seed()
            await iso.run_traffic(stack, harness, traffic)
        finally:
            await harness.close()

    asyncio.run(scenario())


async def test_same_ids_in_every_tenant_never_cross(pg_url: str) -> None:
    """The plainest form: every tenant writes ids 0..4; each reads back only its own."""
    harness = PgHarness(Path("/nonexistent"), pg_url)
    store = harness._pg()
    try:
        for t, scope in enumerate(iso.TENANTS):
            chunks = [Chunk(str(i), f"alpha {i} {iso.marker(t)}", {"i": i}) for i in range(5)]
            await store.upsert(chunks, scope=scope)
        for t, scope in enumerate(iso.TENANTS):
            for mem in (VectorMemory(store), LexicalMemory(store)):
                got = await mem.query("alpha", k=100, ctx=Ctx(scope))
                iso.tenant_ok(got, t)
                assert sorted(str(i.id) for i in got) == [str(i) for i in range(5)]
            assert await store.count(scope=scope) == 5
    finally:
        await harness.close()
