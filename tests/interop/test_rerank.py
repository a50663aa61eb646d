"""reranked_items: a framework reranker's answer mapped back to the original items."""

from __future__ import annotations

import math

import numpy as np
import pytest

from agentkit.interop import RERANK_KEY, Seen, reranked_items
from agentkit.state.memory import MemoryItem

ITEMS = [
    MemoryItem("alpha text", "vec", 0.9, {"n": 0}, id="a"),
    MemoryItem("beta text", "vec", 0.5, {"n": 1}, id="b"),
    MemoryItem("gamma text", "journal", None, {"n": 2}),
    MemoryItem("delta text", "vec", 0.1, {"n": 3}, id="d"),
]


class Doc:
    """A stand-in framework object: what a bridge hands over."""

    def __init__(self, text: str, key: str | None, slot: object, score: object = None) -> None:
        self.text, self.key, self.slot, self.score = text, key, slot, score

    def seen(self) -> Seen:
        return Seen(self, slot=self.slot, key=self.key, text=self.text, score=self.score)


def handed() -> list[Doc]:
    return [Doc(i.content, i.id, n) for n, i in enumerate(ITEMS)]


def test_the_originals_come_back_in_the_frameworks_order() -> None:
    docs = handed()
    out = reranked_items(ITEMS, [d.seen() for d in docs], [docs[3].seen(), docs[0].seen()], k=4)
    assert out == [ITEMS[3], ITEMS[0]]
    assert out[0] is ITEMS[3] and out[1] is ITEMS[0]  # the very objects, not copies


def test_rebuilt_objects_are_matched_by_slot_even_with_new_id_and_text() -> None:
    docs = handed()
    rebuilt = [Doc("summary by an LLM", "new-uuid", 2).seen(), Doc("x", None, 1).seen()]
    assert reranked_items(ITEMS, [d.seen() for d in docs], rebuilt, k=4) == [ITEMS[2], ITEMS[1]]


def test_without_a_slot_identity_then_id_then_text_find_the_item() -> None:
    docs = handed()
    returned = [
        Seen(docs[1]),  # the very object, nothing readable on it
        Doc("changed", "d", None).seen(),  # id kept, text rewritten
        Doc("gamma text", None, None).seen(),  # id and metadata dropped, text kept
    ]
    out = reranked_items(ITEMS, [d.seen() for d in docs], returned, k=4)
    assert out == [ITEMS[1], ITEMS[3], ITEMS[2]]


def test_duplicates_and_strangers_are_skipped_and_k_counts_items_kept() -> None:
    docs = handed()
    returned = [
        docs[2].seen(),
        docs[2].seen(),  # the same node twice
        Doc("gamma text", None, None).seen(),  # a copy of an item already claimed
        Doc("made up", "zzz", None).seen(),  # matches nothing
        Doc("alpha text", "a", 99).seen(),  # slot out of range: falls back to id
        Doc("beta text", "b", True).seen(),  # a bool is not a slot
        docs[3].seen(),
    ]
    out = reranked_items(ITEMS, [d.seen() for d in docs], returned, k=3)
    assert out == [ITEMS[2], ITEMS[0], ITEMS[1]]


def test_equal_text_or_ids_map_to_distinct_items_in_order() -> None:
    twins = [MemoryItem("same", "x", 0.1, id="i"), MemoryItem("same", "y", 0.2, id="i")]
    given = [Doc("same", "i", None), Doc("same", "i", None)]
    returned = [Doc("same", "i", None).seen() for _ in range(3)]
    out = reranked_items(twins, [d.seen() for d in given], returned, k=5)
    assert out == twins and out[0] is twins[0] and out[1] is twins[1]


def test_score_changes_only_where_the_framework_set_one() -> None:
    items = [MemoryItem("t0", "s", 0.9, {"relevance_score": 0.3}, id="x"), ITEMS[1], ITEMS[2]]
    # Item 0's framework object already carried 0.3 before the rerank (copied from
    # its metadata), so 0.3 coming back is not a verdict; item 1 gets none; item 2
    # gets a numpy float, which becomes a plain float.
    given = [Doc("t0", "x", 0, 0.3), Doc("beta text", "b", 1), Doc("gamma text", None, 2)]
    returned = [
        Doc("t0", "x", 0, 0.3).seen(),
        Doc("beta text", "b", 1, math.nan).seen(),
        Doc("gamma text", None, 2, np.float32(0.25)).seen(),
    ]
    out = reranked_items(items, [d.seen() for d in given], returned, k=3)
    assert out[0] is items[0] and out[1] is items[1]
    assert out[2].score == 0.25 and type(out[2].score) is float
    assert (out[2].content, out[2].source, out[2].id, dict(out[2].metadata)) == (
        "gamma text",
        "journal",
        None,
        {"n": 2},
    )
    changed = reranked_items(items, [d.seen() for d in given], [Doc("t0", "x", 0, 2).seen()], k=1)
    assert changed[0].score == 2.0 and changed[0].metadata == items[0].metadata


def test_validation() -> None:
    docs = handed()
    with pytest.raises(ValueError):
        reranked_items(ITEMS, [d.seen() for d in docs], [], k=0)
    with pytest.raises(ValueError, match="handed"):
        reranked_items(ITEMS, [d.seen() for d in docs[:2]], [], k=1)
    assert reranked_items([], [], [Doc("x", None, 0).seen()], k=3) == []


def test_the_slot_key_is_in_the_reserved_namespace() -> None:
    assert RERANK_KEY.startswith("agentkit_")
