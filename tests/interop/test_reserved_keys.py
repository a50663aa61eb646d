"""The bridges' reserved-key check stays exact while it remembers clean key names."""

from __future__ import annotations

import pytest
from agentkit_langchain.mapping import to_documents
from agentkit_llamaindex import to_nodes

from agentkit.interop import check_unreserved, known_unreserved
from agentkit.kernel.errors import InvalidArgument
from agentkit.state.memory import MemoryItem

MAPPERS = {"langchain": to_documents, "llamaindex": to_nodes}


@pytest.mark.parametrize("bridge", sorted(MAPPERS))
def test_a_reserved_key_beside_remembered_ones_is_refused(bridge: str) -> None:
    mapper = MAPPERS[bridge]
    clean = MemoryItem("text", "src", 0.5, {"source": "a.md", "page": 3}, id="x")
    mapper([clean, clean])
    assert known_unreserved({"source": "a.md", "page": 3})  # remembered: the fast path
    bad = MemoryItem("text", "src", 0.5, {"source": "a.md", "agentkit_score": 9}, id="y")
    with pytest.raises(InvalidArgument, match="'agentkit_score'"):
        mapper([clean, bad])
    with pytest.raises(InvalidArgument, match="'agentkit_score'"):
        mapper([bad])  # refusing never teaches the set the reserved key


def test_refusals_hold_after_many_one_off_key_names() -> None:
    for n in range(10_000):  # ids used as keys: the remembered names start over
        check_unreserved({f"key-{n}": n})
    assert not known_unreserved({"agentkit_id": "x"})
    with pytest.raises(InvalidArgument, match="'agentkit_id'"):
        check_unreserved({"key-9999": 1, "agentkit_id": "x"})
    check_unreserved({"key-9999": 1, "other": 2})
    assert known_unreserved({"key-9999": 1, "other": 2})
