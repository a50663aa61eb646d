"""The MemoryItem <-> Document mapping: nothing lost, nothing clobbered."""

from __future__ import annotations

import math

import pytest
from agentkit_langchain import from_document, to_document
from hypothesis import given
from hypothesis import strategies as st
from langchain_core.documents import Document

from agentkit.state.memory import MemoryItem


def test_item_fields_land_where_langchain_users_look() -> None:
    item = MemoryItem("text", "vector", 0.5, {"source": "a.md", "page": 3}, id="c1")
    doc = to_document(item)
    assert doc.page_content == "text"
    assert doc.id == "c1"
    # The document's own "source" (its file) is kept; the backend name goes elsewhere.
    assert doc.metadata == {
        "source": "a.md",
        "page": 3,
        "agentkit_source": "vector",
        "agentkit_score": 0.5,
        "agentkit_id": "c1",
    }


def test_missing_score_and_id_leave_no_stamp() -> None:
    doc = to_document(MemoryItem("t", "journal"))
    assert doc.metadata == {"agentkit_source": "journal"}
    assert doc.id is None


def test_to_document_builds_an_ordinary_document() -> None:
    item = MemoryItem("t", "s", 1.0, {"a": [1, 2]}, id="x")
    doc = to_document(item)
    assert doc == Document(page_content="t", metadata=dict(doc.metadata), id="x")
    doc.metadata["new"] = 1  # a fresh, mutable dict per call
    assert "new" not in item.metadata
    assert to_document(item).metadata is not doc.metadata


def test_score_can_be_left_out_for_equality_deduping_wrappers() -> None:
    item = MemoryItem("t", "s", 0.5, {"a": 1}, id="x")
    doc = to_document(item, include_score=False)
    assert "agentkit_score" not in doc.metadata
    # Two queries scoring one record differently now give equal documents.
    assert doc == to_document(MemoryItem("t", "s", 0.9, {"a": 1}, id="x"), include_score=False)
    assert from_document(doc) == MemoryItem("t", "s", None, {"a": 1}, id="x")


@pytest.mark.parametrize("key", ["agentkit_source", "agentkit_score", "agentkit_anything"])
def test_reserved_keys_are_refused_naming_the_key(key: str) -> None:
    with pytest.raises(ValueError, match=key):
        to_document(MemoryItem("t", "s", metadata={key: 1}))


def test_bridge_stamps_win_on_the_way_back() -> None:
    doc = Document(
        page_content="t",
        id="doc-id",
        metadata={
            "agentkit_source": "vector",
            "agentkit_score": 0.25,
            "agentkit_id": "other",
            "relevance_score": 0.9,
            "source": "a.md",
        },
    )
    item = from_document(doc, source="ignored")
    assert item.source == "vector"
    assert item.id == "doc-id"  # Document.id over agentkit_id
    assert item.score == 0.25  # agentkit_score over relevance_score
    assert dict(item.metadata) == {"relevance_score": 0.9, "source": "a.md"}


def test_agentkit_id_restores_an_id_a_compressor_dropped() -> None:
    doc = Document(page_content="t", metadata={"agentkit_source": "v", "agentkit_id": "c9"})
    assert from_document(doc).id == "c9"


def test_foreign_document_gets_adapter_name_and_framework_score() -> None:
    doc = Document(page_content="t", id="d", metadata={"relevance_score": 0.7, "source": "u"})
    item = from_document(doc)
    assert (item.source, item.id, item.score) == ("langchain", "d", 0.7)
    assert dict(item.metadata) == {"relevance_score": 0.7, "source": "u"}  # keys stay
    assert from_document(doc, source="bm25").source == "bm25"
    scored = from_document(Document(page_content="t", metadata={"score": 3}))
    assert scored.score == 3.0 and type(scored.score) is float
    unusable = Document(page_content="t", metadata={"score": "high", "relevance_score": math.nan})
    assert from_document(unusable).score is None


def test_numpy_scores_become_plain_floats() -> None:
    import numpy as np
    item = from_document(Document(page_content="t", metadata={"relevance_score": np.float32(0.5)}))
    assert type(item.score) is float and item.score == 0.5


json_leaf = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.text(max_size=8)
    | st.floats(allow_nan=False, allow_infinity=False)
)
json_value = st.recursive(
    json_leaf,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)
plain_key = st.text(min_size=0, max_size=10).filter(lambda k: not k.startswith("agentkit_"))
metadata = st.dictionaries(
    st.one_of(plain_key, st.sampled_from(["source", "score", "relevance_score", "id"])),
    json_value,
    max_size=5,
)
items = st.builds(
    MemoryItem,
    content=st.text(max_size=30),
    source=st.text(min_size=1, max_size=10),
    score=st.none() | st.floats(allow_nan=False, allow_infinity=False),
    metadata=metadata,
    id=st.none() | st.text(max_size=10),
)


@given(items)
def test_round_trip_is_exact(item: MemoryItem) -> None:
    assert from_document(to_document(item)) == item
    # Also when a reranker rebuilt the document and dropped Document.id.
    doc = to_document(item)
    rebuilt = Document(page_content=doc.page_content, metadata=dict(doc.metadata))
    assert from_document(rebuilt) == item
