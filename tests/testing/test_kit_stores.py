"""agentkit's embedded stores run the conformance kit as their VectorPort contract tests.

Checks beyond the contract (the SQLite file, the numpy matrix, concurrency off the
loop, schema upgrades) stay in each store's own test file.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from agentkit.testing import VectorPortTests
from agentkit.vector import HashingEmbedder, InMemoryVectorStore, SQLiteVectorStore


class TestInMemoryVectorStore(VectorPortTests):
    @pytest.fixture
    def port(self) -> InMemoryVectorStore:
        return InMemoryVectorStore(HashingEmbedder(dim=64))


class TestSQLiteVectorStore(VectorPortTests):
    @pytest.fixture
    async def port(self, scratch: Path) -> AsyncIterator[SQLiteVectorStore]:
        async with SQLiteVectorStore(scratch / "kit.db", embedder=HashingEmbedder(dim=64)) as s:
            yield s
