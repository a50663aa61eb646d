"""HashingEmbedder: feature hashing of words and character trigrams.

No model and no download, so tests and offline demos get a real embedder. It is
lexical — texts that share words and word pieces land close together — and must
never be presented as semantic.
"""

from __future__ import annotations

import asyncio
import re
import zlib
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from agentkit.kernel.errors import InvalidArgument, InvalidArgumentType

_TOKEN = re.compile(r"\w+")
# Word pieces count less than whole words: they exist to catch morphology
# ("index" / "indexing"), not to outvote an exact word match.
_TRIGRAM_WEIGHT = 0.5
# Above this many characters in one batch, hashing moves to a worker thread so
# the event loop keeps serving other tasks.
_THREAD_CHARS = 20_000


def _check_texts(texts: object) -> list[str]:
    # A bare str is a Sequence of characters; embedding it letter by letter is
    # never what the caller meant.
    if isinstance(texts, str) or not isinstance(texts, Sequence):
        raise InvalidArgumentType(
            f"texts must be a sequence of str, got {type(texts).__name__}"
        )
    out = list(texts)
    for i, text in enumerate(out):
        if not isinstance(text, str):
            raise InvalidArgumentType(f"texts[{i}] must be a str, got {type(text).__name__}")
    return out


class HashingEmbedder:
    """Deterministic signed feature hashing into ``dim`` buckets.

    Features are lower-cased ``\\w+`` words plus the character trigrams of each
    word (padded with ``<``/``>`` so short words still yield one). Hashing uses
    ``zlib.crc32``, not ``hash()``, so vectors are identical across processes
    and stay valid in a durable store. Rows are L2-normalised; a text with no
    word characters has no features and yields an all-zero row (which scores 0
    against everything) rather than a division by zero.

    Args:
        dim: The number of buckets, i.e. the row width. More buckets mean fewer
            unrelated features colliding.

    Raises:
        InvalidArgumentType: A non-int ``dim``.
        InvalidArgument: ``dim`` below 2.
    """

    def __init__(self, dim: int = 256) -> None:
        if isinstance(dim, bool) or not isinstance(dim, int):
            raise InvalidArgumentType(f"dim must be an int, got {type(dim).__name__}")
        if dim < 2:
            raise InvalidArgument(f"dim must be >= 2, got {dim}")
        self.dim = dim

    def __repr__(self) -> str:
        return f"HashingEmbedder(dim={self.dim})"

    def embed_sync(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Blocking variant, for callers already off the event loop."""
        batch = _check_texts(texts)
        out = np.zeros((len(batch), self.dim), dtype=np.float32)
        for row, text in enumerate(batch):
            self._fill(out[row], text)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        np.divide(out, norms, out=out, where=norms > 0)
        return out

    async def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Small batches hash inline; big ones go to a worker thread."""
        batch = _check_texts(texts)
        if sum(len(t) for t in batch) > _THREAD_CHARS:
            return await asyncio.to_thread(self.embed_sync, batch)
        return self.embed_sync(batch)

    def _fill(self, row: npt.NDArray[np.float32], text: str) -> None:
        buckets: dict[int, float] = {}
        dim = self.dim
        for word in _TOKEN.findall(text.lower()):
            _add(buckets, "w:" + word, 1.0, dim)
            padded = f"<{word}>"
            for i in range(len(padded) - 2):
                _add(buckets, "c:" + padded[i : i + 3], _TRIGRAM_WEIGHT, dim)
        if buckets:
            row[list(buckets)] = list(buckets.values())


def _add(buckets: dict[int, float], feature: str, weight: float, dim: int) -> None:
    h = zlib.crc32(feature.encode("utf-8"))
    # The top bit picks the sign so colliding features cancel on average
    # instead of piling up in one bucket.
    sign = -1.0 if h & 0x80000000 else 1.0
    index = (h & 0x7FFFFFFF) % dim
    buckets[index] = buckets.get(index, 0.0) + sign * weight
