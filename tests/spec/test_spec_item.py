"""memory.md: MemoryItem, the uniform result shape."""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any

import pytest

from agentkit.state.memory import MemoryItem


def test_positional_construction_binds_score_and_metadata() -> None:
    # MemoryItem("c", "vector", 0.91, meta) must not rebind 0.91 to id.
    meta = {"chunk": "7"}
    item = MemoryItem("c", "vector", 0.91, meta)
    assert item.content == "c"
    assert item.source == "vector"
    assert item.score == 0.91
    assert item.metadata == {"chunk": "7"}
    assert item.id is None


def test_id_is_keyword_only() -> None:
    with pytest.raises(TypeError):
        MemoryItem("c", "vector", 0.91, {}, "row-1")  # type: ignore[misc]
    item = MemoryItem("c", "vector", 0.91, {}, id="row-1")
    assert item.id == "row-1"
    param = inspect.signature(MemoryItem).parameters["id"]
    assert param.kind is inspect.Parameter.KEYWORD_ONLY
    assert param.default is None


def test_field_order_and_defaults() -> None:
    params = list(inspect.signature(MemoryItem).parameters)
    assert params == ["content", "source", "score", "metadata", "id"]
    item = MemoryItem("c", "s")
    assert item.score is None
    assert item.metadata == {}
    assert isinstance(item.metadata, dict)
    assert item.id is None
    assert dataclasses.is_dataclass(item)


def test_score_is_a_float() -> None:
    item = MemoryItem("c", "s", 1)
    assert item.score == 1.0 and isinstance(item.score, float)
    import numpy as np
    item2 = MemoryItem("c", "s", np.float32(0.5))
    assert item2.score == 0.5 and type(item2.score) is float


def test_metadata_is_still_a_dict_for_readers() -> None:
    item = MemoryItem("c", "s", None, {"a": 1, "b": [2]})
    assert isinstance(item.metadata, dict)
    assert item.metadata["a"] == 1
    assert dict(item.metadata) == {"a": 1, "b": [2]}
    assert {**item.metadata, "c": 3} == {"a": 1, "b": [2], "c": 3}
    assert item.metadata.get("zz", "d") == "d"


_MUTATORS: list[tuple[str, Any]] = [
    ("__setitem__", lambda m: m.__setitem__("a", 2)),
    ("__delitem__", lambda m: m.__delitem__("a")),
    ("update", lambda m: m.update({"a": 2})),
    ("update kwargs", lambda m: m.update(a=2)),
    ("pop", lambda m: m.pop("a")),
    ("pop default", lambda m: m.pop("missing", None)),
    ("popitem", lambda m: m.popitem()),
    ("clear", lambda m: m.clear()),
    ("setdefault", lambda m: m.setdefault("new", 1)),
    ("setdefault existing", lambda m: m.setdefault("a", 1)),
]


@pytest.mark.parametrize("name,mutate", _MUTATORS, ids=[n for n, _ in _MUTATORS])
def test_every_metadata_mutator_raises_type_error(name: str, mutate: Any) -> None:
    item = MemoryItem("c", "s", None, {"a": 1})
    with pytest.raises(TypeError):
        mutate(item.metadata)
    assert item.metadata == {"a": 1}


def test_metadata_in_place_or_raises_type_error() -> None:
    item = MemoryItem("c", "s", None, {"a": 1})
    m = item.metadata
    with pytest.raises(TypeError):
        m |= {"b": 2}
    assert item.metadata == {"a": 1}


def test_metadata_subscript_assignment_and_del_raise() -> None:
    item = MemoryItem("c", "s", None, {"a": 1})
    with pytest.raises(TypeError):
        item.metadata["a"] = 2
    with pytest.raises(TypeError):
        del item.metadata["a"]
    assert item.metadata == {"a": 1}


def test_caller_dict_mutation_does_not_reach_item() -> None:
    meta: dict[str, Any] = {"a": 1}
    item = MemoryItem("c", "s", None, meta)
    meta["a"] = 99
    meta["b"] = 2
    del meta["a"]
    assert item.metadata == {"a": 1}


def test_annotate_with_replace_builds_new_frozen_item() -> None:
    item = MemoryItem("c", "s", 0.5, {"a": 1}, id="x")
    new = dataclasses.replace(item, metadata={**item.metadata, "path": "/p"})
    assert new.metadata == {"a": 1, "path": "/p"}
    assert item.metadata == {"a": 1}
    assert (new.content, new.source, new.score, new.id) == ("c", "s", 0.5, "x")
    with pytest.raises(TypeError):
        new.metadata["path"] = "/q"
