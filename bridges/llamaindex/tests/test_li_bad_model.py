"""A LlamaIndex model that returns bad vectors is refused before the store is touched."""

from __future__ import annotations

import math

import pytest
from agentkit_llamaindex import AgentkitVectorStore, LlamaIndexEmbedder
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.schema import TextNode

from agentkit.kernel.errors import StoreError
from agentkit.vector import InMemoryVectorStore


class _Flaky(MockEmbedding):
    """Embeds like the mock model until a text asks for a broken row."""

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        rows = [[1.0 + i] + [0.5] * (self.embed_dim - 1) for i in range(len(texts))]
        for i, text in enumerate(texts):
            if text.startswith("nan"):
                rows[i][0] = math.nan
            if text.startswith("short"):
                rows[i] = rows[i][:-1]
        return rows

    async def _aget_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return self._get_text_embeddings(texts)


@pytest.mark.parametrize(("text", "needle"), [("nan row", "NaN"), ("short row", "numeric")])
def test_bad_rows_fail_the_write_and_keep_what_was_stored(text: str, needle: str) -> None:
    store = AgentkitVectorStore(InMemoryVectorStore(LlamaIndexEmbedder(_Flaky(embed_dim=8))))
    store.add([TextNode(id_="kept", text="refunds within 30 days")])

    with pytest.raises(StoreError, match=needle) as info:
        store.add([TextNode(id_="a", text="fine text"), TextNode(id_="b", text=text)])
    assert "_Flaky" in str(info.value)

    assert [n.node_id for n in store.get_nodes(node_ids=["kept", "a", "b"])] == ["kept"]
