"""A LangChain PGVector store and a LlamaIndex PGVectorStore as agentkit memory.

Needs a PostgreSQL server with pgvector: pass its URL as the first argument or in
AGENTKIT_PG_URL (postgresql://user:password@host:port/database). docs/bridges.md shows
the two stores; the tests run this file against their own server.
"""

import asyncio
import os
import sys
from urllib.parse import unquote, urlsplit

from agentkit_langchain import AgentkitEmbeddings, LangChainVectorPort
from agentkit_llamaindex import AgentkitEmbedding, LlamaIndexVectorPort

from agentkit.kernel import Ctx, Scope
from agentkit.state.memory import MemoryItem, VectorMemory
from agentkit.vector import HashingEmbedder

DIM = 256
emb = AgentkitEmbeddings(HashingEmbedder(DIM))  # your LangChain Embeddings
embed = AgentkitEmbedding(HashingEmbedder(DIM))  # your LlamaIndex embed model


async def remember_and_recall(memory: VectorMemory) -> None:
    acme = Ctx(Scope("acme", "support"))
    note = MemoryItem("acme refunds go to store credit", "notes", metadata={"id": "n1"})
    await memory.write([note], ctx=acme)
    print([(item.id, item.content) for item in await memory.query("refunds", k=3, ctx=acme)])


def langchain(url: str) -> None:
    from langchain_postgres import PGVector  # pip install langchain-postgres

    store = PGVector(
        embeddings=emb,
        collection_name="notes",
        connection=url,  # "postgresql+psycopg://user:password@host/database"
        async_mode=True,  # the port calls the store's async API
    )
    memory = VectorMemory(LangChainVectorPort(store))
    asyncio.run(remember_and_recall(memory))


def llamaindex(host: str, port: str, user: str, password: str, database: str) -> None:
    # pip install llama-index-vector-stores-postgres
    from llama_index.vector_stores.postgres import PGVectorStore

    store = PGVectorStore.from_params(
        host=host,
        port=port,
        user=user,
        password=password,
        database=database,
        table_name="notes",
        embed_dim=DIM,
    )
    memory = VectorMemory(LlamaIndexVectorPort.from_vector_store(store, embed_model=embed))
    asyncio.run(remember_and_recall(memory))


if __name__ == "__main__":
    url = sys.argv[1] if len(sys.argv) > 1 else os.environ["AGENTKIT_PG_URL"]
    langchain(url.replace("postgresql://", "postgresql+psycopg://", 1))
    parts = urlsplit(url)
    llamaindex(
        host=parts.hostname or "localhost",
        port=str(parts.port or 5432),
        user=unquote(parts.username or ""),
        password=unquote(parts.password or ""),
        database=parts.path.lstrip("/"),
    )
