"""LlamaIndexVectorPort on LlamaIndex's own Postgres store, with scope ids SQL would trip on.

LlamaIndex's ``PGVectorStore`` pastes filter keys and values into SQL text and compares
number-like strings as floats; the port must keep such scopes apart anyway (it pushes
only what the store evaluates exactly and re-checks the rest), and refuse NUL, which
PostgreSQL cannot store, before anything is sent.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from psycopg.conninfo import conninfo_to_dict

from agentkit.kernel import Scope
from agentkit.kernel.errors import InvalidArgument
from agentkit.vector import Chunk, HashingEmbedder

DIM = 64


@pytest.fixture
async def port(db_url: str) -> AsyncIterator[Any]:
    from agentkit_llamaindex import LlamaIndexVectorPort
    from agentkit_llamaindex.embedding import AgentkitEmbedding
    from llama_index.vector_stores.postgres import PGVectorStore

    info = conninfo_to_dict(db_url)
    store = PGVectorStore.from_params(
        host=str(info["host"]),
        port=str(info["port"]),
        database=str(info["dbname"]),
        user=str(info["user"]),
        password=str(info.get("password") or ""),
        table_name="user_nodes",
        embed_dim=DIM,
        use_jsonb=True,
    )
    yield LlamaIndexVectorPort.from_vector_store(
        store, embed_model=AgentkitEmbedding(HashingEmbedder(dim=DIM))
    )
    await store.close()


SCOPES = [
    Scope("q'1", "c"),
    Scope("x' OR '1'='1", "c"),
    Scope("42", "c"),
    Scope("42.0", "c"),
    Scope("a\\b", "c"),
    Scope("a", "b"),
]


async def test_sql_shaped_scope_ids_stay_apart(port: Any) -> None:
    for n, scope in enumerate(SCOPES):
        await port.upsert([Chunk("x", f"record {n}", {"n": n, "s": "it's"})], scope=scope)
    for n, scope in enumerate(SCOPES):
        hits = await port.search("record", k=10, scope=scope)
        assert [(c.id, c.text) for _, c in hits] == [("x", f"record {n}")], scope
        hits = await port.search("record", k=10, scope=scope, where={"n": n, "s": "it's"})
        assert [c.text for _, c in hits] == [f"record {n}"], scope
    await port.delete(["x"], scope=SCOPES[1])
    assert await port.search("record", k=10, scope=SCOPES[1]) == []
    assert len(await port.search("record", k=10, scope=SCOPES[0])) == 1


async def test_nul_is_refused_before_anything_is_written(port: Any) -> None:
    with pytest.raises(InvalidArgument, match="NUL"):
        await port.upsert([Chunk("x", "text")], scope=Scope("a\x00b", "c"))
    with pytest.raises(InvalidArgument, match="NUL"):
        await port.upsert([Chunk("x", "te\x00xt")], scope=Scope("a", "c"))
    assert await port.search("text", k=3, scope=Scope("a", "c")) == []
    assert await port.search("text", k=3, scope=Scope("a\x00b", "c")) == []


async def test_operators_refused_by_name_and_no_spelling_reaches_another_scope(
    port: Any,
) -> None:
    """LlamaIndex's PGVectorStore pastes filters into SQL and compares numbers as
    floats, so agentkit states only plain equality there: every operator is refused
    naming it and the store, never answered wider or emptier; a stamp key in a filter
    is refused by name; no spelling reaches the other scope."""
    from agentkit.kernel.errors import InvalidFilter, UnsupportedOperation

    acme, globex = Scope("acme", "support"), Scope("globex", "support")
    await port.upsert([Chunk("m", "ledger mine", {"t": "a", "year": 2021})], scope=acme)
    await port.upsert([Chunk("g", "ledger theirs", {"t": "a", "org_id": "acme"})], scope=globex)
    plain = await port.search("ledger", k=10, scope=acme, where={"t": "a"})
    assert [c.id for _, c in plain] == ["m"]
    assert await port.search("ledger", k=10, scope=acme, where={"org_id": "acme"}) == []
    for where, op in (
        ({"year": {"$gte": 2020}}, "$gte"),
        ({"$or": [{"t": "a"}, {"t": "b"}]}, "$or"),
        ({"t": {"$ne": "b"}}, "$ne"),
    ):
        with pytest.raises(UnsupportedOperation) as info:
            await port.search("ledger", k=10, scope=acme, where=where)
        assert op in str(info.value) and "PGVectorStore" in str(info.value)
    for where in ({"agentkit_org_id": {"$ne": "x"}}, {"$not": {"agentkit_scoped": "1"}}):
        with pytest.raises(InvalidFilter, match="agentkit_"):
            await port.search("ledger", k=10, scope=acme, where=where)
        with pytest.raises(InvalidFilter, match="agentkit_"):
            await port.delete_where(where, scope=acme)
    assert [c.id for _, c in await port.search("ledger", k=10, scope=globex)] == ["g"]
