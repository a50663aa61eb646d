"""AgentkitEmbeddings takes either model engine: ONNX Runtime (default) or torch."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from agentkit_langchain import AgentkitEmbeddings
from langchain_core.vectorstores import InMemoryVectorStore

TEXTS = ["Tomatoes need six hours of sun.", "Tenants never see each other's data."]


def _engine(kind: str) -> Any:
    if kind == "onnx":
        from agentkit.vector import OnnxEmbedder

        return OnnxEmbedder()
    pytest.importorskip("sentence_transformers")
    from agentkit.vector import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder()


@pytest.mark.parametrize("kind", ["onnx", "st"])
async def test_either_engine_embeds_and_retrieves_through_langchain(kind: str) -> None:
    embedder = _engine(kind)
    emb = AgentkitEmbeddings(embedder)
    docs = emb.embed_documents(TEXTS)
    np.testing.assert_allclose(np.array(docs, np.float32), embedder.embed_sync(TEXTS), atol=1e-6)
    assert np.array(await emb.aembed_query(TEXTS[0])) == pytest.approx(emb.embed_query(TEXTS[0]))
    store = InMemoryVectorStore.from_texts(TEXTS, emb)
    assert (
        store.similarity_search("how much sunlight do tomato plants want", k=1)[0].page_content
        == TEXTS[0]
    )
