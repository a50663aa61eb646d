"""Filtered search inside the SQLite store at sizes where its strategies change: a where
admitting few rows (the word index gets a rowid set; dense search scores only those
rows) and many (the ranking is read deeper; the product runs whole, then is cut among
the admitted). Every answer equals the unfiltered ranking with the filter applied after,
cut to k: filtering inside the search loses nothing and reorders nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agentkit.kernel import Scope
from agentkit.kernel.where import parse_where
from agentkit.vector import Chunk, HashingEmbedder, SQLiteVectorStore

ACME = Scope("acme", "support")
N = 5000
WORDS = ["walrus", "tusk", "ice", "floe", "krill", "seal", "arctic", "current"]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Any:
    return tmp_path_factory.mktemp("where_sqlite") / "m.db"


def _chunks() -> list[Chunk]:
    return [
        Chunk(
            f"c{i:05d}",
            " ".join(WORDS[(i * j) % len(WORDS)] for j in range(1, 4 + i % 5)) + f" n{i}",
            {"bucket": i % 100, "kind": "even" if i % 2 == 0 else "odd"},
        )
        for i in range(N)
    ]


@pytest.mark.parametrize(
    "where",
    [
        {"bucket": {"$lt": 1}},  # 1%: a rowid set / a gather
        {"bucket": {"$lt": 10}},  # 10%
        {"kind": "even"},  # 50%: past the rowid-set size either way
        {"$not": {"bucket": 7}},  # 99%: the refused rows are the set
    ],
)
async def test_filtered_equals_unfiltered_then_filtered(
    store: Path, where: dict[str, Any]
) -> None:
    tree = parse_where(where)
    assert tree is not None
    async with SQLiteVectorStore(store, embedder=HashingEmbedder(dim=64)) as s:
        if await s.count(scope=ACME) == 0:
            await s.upsert(_chunks(), scope=ACME)
        for k in (1, 10, 25):
            for search in (s.search, s.lexical_search):
                everything = await search("walrus ice krill", k=N, scope=ACME)
                expected = [c.id for _, c in everything if tree.matches(c.metadata)][:k]
                got = await search("walrus ice krill", k=k, scope=ACME, where=where)
                # equal scores may tie at the cut: compare scores, and ids above the cut
                want_scores = [sc for sc, c in everything if tree.matches(c.metadata)][:k]
                assert [round(sc, 5) for sc, _ in got] == [round(sc, 5) for sc in want_scores]
                cut = want_scores[-1] if want_scores else None
                assert [c.id for sc, c in got if sc != cut] == [
                    i for i, sc in zip(expected, want_scores, strict=True) if sc != cut
                ]
                assert all(tree.matches(c.metadata) for _, c in got)
