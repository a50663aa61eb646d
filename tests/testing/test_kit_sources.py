"""agentkit's own sources and decorators run the conformance kit as their contract tests.

Each class says what its source is: read-only (a journal, a tool, a ReadOnlyMemory),
unscoped-only (files, a journal, a tool: one per tenant, or wrapped in ScopedMemory),
or with ``where`` keys of its own (files). Everything else is inherited.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from agentkit.capabilities import TruncatingCompactor
from agentkit.kernel import Scope
from agentkit.state.files import InMemoryFiles, LocalFiles
from agentkit.state.journal import MutationJournal
from agentkit.state.memory import (
    CachedMemory,
    CompactedMemory,
    FileMemory,
    JournalMemory,
    MemoryItem,
    ReadOnlyMemory,
    ScopedMemory,
    ToolMemory,
    VectorMemory,
)
from agentkit.testing import MemorySourceTests
from agentkit.tools import FunctionTool
from agentkit.vector import Chunk, HashingEmbedder, InMemoryVectorStore, SQLiteVectorStore

FACTS = [
    "walruses haul out on sea ice to rest",
    "a walrus uses its whiskers to find clams",
    "walrus tusks are elongated canine teeth",
]


def _vector() -> VectorMemory:
    return VectorMemory(InMemoryVectorStore(HashingEmbedder(dim=64)))


class TestVectorMemoryInMemory(MemorySourceTests):
    @pytest.fixture
    def source(self) -> VectorMemory:
        return _vector()


class TestVectorMemorySQLite(MemorySourceTests):
    @pytest.fixture
    async def source(self, scratch: Path) -> AsyncIterator[VectorMemory]:
        async with SQLiteVectorStore(scratch / "kit.db", embedder=HashingEmbedder(dim=64)) as s:
            yield VectorMemory(s)


class TestScopedMemory(MemorySourceTests):
    @pytest.fixture
    def source(self) -> ScopedMemory:
        return ScopedMemory(_vector())


class TestCachedMemory(MemorySourceTests):
    @pytest.fixture
    def source(self) -> CachedMemory:
        return CachedMemory(_vector())


class TestCompactedMemory(MemorySourceTests):
    @pytest.fixture
    def source(self) -> CompactedMemory:
        return CompactedMemory(_vector(), TruncatingCompactor(max_chars=2000))


class TestReadOnlyMemory(MemorySourceTests):
    read_only = True
    query_example = "walrus"

    @pytest.fixture
    async def source(self) -> ReadOnlyMemory:
        store = InMemoryVectorStore(HashingEmbedder(dim=64))
        await store.upsert(
            [Chunk(f"f{i}", fact) for i, fact in enumerate(FACTS)], scope=Scope("acme", "support")
        )
        return ReadOnlyMemory(VectorMemory(store))


class _FileKit(MemorySourceTests):
    """FileMemory keys a record by its path; ``where`` is ``path``/``path_prefix`` only."""

    scoped = False
    filters_metadata = False

    def item(self, source: Any, key: str, content: str, metadata: Mapping[str, Any]) -> MemoryItem:
        return MemoryItem(content, source.name, None, {"path": f"/kit/{key}.md"})

    def key_of(self, item: MemoryItem) -> str | None:
        return (item.id or "").removeprefix("/kit/").removesuffix(".md")


class TestFileMemoryInMemoryFiles(_FileKit):
    @pytest.fixture
    def source(self) -> FileMemory:
        return FileMemory(InMemoryFiles())


class TestFileMemoryLocalFiles(_FileKit):
    @pytest.fixture
    def source(self, tmp_path: Path) -> FileMemory:
        return FileMemory(LocalFiles(tmp_path))


@dataclass(frozen=True)
class _Entry:
    role: str
    text: str


class TestJournalMemory(MemorySourceTests):
    read_only = True
    scoped = False
    filters_metadata = False
    query_example = "walrus"

    @pytest.fixture
    def source(self) -> JournalMemory[_Entry]:
        journal: MutationJournal[_Entry] = MutationJournal()
        for fact in FACTS:
            journal.record(_Entry("user", fact))
        return JournalMemory(journal, render=lambda e: e.text)


class TestToolMemory(MemorySourceTests):
    read_only = True
    scoped = False
    filters_metadata = False
    query_example = "walrus"

    @pytest.fixture
    def source(self) -> ToolMemory:
        def search(query: str, limit: int) -> list[str]:
            """Facts containing the query, at most ``limit``."""
            return [f for f in FACTS if query.lower() in f][:limit]

        return ToolMemory(FunctionTool(search))
