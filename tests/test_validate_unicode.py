"""``unicode_problem`` names where in nested metadata a lone surrogate sits.

The error message is what a user reads to find the bad value among thousands of
records, so the path it spells must be exact at every depth and for every kind of
container, and clean values of every kind must pass.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import pytest

from agentkit.kernel.errors import InvalidArgument
from agentkit.kernel.validate import check_where, unicode_problem
from agentkit.vector.port import Chunk, check_chunks

BAD = "x\ud800y"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ({"a": BAD}, "metadata['a'] holds a lone surrogate '\\ud800' at position 1"),
        ({"a": [1, "ok", {"b": BAD}]},
         "metadata['a'][2]['b'] holds a lone surrogate '\\ud800' at position 1"),
        ({"a": ("é", BAD)}, "metadata['a'][1] holds a lone surrogate '\\ud800' at position 1"),
        ({1: {None: [BAD]}}, "metadata[1][None][0] holds a lone surrogate '\\ud800' at position 1"),
        ({"a": {"k\udc00": 1}}, "metadata['a'] has a key 'k\\udc00' holding a lone surrogate"),
        ({"k\udc00": 1}, "metadata has a key 'k\\udc00' holding a lone surrogate"),
        (OrderedDict(z=[[BAD]]),
         "metadata['z'][0][0] holds a lone surrogate '\\ud800' at position 1"),
        (BAD, "metadata holds a lone surrogate '\\ud800' at position 1"),
    ],
)
def test_the_path_to_the_bad_value_is_spelt_exactly(value: object, expected: str) -> None:
    assert unicode_problem(value, "metadata") == expected


@pytest.mark.parametrize(
    "value",
    [
        {},
        {"source": "/docs/a.md", "i": 3, "f": 1.5, "b": True, "n": None},
        {"title": "Café – naïve", "tags": ["é", "ü"], "nested": {"deep": ("ok", 1)}},
        {"s": frozenset({"a", "é"}), 7: "seven"},
        "plain ascii",
        "non-ascii but valid: 日本",
    ],
)
def test_clean_values_pass(value: object) -> None:
    assert unicode_problem(value, "metadata") is None


def test_cycles_and_depth_do_not_hang_or_recurse() -> None:
    loop: dict[str, Any] = {"ok": "fine"}
    loop["self"] = loop
    assert unicode_problem(loop, "m") is None
    loop["bad"] = [BAD]
    expected = "m['bad'][0] holds a lone surrogate '\\ud800' at position 1"
    assert unicode_problem(loop, "m") == expected
    deep: Any = BAD
    for _ in range(5000):
        deep = [deep]
    problem = unicode_problem({"d": deep}, "m")
    assert problem is not None and problem.startswith("m['d'][0][0]")


def test_callers_refuse_with_the_path() -> None:
    with pytest.raises(InvalidArgument, match=r"chunk 'c1': metadata\['a'\]\[0\] holds"):
        check_chunks([Chunk("c0", "fine", {"a": ["ok"]}), Chunk("c1", "t", {"a": [BAD]})])
    with pytest.raises(InvalidArgument, match=r"where\['k'\] holds a lone surrogate"):
        check_where({"k": BAD})
