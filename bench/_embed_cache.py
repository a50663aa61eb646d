"""A content-addressed embedding cache for the benchmarks (not a bench script itself).

Encoding SciFact with MiniLM takes minutes on a small machine, so vectors are kept under
``bench/.cache/`` (gitignored) in one ``.npz`` per model and corpus: keyed by the model
name and the corpus file's hash, rows addressed by the sha256 of each text. Whatever
chunking the bench uses, a text seen before is never encoded twice. The benches keep
their cached stores there too. ``AGENTKIT_BENCH_CACHE`` names another folder, so a run
on other data (the smoke test's tiny corpus) never mixes its rows into this cache.

``run_all.py`` skips modules whose name starts with ``_``.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

CACHE_DIR = Path(
    os.environ.get("AGENTKIT_BENCH_CACHE") or Path(__file__).resolve().parent / ".cache"
)


def file_hash(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()[:16]


def cache_path(model_name: str, corpus_hash: str) -> Path:
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", model_name).strip("_")
    return CACHE_DIR / f"{slug}-{corpus_hash}.npz"


def text_key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class CachedEmbedder:
    """Wraps an embedder; serves known texts from disk and encodes only the misses.

    Exposes the inner ``dim`` and ``model_name`` so a store records the real model.
    ``hits``/``misses`` let a bench say honestly how much it encoded.
    """

    def __init__(self, inner: Any, path: Path) -> None:
        self.inner = inner
        self.dim: int = inner.dim
        self.model_name: str = getattr(inner, "model_name", type(inner).__name__)
        # What stores record beside the model (engine, precision): the inner embedder's.
        for attr in ("engine", "precision"):
            if hasattr(inner, attr):
                setattr(self, attr, getattr(inner, attr))
        self.path = path
        self.hits = 0
        self.misses = 0
        self._rows: dict[str, npt.NDArray[np.float32]] = {}
        self._dirty = False
        if path.exists():
            data = np.load(path)
            for key, row in zip(data["keys"], data["vectors"], strict=True):
                self._rows[str(key)] = row.astype(np.float32)

    def __len__(self) -> int:
        return len(self._rows)

    def lookup(self, texts: Sequence[str]) -> tuple[npt.NDArray[np.float32], list[int]]:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        missing: list[int] = []
        for i, text in enumerate(texts):
            row = self._rows.get(text_key(text))
            if row is None:
                missing.append(i)
            else:
                out[i] = row
        return out, missing

    def add(self, texts: Sequence[str], vectors: npt.NDArray[np.float32]) -> None:
        for text, row in zip(texts, vectors, strict=True):
            self._rows[text_key(text)] = np.asarray(row, dtype=np.float32)
        self._dirty = True

    def embed_sync(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        out, missing = self.lookup(texts)
        self.hits += len(texts) - len(missing)
        self.misses += len(missing)
        if missing:
            fresh = self.inner.embed_sync([texts[i] for i in missing])
            out[missing] = fresh
            self.add([texts[i] for i in missing], fresh)
        return out

    async def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        import asyncio

        return await asyncio.to_thread(self.embed_sync, list(texts))

    def save(self) -> None:
        if not self._dirty:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        keys = np.array(list(self._rows), dtype="U64")
        vectors = np.stack(list(self._rows.values())).astype(np.float32)
        tmp = self.path.with_suffix(".tmp.npz")
        np.savez(tmp, keys=keys, vectors=vectors)
        os.replace(tmp, self.path)
        self._dirty = False
