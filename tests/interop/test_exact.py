"""interop.nearest and chroma_space: exact ranking for approximate stores' short answers."""

from __future__ import annotations

import math
from typing import Any

import pytest

from agentkit.interop import chroma_space, nearest
from agentkit.kernel.errors import StoreError

QUERY = [1.0, 0.0]
ROWS = {
    "a": [1.0, 0.0],  # the query itself
    "b": [2.0, 0.0],  # same direction, longer
    "c": [0.0, 1.0],  # orthogonal
    "d": [-1.0, 0.0],  # opposite
    "z": [0.0, 0.0],  # no features
}


def _pages(size: int) -> list[tuple[list[str], list[list[float]]]]:
    keys = list(ROWS)
    return [
        (keys[i : i + size], [ROWS[k] for k in keys[i : i + size]])
        for i in range(0, len(keys), size)
    ]


@pytest.mark.parametrize("size", [1, 2, 5])
def test_each_space_ranks_as_chroma_measures_it_whatever_the_page_size(size: int) -> None:
    assert nearest(QUERY, _pages(size), 5, "l2") == [
        ("a", 0.0), ("b", 1.0), ("z", 1.0), ("c", 2.0), ("d", 4.0)
    ]
    # cosine ignores length; a zero vector is as far as an orthogonal one (hnswlib)
    assert nearest(QUERY, _pages(size), 5, "cosine") == [
        ("a", 0.0), ("b", 0.0), ("c", 1.0), ("z", 1.0), ("d", 2.0)
    ]
    assert nearest(QUERY, _pages(size), 5, "ip") == [
        ("b", -1.0), ("a", 0.0), ("c", 1.0), ("z", 1.0), ("d", 2.0)
    ]
    assert nearest(QUERY, _pages(size), 2, "l2") == [("a", 0.0), ("b", 1.0)]


def test_identical_vectors_keep_their_arrival_order_across_pages() -> None:
    keys = [f"k{i}" for i in range(50)]
    pages = [(keys[i : i + 7], [[0.5, 0.5]] * len(keys[i : i + 7])) for i in range(0, 50, 7)]
    found = nearest(QUERY, pages, 20, "l2")
    assert [key for key, _ in found] == keys[:20]
    assert all(math.isclose(d, 0.5) for _, d in found)


def test_a_query_of_another_width_or_an_unknown_space_is_a_store_error() -> None:
    with pytest.raises(StoreError, match="3-dimensional"):
        nearest(QUERY, [(["x"], [[1.0, 2.0, 3.0]])], 1, "l2")
    with pytest.raises(StoreError, match="unknown distance space 'manhattan'"):
        nearest(QUERY, [], 1, "manhattan")
    assert nearest(QUERY, [([], [])], 3, "l2") == []


class _Collection:
    def __init__(self, configuration: Any, metadata: Any) -> None:
        self.configuration = configuration
        self.metadata = metadata


def test_the_space_comes_from_the_configuration_then_legacy_metadata_then_l2() -> None:
    assert chroma_space(_Collection({"hnsw": {"space": "cosine"}}, None)) == "cosine"
    assert chroma_space(_Collection({"hnsw": None, "spann": {"space": "ip"}}, None)) == "ip"
    assert chroma_space(_Collection({}, {"hnsw:space": "ip"})) == "ip"
    assert chroma_space(_Collection(None, None)) == "l2"
    with pytest.raises(StoreError, match="unknown distance space"):
        chroma_space(_Collection({"hnsw": {"space": "hamming"}}, None))
