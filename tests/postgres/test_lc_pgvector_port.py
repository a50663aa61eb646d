"""LangChainVectorPort over langchain-postgres' PGVector: the PGVector filter dialect.

Existing rows (the user's own ids, a ``source`` key) are the unscoped bucket, found
through the ``$exists`` spelling of "no scoped marker"; tenants crowding the top do
not cut a tenant's ``k``; unknown ids in a delete are not an error.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from agentkit.interop import conditions
from agentkit.kernel import Scope
from agentkit.vector import Chunk, HashingEmbedder

ACME = Scope("acme", "support")
DIM = 64


@pytest.fixture
async def pgvector(db_url: str) -> AsyncIterator[Any]:
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


async def test_existing_rows_and_tenants_on_pgvector(pgvector: Any) -> None:
    from agentkit_langchain import LangChainVectorPort
    from langchain_core.documents import Document

    await pgvector.aadd_documents(
        [
            Document("holiday calendar for the office", metadata={"source": "hr/holidays.md"}),
            Document("travel expense rules", metadata={"source": "hr/travel.md"}),
        ],
        ids=["doc-1", "doc-2"],
    )
    port = LangChainVectorPort(pgvector)
    assert port.dialect is not None and port.dialect.name == "pgvector"
    query = "shared holiday calendar"
    for t in range(3):
        await port.upsert([Chunk(f"h{i}", query) for i in range(20)], scope=Scope(f"t{t}", "hr"))
    await port.upsert([Chunk("mine", "holiday plan", {"kind": "plan"})], scope=ACME)

    hits = await port.search(query, k=2, scope=Scope())
    assert [(c.id, dict(c.metadata)) for _, c in hits] == [
        ("doc-1", {"source": "hr/holidays.md"}),
        ("doc-2", {"source": "hr/travel.md"}),
    ]
    assert all(type(s) is float for s, _ in hits) and hits[0][0] > hits[1][0]
    # The dialect's own spelling selects exactly the unscoped rows, in the database.
    unscoped = port.dialect.build(conditions(Scope(), None) or [])
    rows = await pgvector.asimilarity_search(query, k=5, filter=unscoped)
    assert sorted(d.id for d in rows) == ["doc-1", "doc-2"]
    mine = await port.search(query, k=3, scope=ACME, where={"kind": "plan"})
    assert [c.id for _, c in mine] == ["mine"]

    await port.upsert([Chunk("doc-1", "holiday calendar, 2027", {"source": "hr/h.md"})],
                      scope=Scope())
    [doc] = await pgvector.aget_by_ids(["doc-1"])
    assert (doc.page_content, doc.metadata) == ("holiday calendar, 2027", {"source": "hr/h.md"})
    await port.delete(["doc-1", "never-written"], scope=Scope())
    assert await pgvector.aget_by_ids(["doc-1"]) == []
    assert [c.id for _, c in await port.search(query, k=5, scope=Scope())] == ["doc-2"]


RECORDS = [
    ("r1", {"team": "billing", "year": 2018, "name": "alpha"}),
    ("r2", {"team": "billing", "year": 2021, "pinned": True}),
    ("r3", {"team": "support", "year": 2020.0, "name": "zulu"}),
    ("r4", {"team": "logistics", "year": "2022"}),  # a string year: never ordered
    ("r5", {"year": 2019}),
]


async def test_operator_filters_on_pgvector_exact_or_refused(pgvector: Any) -> None:
    """The where language in PGVector's own JSON-path filter, typed as agentkit's: what
    it cannot state exactly (a negation, string orderings) is refused by name."""
    from agentkit_langchain import LangChainVectorPort

    from agentkit.kernel.errors import UnsupportedOperation
    from agentkit.kernel.where import parse_where

    port = LangChainVectorPort(pgvector)
    chunks = [Chunk(cid, f"ledger entry {cid}", meta) for cid, meta in RECORDS]
    await port.upsert(chunks, scope=ACME)
    await port.upsert(chunks, scope=Scope("globex", "support"))
    for where in (
        {"year": {"$gte": 2020}},
        {"$or": [{"team": "billing"}, {"year": {"$lt": 2019}}]},
        {"year": {"$in": [2018, 2020, "2022"]}},
        {"pinned": True, "year": {"$gt": 2020}},
        {"name": {"$exists": False}},
    ):
        tree = parse_where(where)
        assert tree is not None
        expected = {cid for cid, meta in RECORDS if tree.matches(meta)}
        hits = await port.search("ledger entry", k=10, scope=ACME, where=where)
        assert {c.id for _, c in hits} == expected, where
    for where, op in (
        ({"team": {"$ne": "billing"}}, "$ne"),
        ({"$not": {"year": 2018}}, "$ne"),
        ({"$not": {"year": {"$gt": 2018}}}, "$not"),
        ({"name": {"$gt": "m"}}, "$gt"),
    ):
        with pytest.raises(UnsupportedOperation) as info:
            await port.search("ledger entry", k=10, scope=ACME, where=where)
        assert op in str(info.value) and "PGVector" in str(info.value)


async def test_no_filter_spelling_reaches_another_tenant_on_pgvector(pgvector: Any) -> None:
    """Operators and the port's own stamp keys, on PGVector: another tenant's record
    never comes back (a delete by where is refused: LangChain cannot list PGVector's
    records), and a filter naming a stamp is refused by name."""
    from agentkit_langchain import LangChainVectorPort

    from agentkit.kernel.errors import InvalidFilter, UnsupportedOperation

    port = LangChainVectorPort(pgvector)
    globex = Scope("globex", "support")
    await port.upsert([Chunk("m", "ledger mine", {"t": 1})], scope=ACME)
    await port.upsert([Chunk("g", "ledger theirs", {"t": 1, "org_id": "acme"})], scope=globex)
    for where in (
        {"$or": [{"t": 1}, {"t": {"$gte": 0}}]},
        {"org_id": "acme"},
        {"t": {"$in": [1, 2]}, "$or": [{"t": 1}, {"org_id": {"$exists": True}}]},
        {"$not": {"t": {"$gt": 5}}},
    ):
        try:
            hits = await port.search("ledger", k=10, scope=ACME, where=where)
        except UnsupportedOperation:
            continue  # refused by name ($not of an ordering), never widened
        assert {c.id for _, c in hits} <= {"m"}, where
        with pytest.raises(UnsupportedOperation, match="PGVector"):  # it cannot list
            await port.delete_where(where, scope=ACME)
        assert [c.id for _, c in await port.search("ledger", k=10, scope=globex)] == ["g"]
    for where in (
        {"agentkit_org_id": {"$in": ["globex", "acme"]}},
        {"$or": [{"agentkit_org_id": "globex"}, {"t": 1}]},
    ):
        with pytest.raises(InvalidFilter, match="agentkit_org_id"):
            await port.search("ledger", k=10, scope=ACME, where=where)
        with pytest.raises(InvalidFilter, match="agentkit_org_id"):
            await port.delete_where(where, scope=ACME)
    assert [c.id for _, c in await port.search("ledger", k=10, scope=globex)] == ["g"]
