"""The real MiniLM, loaded from the bundled package: offline, normalised, semantic."""

from __future__ import annotations

import numpy as np
import pytest

from agentkit.kernel.errors import InvalidArgument, InvalidArgumentType, StoreError
from agentkit.vector import SentenceTransformerEmbedder


async def test_minilm_ranks_a_paraphrase_above_an_unrelated_text() -> None:
    embedder = SentenceTransformerEmbedder()
    assert embedder.dim == 384
    assert embedder.model_name == "sentence-transformers/all-MiniLM-L6-v2"
    query = "How do I get my money back for a purchase?"
    texts = [
        "The gardener planted tulip bulbs along the fence in autumn.",
        "Customers can request a refund for an order they paid for.",
    ]
    rows = await embedder.embed([query, *texts])
    assert rows.dtype == np.float32 and rows.shape == (3, 384)
    np.testing.assert_allclose(np.linalg.norm(rows, axis=1), 1.0, rtol=1e-5)
    unrelated, paraphrase = rows[1:] @ rows[0]
    assert paraphrase > unrelated + 0.2
    # same text, same vector; an empty batch has the right width
    again = await embedder.embed([query])
    np.testing.assert_allclose(again[0], rows[0], atol=1e-5)
    assert (await embedder.embed([])).shape == (0, 384)
    with pytest.raises(InvalidArgumentType):
        await embedder.embed("a bare string")


def test_bad_arguments_and_missing_models_fail_clearly(tmp_path: object) -> None:
    with pytest.raises(InvalidArgument):
        SentenceTransformerEmbedder(batch_size=0)
    with pytest.raises(InvalidArgumentType):
        SentenceTransformerEmbedder(model=3)
    with pytest.raises(StoreError, match="offline"):
        SentenceTransformerEmbedder(f"{tmp_path}/no-such-model")
