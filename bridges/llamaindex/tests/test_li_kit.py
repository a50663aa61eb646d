"""LlamaIndexMemory (any retriever as a MemorySource) runs agentkit.testing's source kit.

It is a read adapter over the user's retriever: read-only (writes go through
VectorMemory(LlamaIndexVectorPort(...))), and unscoped (the retriever is one tenant's).
LlamaIndexVectorPort runs the port kit in tests/interop/test_port_contract.py.
"""

from __future__ import annotations

import pytest
from agentkit_llamaindex import AgentkitEmbedding, LlamaIndexMemory
from llama_index.core import VectorStoreIndex
from llama_index.core.schema import TextNode

from agentkit.testing import MemorySourceTests
from agentkit.vector import HashingEmbedder


class TestLlamaIndexMemory(MemorySourceTests):
    read_only = True
    scoped = False
    filters_metadata = False  # where is re-checked, but nothing the kit writes lands here
    query_example = "walrus"

    @pytest.fixture
    def source(self) -> LlamaIndexMemory:
        texts = ["walruses haul out on sea ice", "a walrus finds clams by whisker",
                 "walrus tusks are teeth"]
        index = VectorStoreIndex(
            [TextNode(id_=f"n{i}", text=t) for i, t in enumerate(texts)],
            embed_model=AgentkitEmbedding(HashingEmbedder(dim=64)),
        )
        return LlamaIndexMemory(index.as_retriever(similarity_top_k=3))
