"""The rows a framework's embedding model returned, checked before they reach a store.

Both bridges wrap a framework model as an agentkit ``Embedder``. A model is
third-party code: it can return the wrong number of rows, the wrong width, ragged
lists or NaN. Stored as they are, such rows corrupt an index silently (every later
cosine is NaN, or a matrix cannot be stacked); refused here, the write fails with
the model's name and nothing already stored is touched.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from agentkit.kernel.errors import StoreError

__all__ = ["model_rows"]


def model_rows(rows: object, *, count: int, dim: int, model: str) -> npt.NDArray[np.float32]:
    """``rows`` as ``count`` unit float32 rows of width ``dim``, or a StoreError naming ``model``.

    Rows are normalised so cosine scores match agentkit's own embedders (a zero row
    stays zero). An empty batch needs no rows from the model at all.

    Raises:
        StoreError: Ragged or non-numeric rows, a shape other than ``(count, dim)``, or
            NaN/infinite values.
    """
    if count == 0:
        return np.zeros((0, dim), dtype=np.float32)
    try:
        matrix = np.array(rows, dtype=np.float32)
    except (TypeError, ValueError) as exc:
        raise StoreError(f"{model} returned rows that are not a numeric matrix: {exc}") from None
    if matrix.shape != (count, dim):
        raise StoreError(
            f"{model} returned vectors of shape {matrix.shape}, expected {(count, dim)}"
        )
    if not np.isfinite(matrix).all():
        raise StoreError(f"{model} returned NaN or infinite values")
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    np.divide(matrix, norms, out=matrix, where=norms > 0)
    return matrix
