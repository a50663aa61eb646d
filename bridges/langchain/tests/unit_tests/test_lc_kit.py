"""LangChainMemory (any retriever as a MemorySource) runs agentkit.testing's source kit.

It is a read adapter over the user's retriever: read-only (writes go through
VectorMemory(LangChainVectorPort(store))), and unscoped (the retriever is one tenant's).
LangChainVectorPort runs the port kit in tests/interop/test_port_contract.py.
"""

from __future__ import annotations

import pytest
from agentkit_langchain import AgentkitEmbeddings, LangChainMemory
from langchain_core.documents import Document
from langchain_core.vectorstores import InMemoryVectorStore

from agentkit.testing import MemorySourceTests
from agentkit.vector import HashingEmbedder


class TestLangChainMemory(MemorySourceTests):
    read_only = True
    scoped = False
    filters_metadata = False  # where is re-checked, but nothing the kit writes lands here
    query_example = "walrus"

    @pytest.fixture
    def source(self) -> LangChainMemory:
        store = InMemoryVectorStore(AgentkitEmbeddings(HashingEmbedder(dim=64)))
        store.add_documents(
            [
                Document(id=f"d{i}", page_content=text)
                for i, text in enumerate(
                    ["walruses haul out on sea ice", "a walrus finds clams by whisker",
                     "walrus tusks are teeth"]
                )
            ]
        )
        return LangChainMemory(store.as_retriever())
