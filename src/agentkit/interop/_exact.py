"""Exact nearest-neighbour ranking, for when an approximate store's answer is short.

Chroma's HNSW walk can return fewer records than asked even though more match (many
identical vectors leave the graph poorly connected), and asking again, wider or
restricted to ids, walks the same graph. The bridges then read the matching records'
vectors through the store's public API and rank them here, in the store's own distance
space, so the answer is the one an exact index would give and its distances are the
numbers the store itself reports. No framework imports: both bridges use this.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TypeVar

import numpy as np

from agentkit.kernel.errors import StoreError

__all__ = ["SPACES", "chroma_space", "nearest"]

K = TypeVar("K")

SPACES = ("l2", "cosine", "ip")
"""The distance spaces ``nearest`` speaks, as Chroma names them: squared euclidean,
one minus cosine similarity, one minus inner product (lower is nearer in all three)."""


def chroma_space(collection: object) -> str:
    """The distance space of a chromadb ``Collection``: its configuration's ``hnsw``
    (or ``spann``) ``space``, else the legacy ``hnsw:space`` metadata, else Chroma's
    default ``"l2"``."""
    configuration = getattr(collection, "configuration", None)
    if isinstance(configuration, Mapping):
        for index in ("hnsw", "spann"):
            settings = configuration.get(index)
            if isinstance(settings, Mapping) and settings.get("space"):
                return _known(settings["space"])
    metadata = getattr(collection, "metadata", None)
    if isinstance(metadata, Mapping) and metadata.get("hnsw:space"):
        return _known(metadata["hnsw:space"])
    return "l2"


def nearest(
    query: Sequence[float],
    batches: Iterable[tuple[Sequence[K], Any]],
    n: int,
    space: str,
) -> list[tuple[K, float]]:
    """The ``n`` keys nearest ``query``, nearest first, with their distances in ``space``.

    ``batches`` yields ``(keys, vectors)`` (vectors: one row per key), so a large store
    is read a page at a time and only the best ``n`` are held. Equal distances keep
    the order the keys arrived in, so the answer does not depend on sort luck.
    """
    space = _known(space)
    point = np.asarray(query, dtype=np.float64)
    kept_keys: list[K] = []
    kept = np.empty(0, dtype=np.float64)
    for keys, vectors in batches:
        keys = list(keys)
        if not keys:
            continue
        rows = np.asarray(vectors, dtype=np.float64).reshape(len(keys), -1)
        if rows.shape[1] != point.shape[0]:
            raise StoreError(
                f"the store holds {rows.shape[1]}-dimensional vectors but the query "
                f"embedding has {point.shape[0]}: it was embedded with another model"
            )
        kept_keys += keys
        kept = np.concatenate([kept, _distances(point, rows, space)])
        if len(kept_keys) > n:
            order = np.argsort(kept, kind="stable")[:n]
            kept_keys = [kept_keys[i] for i in order]
            kept = kept[order]
    order = np.argsort(kept, kind="stable")[:n]
    return [(kept_keys[i], float(kept[i])) for i in order]


def _distances(point: np.ndarray, rows: np.ndarray, space: str) -> np.ndarray:
    if space == "l2":
        diff = rows - point
        squared: np.ndarray = np.einsum("ij,ij->i", diff, diff)
        return squared
    if space == "ip":
        inner: np.ndarray = 1.0 - rows @ point
        return inner
    # Cosine as hnswlib computes it: vectors normalised, a zero vector staying zero.
    norms = np.linalg.norm(rows, axis=1) * np.linalg.norm(point)
    dots = rows @ point
    similarity = np.divide(dots, norms, out=np.zeros_like(dots), where=norms > 0)
    cosine: np.ndarray = 1.0 - similarity
    return cosine


def _known(space: object) -> str:
    if space not in SPACES:
        raise StoreError(
            f"unknown distance space {space!r}: exact ranking knows {', '.join(SPACES)}"
        )
    return str(space)
