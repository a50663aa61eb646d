"""The default embedder: all-MiniLM-L6-v2 on ONNX Runtime, built without torch.

Its promise is sentence-transformers' vectors (fp32) or a faster near copy (int8) with
the same semantics: 256-token truncation, batching that never changes a vector, one
line naming a damaged model file. The comparison with sentence-transformers runs where
the ``st`` extra is installed (``make test``); everything else needs only the model
package.
"""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from agentkit.kernel.errors import InvalidArgument, InvalidArgumentType, StoreError
from agentkit.vector import OnnxEmbedder
from agentkit.vector._embedder_id import embedder_name
from agentkit.vector.onnx_embedder import model_dir

SCIFACT = Path("/work/shared/data/scifact/corpus.jsonl.gz")
ODD = [
    "hello world",
    "  leading and trailing spaces  ",
    "",
    "Ünïcödé façade — naïve café 東京",
    "word " * 600,
    "a\n\nb\tc",
    "x",
]


def _documents(n: int = 40) -> list[str]:
    """Real abstracts where the shared data is present, else varied generated prose."""
    if SCIFACT.is_file():
        with gzip.open(SCIFACT, "rt", encoding="utf-8") as fh:
            rows = [json.loads(line) for _, line in zip(range(n), fh, strict=False)]
        return [f"{r['title']} {r['text']}".strip() for r in rows]
    rng = np.random.default_rng(7)
    words = "cell protein mouse gene tumour dose trial risk blood brain vitamin".split()
    return [" ".join(rng.choice(words, size=int(rng.integers(5, 400)))) for _ in range(n)]


@pytest.fixture(scope="module")
def fp32() -> OnnxEmbedder:
    return OnnxEmbedder("fp32")


@pytest.fixture(scope="module")
def int8() -> OnnxEmbedder:
    return OnnxEmbedder()


def test_fp32_gives_sentence_transformers_vectors(fp32: OnnxEmbedder) -> None:
    pytest.importorskip("sentence_transformers")
    from agentkit.vector import SentenceTransformerEmbedder

    texts = ODD + _documents()
    ours = fp32.embed_sync(texts)
    theirs = SentenceTransformerEmbedder().embed_sync(texts)
    cosine = (ours * theirs).sum(axis=1)
    assert cosine.min() >= 0.9999, (cosine.argmin(), cosine.min())


def test_int8_is_close_to_fp32_but_its_own_vector_space(
    fp32: OnnxEmbedder, int8: OnnxEmbedder
) -> None:
    docs = _documents()
    cosine = (fp32.embed_sync(docs) * int8.embed_sync(docs)).sum(axis=1)
    assert cosine.mean() >= 0.99 and cosine.min() >= 0.98
    # Below the 0.999 a shared store needs: why the two are never mixed.
    short = (fp32.embed_sync(ODD) * int8.embed_sync(ODD)).sum(axis=1)
    assert short.min() < 0.999
    # The label names the build of int8's vectors (agentkit-minilm-onnx 0.3's: "int8.3").
    assert embedder_name(int8) == "sentence-transformers/all-MiniLM-L6-v2 (onnxruntime int8.3)"
    assert embedder_name(fp32) == "sentence-transformers/all-MiniLM-L6-v2 (onnxruntime fp32)"


def test_rows_are_unit_vectors_and_batching_leaves_fp32_unchanged(
    fp32: OnnxEmbedder, int8: OnnxEmbedder
) -> None:
    texts = ODD + _documents(12)
    together = fp32.embed_sync(texts)
    assert together.shape == (len(texts), 384) and together.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(together, axis=1), 1.0, atol=1e-5)
    alone = np.stack([fp32.embed_sync([t])[0] for t in texts])
    np.testing.assert_allclose(together, alone, atol=1e-5)  # padding leaks nothing
    small = OnnxEmbedder("fp32", batch_size=3)
    np.testing.assert_allclose(small.embed_sync(texts), together, atol=1e-5)
    # int8 quantises activations per call, so a batch's range shifts a row slightly
    # (documented in docs/sources.md); it stays far closer than another text would be.
    batched = int8.embed_sync(texts)
    single = np.stack([int8.embed_sync([t])[0] for t in texts])
    cosine = (batched * single).sum(axis=1)
    assert cosine[len(ODD) :].min() >= 0.99  # documents among documents
    assert cosine.min() >= 0.95  # a two-word text padded beside 256-token ones


