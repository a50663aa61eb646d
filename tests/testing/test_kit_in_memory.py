"""The kit on agentkit's reference store and source: InMemoryVectorStore, VectorMemory."""

from __future__ import annotations

import pytest

from agentkit.state.memory import VectorMemory
from agentkit.testing import MemorySourceTests, VectorPortTests
from agentkit.vector import HashingEmbedder, InMemoryVectorStore


class TestInMemoryVectorStore(VectorPortTests):
    @pytest.fixture
    def port(self) -> InMemoryVectorStore:
        return InMemoryVectorStore(HashingEmbedder(dim=64))


class TestVectorMemory(MemorySourceTests):
    @pytest.fixture
    def source(self) -> VectorMemory:
        return VectorMemory(InMemoryVectorStore(HashingEmbedder(dim=64)))
