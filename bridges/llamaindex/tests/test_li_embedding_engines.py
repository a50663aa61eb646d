"""AgentkitEmbedding takes either model engine: ONNX Runtime (default) or torch."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from agentkit_llamaindex import AgentkitEmbedding
from llama_index.core import Document, VectorStoreIndex

TEXTS = ["Tomatoes need six hours of sun.", "Tenants never see each other's data."]


def _engine(kind: str) -> Any:
    if kind == "onnx":
        from agentkit.vector import OnnxEmbedder

        return OnnxEmbedder()
    pytest.importorskip("sentence_transformers")
    from agentkit.vector import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder()


@pytest.mark.parametrize("kind", ["onnx", "st"])
def test_either_engine_embeds_and_retrieves_through_llamaindex(kind: str) -> None:
    embedder = _engine(kind)
    model = AgentkitEmbedding(embedder)
    got = np.array(model.get_text_embedding_batch(TEXTS), np.float32)
    np.testing.assert_allclose(got, embedder.embed_sync(TEXTS), atol=1e-6)
    index = VectorStoreIndex.from_documents([Document(text=t) for t in TEXTS], embed_model=model)
    hits = index.as_retriever(similarity_top_k=1).retrieve("how much sun do tomato plants want")
    assert hits[0].node.get_content() == TEXTS[0]