def test_text_past_256_tokens_is_embedded_by_its_first_256(fp32: OnnxEmbedder) -> None:
    head = " ".join(f"w{i}" for i in range(300))  # far more than 256 word pieces
    a, b, c = fp32.embed_sync([head, head + " completely different tail", head[:400]])
    np.testing.assert_allclose(a, b, atol=1e-6)
    assert float(a @ c) < 0.999  # a shorter text is not cut: the limit is where it bites


async def test_embed_checks_its_input_like_every_embedder(int8: OnnxEmbedder) -> None:
    assert (await int8.embed([])).shape == (0, 384)
    with pytest.raises(InvalidArgumentType):
        await int8.embed("a bare string")
    with pytest.raises(InvalidArgumentType):
        await int8.embed(["ok", 3])  # type: ignore[list-item]
    with pytest.raises(InvalidArgument):
        OnnxEmbedder("fp16")
    with pytest.raises(InvalidArgument):
        OnnxEmbedder(batch_size=0)


def _copy_model(tmp_path: Path) -> Path:
    folder = tmp_path / "model"
    shutil.copytree(model_dir(), folder)
    return folder


def _one_line(exc: pytest.ExceptionInfo[StoreError], path: Path) -> str:
    text = str(exc.value)
    assert "\n" not in text
    assert str(path) in text
    assert "pip install --force-reinstall" in text  # how to rebuild it
    return text


def test_a_missing_truncated_or_foreign_model_file_is_one_line(tmp_path: Path) -> None:
    folder = _copy_model(tmp_path)
    int8_file = folder / "int8.onnx"
    with int8_file.open("r+b") as fh:  # a cut-off copy
        fh.truncate(int8_file.stat().st_size // 2)
    with pytest.raises(StoreError) as exc:
        OnnxEmbedder(path=folder)
    assert "truncated" in _one_line(exc, int8_file)

    # another model's file in its place, the manifest edited to match its size
    shutil.copyfile(folder / "fp32.onnx", int8_file)
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["files"]["int8.onnx"]["size"] = int8_file.stat().st_size
    (folder / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(StoreError) as exc:
        OnnxEmbedder(path=folder)
    assert "is not sentence-transformers/all-MiniLM-L6-v2 int8" in _one_line(exc, int8_file)

    int8_file.write_bytes(b"not a model at all")
    manifest["files"]["int8.onnx"]["size"] = int8_file.stat().st_size
    (folder / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(StoreError) as exc:
        OnnxEmbedder(path=folder)
    assert "cannot be loaded" in _one_line(exc, int8_file)

    table = folder / "word_embeddings.bin"  # shared by both graphs: checked for both
    data = table.read_bytes()
    table.write_bytes(data[: len(data) // 3])
    with pytest.raises(StoreError) as exc:
        OnnxEmbedder("fp32", path=folder)
    assert "truncated" in _one_line(exc, table)
    table.write_bytes(data)

    int8_file.unlink()
    with pytest.raises(StoreError) as exc:
        OnnxEmbedder(path=folder)
    assert "is missing" in _one_line(exc, int8_file)

    (folder / "tokenizer.json").unlink()
    with pytest.raises(StoreError) as exc:
        OnnxEmbedder("fp32", path=folder)
    assert "is missing" in _one_line(exc, folder / "tokenizer.json")


@pytest.mark.parametrize("old_label", ["int8", "int8.2"])  # agentkit-minilm-onnx 0.1, 0.2
def test_an_older_builds_int8_file_is_refused_not_mixed(tmp_path: Path, old_label: str) -> None:
    """A stale model install (an older agentkit-minilm-onnx, whose int8 vectors differ)
    must not record its vectors under the new label: it is refused in one line, with the
    command that rebuilds it."""
    import onnx  # the test group installs it: this check must run, not skip
    folder = _copy_model(tmp_path)
    int8_file = folder / "int8.onnx"
    model = onnx.load_model(str(int8_file), load_external_data=False)
    props = {p.key: p.value for p in model.metadata_props}
    assert props["agentkit.precision"] == "int8.3"
    onnx.helper.set_model_props(model, {**props, "agentkit.precision": old_label})
    onnx.save_model(model, str(int8_file))
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["files"]["int8.onnx"]["size"] = int8_file.stat().st_size
    (folder / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(StoreError) as exc:
        OnnxEmbedder(path=folder)
    said = f"it says 'sentence-transformers/all-MiniLM-L6-v2' '{old_label}'"
    assert said in _one_line(exc, int8_file)
    assert OnnxEmbedder("fp32", path=folder).precision == "fp32"  # fp32 did not move
