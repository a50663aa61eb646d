"""HashingEmbedder: deterministic, normalised, lexical, offline."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from agentkit.kernel import InvalidArgument, InvalidArgumentType
from agentkit.vector import Embedder, HashingEmbedder


async def test_rows_are_float32_unit_vectors_of_width_dim() -> None:
    emb = HashingEmbedder(dim=64)
    out = await emb.embed(["alpha beta", "gamma", "a much longer text about vectors"])
    assert out.shape == (3, 64)
    assert out.dtype == np.float32
    assert np.allclose(np.linalg.norm(out, axis=1), 1.0, atol=1e-6)


def test_default_dim_is_256_and_it_satisfies_the_embedder_protocol() -> None:
    emb = HashingEmbedder()
    assert emb.dim == 256
    assert isinstance(emb, Embedder)


async def test_text_without_word_characters_is_a_zero_row_not_nan() -> None:
    out = await HashingEmbedder().embed(["", "   ", "?!"])
    assert not np.isnan(out).any()
    assert np.count_nonzero(out) == 0


async def test_empty_batch_gives_zero_rows() -> None:
    out = await HashingEmbedder(dim=8).embed([])
    assert out.shape == (0, 8)


async def test_case_and_punctuation_do_not_change_the_vector() -> None:
    emb = HashingEmbedder()
    out = await emb.embed(["Hello, World!", "hello world"])
    assert np.allclose(out[0], out[1])


async def test_shared_words_score_higher_than_unrelated_text() -> None:
    emb = HashingEmbedder()
    q, near, far = await emb.embed(
        ["refund policy", "our refund policy lasts 30 days", "gpu kernels"]
    )
    assert float(q @ near) > float(q @ far)


async def test_word_pieces_link_inflections() -> None:
    emb = HashingEmbedder()
    q, inflected, other = await emb.embed(["indexing", "index", "banana"])
    assert float(q @ inflected) > float(q @ other)


def test_vectors_are_identical_across_processes() -> None:
    # hash() is salted per process; a durable store needs the same vector tomorrow.
    code = (
        "from agentkit.vector import HashingEmbedder;"
        "print(HashingEmbedder(32).embed_sync(['tenant isolation matters']).tobytes().hex())"
    )
    runs = {
        subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            check=True,
            env={"PYTHONHASHSEED": str(seed)},
        ).stdout
        for seed in (1, 2)
    }
    here = HashingEmbedder(32).embed_sync(["tenant isolation matters"]).tobytes().hex()
    assert runs == {here + "\n"}


async def test_big_batches_give_the_same_answer_as_small_ones() -> None:
    # Big batches are hashed in a worker thread; the result must not depend on that.
    emb = HashingEmbedder()
    texts = [f"document number {i} about topic {i % 7}" * 20 for i in range(200)]
    assert np.array_equal(await emb.embed(texts), emb.embed_sync(texts))


@pytest.mark.parametrize(
    ("texts", "error"),
    [
        ("a bare string", InvalidArgumentType),
        (["ok", 3], InvalidArgumentType),
        ([None], InvalidArgumentType),
        (42, InvalidArgumentType),
    ],
)
async def test_bad_texts_are_refused(texts: object, error: type[Exception]) -> None:
    with pytest.raises(error, match="texts"):
        await HashingEmbedder().embed(texts)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("dim", "error"),
    [
        (0, InvalidArgument),
        (1, InvalidArgument),
        ("8", InvalidArgumentType),
        (True, InvalidArgumentType),
    ],
)
def test_bad_dim_is_refused(dim: object, error: type[Exception]) -> None:
    with pytest.raises(error, match="dim"):
        HashingEmbedder(dim)  # type: ignore[arg-type]
