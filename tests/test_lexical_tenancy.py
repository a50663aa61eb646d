"""Lexical statistics are per tenant: another scope's documents never move our scores.

BM25 weighs a word by how rare it is among the documents it ranks. If those counts
spanned the file, a tenant could watch its own scores to learn what another tenant's
corpus holds. These tests write a large corpus sharing the first tenant's words into a
second scope and check the first tenant's answers and scores stay exactly the same.
"""

from __future__ import annotations

from pathlib import Path

from agentkit.kernel import Scope
from agentkit.vector import Chunk, HashingEmbedder, SQLiteVectorStore

A = Scope("acme", "support")
B = Scope("globex", "support")
A_OTHER_DOMAIN = Scope("acme", "sales")
QUERIES = ["refund policy for damaged parcels", "zygomorphic orchid", "parcel", "policy refund"]
A_DOCS = [
    Chunk("a1", "Our refund policy covers damaged parcels within thirty days."),
    Chunk("a2", "Parcels are shipped by courier; tracking numbers arrive by email."),
    Chunk("a3", "The zygomorphic orchid is our rarest flower."),
    Chunk("a4", "Refunds go back to the original card."),
    Chunk("a5", "Damaged goods: photograph the parcel before opening it."),
]


async def answers(store: SQLiteVectorStore) -> list[list[tuple[float, str]]]:
    out = []
    for query in QUERIES:
        hits = await store.lexical_search(query, k=5, scope=A)
        out.append([(score, chunk.id) for score, chunk in hits])
    return out


async def test_other_tenants_corpus_leaves_scores_and_ranking_identical(tmp_path: Path) -> None:
    async with SQLiteVectorStore(tmp_path / "s.db", embedder=HashingEmbedder()) as store:
        await store.upsert(A_DOCS, scope=A)
        before = await answers(store)
        assert all(before), "every query matches something of A's"
        # B: a large corpus in A's own words, skewed to make any shared statistic move.
        words = "refund policy damaged parcels parcel courier zygomorphic orchid flower card"
        corpus = [
            Chunk(f"b{i}", " ".join(words.split()[: 1 + i % 10]) + f" item {i}")
            for i in range(3_000)
        ]
        await store.upsert(corpus, scope=B)
        await store.upsert(corpus[:500], scope=A_OTHER_DOMAIN)
        after = await answers(store)
    assert after == before  # exact floats, same order


async def test_one_document_elsewhere_does_not_reveal_itself(tmp_path: Path) -> None:
    """The side channel named in the issue: a rare word's score must not collapse when
    another tenant writes one document holding it."""
    async with SQLiteVectorStore(tmp_path / "s.db", embedder=HashingEmbedder()) as store:
        await store.upsert(A_DOCS, scope=A)
        before = await store.lexical_search("zygomorphic", k=1, scope=A)
        await store.upsert([Chunk("probe", "zygomorphic")], scope=B)
        after = await store.lexical_search("zygomorphic", k=1, scope=A)
        theirs = await store.lexical_search("zygomorphic", k=5, scope=B)
    assert [c.id for _, c in before] == ["a3"]
    assert after == before
    assert [c.id for _, c in theirs] == ["probe"]
