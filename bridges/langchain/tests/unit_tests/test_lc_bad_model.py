"""A LangChain model that returns bad vectors is refused before the store is touched."""

from __future__ import annotations

import math

import pytest
from agentkit_langchain import AgentkitVectorStore, LangChainEmbedder
from langchain_core.embeddings import DeterministicFakeEmbedding

from agentkit.kernel.errors import StoreError
from agentkit.vector import InMemoryVectorStore


class _Flaky(DeterministicFakeEmbedding):
    """Embeds like the fake model until a text asks for a broken row."""

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        rows = super().embed_documents(texts)
        for i, text in enumerate(texts):
            if text.startswith("nan"):
                rows[i][0] = math.nan
            if text.startswith("short"):
                rows[i] = rows[i][:-1]
        return rows


@pytest.mark.parametrize(("text", "needle"), [("nan row", "NaN"), ("short row", "numeric")])
def test_bad_rows_fail_the_write_and_keep_what_was_stored(text: str, needle: str) -> None:
    model = _Flaky(size=8)
    store = AgentkitVectorStore(InMemoryVectorStore(LangChainEmbedder(model)))
    store.add_texts(["refunds within 30 days"], ids=["kept"])

    with pytest.raises(StoreError, match=needle) as info:
        store.add_texts(["fine text", text], ids=["a", "b"])
    assert "_Flaky" in str(info.value)

    assert [d.id for d in store.get_by_ids(["kept", "a", "b"])] == ["kept"]
    assert [d.id for d in store.similarity_search("refunds within 30 days", k=4)] == ["kept"]
