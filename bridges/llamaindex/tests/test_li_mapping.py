"""The item <-> node mapping: exact round trip, reserved keys, hidden stamps."""

from __future__ import annotations

import numpy as np
import pytest
from agentkit_llamaindex import from_node, to_node, to_nodes
from hypothesis import given, settings
from hypothesis import strategies as st
from llama_index.core.schema import MetadataMode, NodeWithScore, TextNode

from agentkit.state.memory import MemoryItem

_keys = st.text(min_size=1, max_size=12).filter(lambda s: not s.startswith("agentkit_"))
_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=6,
)
items = st.builds(
    lambda content, source, score, metadata, id_: MemoryItem(
        content, source, score, metadata, id=id_
    ),
    st.text(max_size=50),
    st.text(min_size=1, max_size=10),
    st.none() | st.floats(allow_nan=False, allow_infinity=False),
    st.dictionaries(_keys, _values, max_size=5),
    st.none() | st.text(min_size=1, max_size=20),
)


@settings(max_examples=100, deadline=None)
@given(items)
def test_round_trip_is_exact(item: MemoryItem) -> None:
    assert from_node(to_node(item)) == item


@settings(max_examples=30, deadline=None)
@given(st.lists(items, max_size=6))
def test_a_result_round_trips_with_unique_ids(batch: list[MemoryItem]) -> None:
    nodes = to_nodes(batch + batch)  # every id repeated at least once
    ids = [n.node.node_id for n in nodes]
    assert len(set(ids)) == len(ids)
    assert [from_node(n) for n in nodes] == batch + batch


def test_stamps_and_node_shape() -> None:
    item = MemoryItem("text", "vector", 0.75, {"source": "a.pdf", "page": 3}, id="c1")
    nws = to_node(item)
    node = nws.node
    assert isinstance(node, TextNode) and node.node_id == "c1" and nws.score == 0.75
    # metadata["source"] keeps meaning "the file": the backend name goes elsewhere
    assert node.metadata == {
        "source": "a.pdf",
        "page": 3,
        "agentkit_source": "vector",
        "agentkit_score": 0.75,
        "agentkit_id": "c1",
    }


def test_stamps_are_omitted_when_unset_and_id_is_a_stable_hash() -> None:
    a = to_node(MemoryItem("same", "s"))
    b = to_node(MemoryItem("same", "s"))
    c = to_node(MemoryItem("same", "other"))
    assert "agentkit_id" not in a.node.metadata and "agentkit_score" not in a.node.metadata
    assert a.score is None
    assert a.node.node_id == b.node.node_id != c.node.node_id


def test_stamps_are_hidden_from_llm_and_embedding_text() -> None:
    node = to_node(MemoryItem("body", "vector", 0.5, {"title": "T"}, id="x")).node
    for mode in (MetadataMode.LLM, MetadataMode.EMBED):
        text = node.get_content(metadata_mode=mode)
        assert "title: T" in text and "body" in text
        assert "agentkit" not in text


def test_nodes_are_fresh_on_every_call() -> None:
    item = MemoryItem("t", "s", 0.5, id="x")
    first, second = to_node(item), to_node(item)
    assert first is not second and first.node is not second.node
    first.score = 99.0  # what a fusion retriever does in place
    first.node.metadata["x"] = 1
    assert to_node(item).score == 0.5 and "x" not in to_node(item).node.metadata


@pytest.mark.parametrize("key", ["agentkit_source", "agentkit_foo"])
def test_reserved_keys_are_refused_by_name(key: str) -> None:
    with pytest.raises(ValueError, match=key):
        to_node(MemoryItem("t", "s", metadata={key: "x"}))


def test_foreign_nodes_keep_their_id_score_and_metadata() -> None:
    node = TextNode(text="hello", id_="n1", metadata={"source": "web", "score": 3})
    # stores hand back numpy floats; the item gets a plain float
    item = from_node(NodeWithScore(node=node, score=np.float32(0.25)))  # type: ignore[arg-type]
    assert item == MemoryItem("hello", "llamaindex", 0.25, {"source": "web", "score": 3}, id="n1")
    assert type(item.score) is float
    assert from_node(node, source="bm25").source == "bm25"
    assert from_node(NodeWithScore(node=node, score=float("nan"))).score is None


def test_read_back_precedence() -> None:
    nws = to_node(MemoryItem("t", "vector", 0.5, id="c1"))
    # stamps win over the source= argument and over the (overwritten) node score
    nws.score = 0.01
    back = from_node(nws, source="ignored")
    assert back.source == "vector" and back.score == 0.5 and back.id == "c1"
    # a node id someone changed wins over the agentkit_id copy
    nws.node.id_ = "renamed"
    assert from_node(nws).id == "renamed"
    # a node rebuilt from the metadata alone still says what it was
    rebuilt = TextNode(
        text="t", id_="c1", metadata=dict(to_node(MemoryItem("t", "v", id="c1")).node.metadata)
    )
    assert from_node(rebuilt) == MemoryItem("t", "v", id="c1")


def test_score_can_be_left_out_of_metadata_and_rides_on_the_node_score() -> None:
    item = MemoryItem("t", "s", 0.5, {"a": 1}, id="x")
    [nws] = to_nodes([item], include_score=False)
    assert "agentkit_score" not in nws.node.metadata and nws.score == 0.5
    assert from_node(nws) == item
    # Two queries scoring one record differently now give nodes of one hash.
    [other] = to_nodes([MemoryItem("t", "s", 0.9, {"a": 1}, id="x")], include_score=False)
    assert other.node.hash == nws.node.hash
