"""PostgresVectorStore on a real server runs the conformance kit as its VectorPort contract.

What only PostgreSQL has (COPY ingest, schema records, HNSW settings, pools, BM25) stays
in test_store.py and its neighbours.
"""

from __future__ import annotations

import pytest

from agentkit.testing import VectorPortTests
from agentkit.vector.postgres import PostgresVectorStore


class TestPostgresVectorStore(VectorPortTests):
    @pytest.fixture
    def port(self, store: PostgresVectorStore) -> PostgresVectorStore:
        return store

    refuses_nul = True  # PostgreSQL text cannot hold NUL: such scope ids are refused by name
