"""A user's LangChain / LlamaIndex Postgres store as agentkit memory, on the same server.

``VectorMemory(LangChainVectorPort(PGVector(...)))`` and
``VectorMemory(LlamaIndexVectorPort.from_vector_store(PGVectorStore...))``: the full
write contract (upsert by id, provenance-checked ids, where filters, tenants apart)
must hold on the framework's own tables, not just on PostgresVectorStore.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from psycopg.conninfo import conninfo_to_dict

from agentkit.kernel import Ctx, Scope
from agentkit.state.memory import MemoryItem, VectorMemory
from agentkit.vector import HashingEmbedder

ACME = Ctx(Scope("acme", "support"))
GLOBEX = Ctx(Scope("globex", "support"))
DIM = 64


@pytest.fixture
async def langchain_store(db_url: str) -> AsyncIterator[Any]:
    from agentkit_langchain import AgentkitEmbeddings
    from langchain_postgres import PGVector

    store = PGVector(
        embeddings=AgentkitEmbeddings(HashingEmbedder(dim=DIM)),
        connection=db_url.replace("postgresql://", "postgresql+psycopg://", 1),
        collection_name="user_docs",
        embedding_length=DIM,
        async_mode=True,
        create_extension=False,
    )
    yield store
    await store._async_engine.dispose()


@pytest.fixture
async def llamaindex_store(db_url: str) -> AsyncIterator[Any]:
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
    yield store
    await store.close()


def _langchain_memory(store: Any) -> VectorMemory:
    from agentkit_langchain import LangChainVectorPort

    return VectorMemory(LangChainVectorPort(store), name="pg")


def _llamaindex_memory(store: Any) -> VectorMemory:
    from agentkit_llamaindex import LlamaIndexVectorPort
    from agentkit_llamaindex.embedding import AgentkitEmbedding

    port = LlamaIndexVectorPort.from_vector_store(
        store, embed_model=AgentkitEmbedding(HashingEmbedder(dim=DIM))
    )
    return VectorMemory(port, name="pg")


async def _contract(mem: VectorMemory) -> None:
    """The VectorMemory write/read contract, framework-agnostic."""
    await mem.write(
        [
            MemoryItem("the refund window is 30 days", "user", metadata={"topic": "billing"}),
            MemoryItem("reset a password from the login page", "user", metadata={"topic": "auth"}),
        ],
        ctx=ACME,
    )
    got = await mem.query("refund window", k=2, ctx=ACME)
    assert got[0].content == "the refund window is 30 days"
    assert got[0].source == "pg" and got[0].id is not None
    assert dict(got[0].metadata) == {"topic": "billing"}
    assert isinstance(got[0].score, float)

    # Upsert by id: a recalled item written back replaces its row.
    recalled = got[0]
    await mem.write(
        [MemoryItem("the refund window is 45 days", "pg", metadata={"topic": "billing"},
                    id=recalled.id)],
        ctx=ACME,
    )
    after = await mem.query("refund window", k=5, ctx=ACME)
    assert len(after) == 2
    assert [i.content for i in after if i.id == recalled.id] == ["the refund window is 45 days"]

    # Provenance: an id from another backend is not trusted to name a row.
    await mem.write([MemoryItem("journal line", "journal", id=recalled.id)], ctx=ACME)
    ids = [i.id for i in await mem.query("refund window journal line", k=10, ctx=ACME)]
    assert len(ids) == 3 and len(set(ids)) == 3

    # where filters.
    auth = await mem.query("password refund", k=5, ctx=ACME, where={"topic": "auth"})
    assert [i.content for i in auth] == ["reset a password from the login page"]
    both = await mem.query("password refund", k=5, ctx=ACME, where={"topic": ["auth", "billing"]})
    assert len(both) == 2

    # Same ids in two tenants; a query never crosses scopes.
    await mem.write([MemoryItem("acme plan", "pg", id="plan")], ctx=ACME)
    await mem.write([MemoryItem("globex plan", "pg", id="plan")], ctx=GLOBEX)
    assert [i.content for i in await mem.query("plan", k=10, ctx=GLOBEX)] == ["globex plan"]
    acme = [i.content for i in await mem.query("plan", k=10, ctx=ACME)]
    assert "acme plan" in acme and "globex plan" not in acme
    assert await mem.query("plan", k=10, ctx=Ctx(Scope("acme"))) == []


async def test_langchain_pgvector_through_langchain_vector_port(langchain_store: Any) -> None:
    await _contract(_langchain_memory(langchain_store))


async def test_existing_langchain_table_reads_as_memory(langchain_store: Any) -> None:
    from agentkit_langchain import LangChainMemory
    from langchain_core.documents import Document

    # Rows written by plain LangChain code, before agentkit was in the picture.
    await langchain_store.aadd_documents(
        [
            Document("legacy onboarding guide", metadata={"source": "wiki/onboarding.md"}),
            Document("legacy expense policy", metadata={"source": "wiki/expenses.md"}),
        ]
    )
    mem = LangChainMemory(langchain_store.as_retriever(), name="wiki")
    got = await mem.query("onboarding guide", k=1, ctx=Ctx())
    assert [i.content for i in got] == ["legacy onboarding guide"]
    assert got[0].source == "wiki" and got[0].metadata["source"] == "wiki/onboarding.md"


async def test_unstamped_langchain_rows_are_the_unscoped_bucket(langchain_store: Any) -> None:
    from langchain_core.documents import Document

    # Rows LangChain wrote without agentkit's stamps are the unscoped bucket's, and
    # only its: a tenant never sees them.
    await langchain_store.aadd_documents([Document("legacy onboarding guide")])
    mem = _langchain_memory(langchain_store)
    got = await mem.query("onboarding guide", k=3, ctx=Ctx())
    assert [i.content for i in got] == ["legacy onboarding guide"]
    assert await mem.query("onboarding guide", k=3, ctx=ACME) == []


async def test_existing_llamaindex_table_reads_as_memory(llamaindex_store: Any) -> None:
    from agentkit_llamaindex import LlamaIndexMemory
    from agentkit_llamaindex.embedding import AgentkitEmbedding
    from llama_index.core import StorageContext, VectorStoreIndex
    from llama_index.core.schema import TextNode

    embed = AgentkitEmbedding(HashingEmbedder(dim=DIM))
    index = VectorStoreIndex(
        [TextNode(text="legacy onboarding guide"), TextNode(text="legacy expense policy")],
        storage_context=StorageContext.from_defaults(vector_store=llamaindex_store),
        embed_model=embed,
    )
    mem = LlamaIndexMemory(index.as_retriever(similarity_top_k=2), name="wiki")
    got = await mem.query("onboarding guide", k=1, ctx=Ctx())
    assert [i.content for i in got] == ["legacy onboarding guide"]
    assert got[0].source == "wiki"


async def test_llamaindex_pgvectorstore_through_llamaindex_vector_port(
    llamaindex_store: Any,
) -> None:
    await _contract(_llamaindex_memory(llamaindex_store))
