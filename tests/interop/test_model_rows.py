"""model_rows: what a framework model returned, refused before it can corrupt a store."""

from __future__ import annotations

import math

import numpy as np
import pytest

from agentkit.interop import model_rows
from agentkit.kernel.errors import StoreError


def test_rows_come_back_as_unit_float32_rows() -> None:
    out = model_rows([[3.0, 4.0], [0.0, 2.0]], count=2, dim=2, model="m")
    assert out.dtype == np.float32
    assert out.tolist() == [[0.6000000238418579, 0.800000011920929], [0.0, 1.0]]


def test_a_zero_row_stays_zero_instead_of_becoming_nan() -> None:
    out = model_rows([[0.0, 0.0]], count=1, dim=2, model="m")
    assert out.tolist() == [[0.0, 0.0]]


def test_an_empty_batch_needs_no_rows() -> None:
    assert model_rows(None, count=0, dim=3, model="m").shape == (0, 3)


@pytest.mark.parametrize(
    ("rows", "count", "needle"),
    [
        ([[1.0, 2.0, 3.0]], 1, "shape (1, 3), expected (1, 2)"),
        ([[1.0, 2.0]], 2, "shape (1, 2), expected (2, 2)"),
        ([[1.0, 2.0], [1.0]], 2, "not a numeric matrix"),
        ([["a", "b"]], 1, "not a numeric matrix"),
        ([[1.0, math.nan]], 1, "NaN or infinite"),
        ([[1.0, math.inf]], 1, "NaN or infinite"),
    ],
)
def test_bad_rows_are_a_store_error_naming_the_model(rows: object, count: int, needle: str) -> None:
    with pytest.raises(StoreError, match="my-model") as info:
        model_rows(rows, count=count, dim=2, model="my-model")
    assert needle in str(info.value)
