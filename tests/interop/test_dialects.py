"""Filter dialects: chosen by the store's class, spelled as each store wants, never narrower."""

from __future__ import annotations

import os
from typing import Any

os.environ["ANONYMIZED_TELEMETRY"] = "False"

import pytest
from hypothesis import given
from hypothesis import strategies as st
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.vectorstores import InMemoryVectorStore

from agentkit.interop import DIALECTS, Condition, Dialect, conditions, dialect_for, in_scope
from agentkit.interop._dialects import merge_filter
from agentkit.kernel import Scope
from agentkit.vector.port import matches_where

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def test_the_dialect_is_chosen_by_the_stores_class() -> None:
    from langchain_chroma import Chroma
    from langchain_community.vectorstores import FAISS
    from langchain_postgres import PGVector
    from langchain_qdrant import QdrantVectorStore

    class Mine(InMemoryVectorStore):  # a subclass keeps its parent's dialect
        pass

    expected = {
        InMemoryVectorStore: "in_memory",
        Mine: "in_memory",
        Chroma: "chroma",
        QdrantVectorStore: "qdrant",
        FAISS: "faiss",
        PGVector: "pgvector",
    }
    for cls, name in expected.items():
        store = object.__new__(cls)  # the class is all the choice looks at
        chosen = dialect_for(store)
        assert chosen is not None and chosen.name == name
    assert dialect_for(object()) is None  # unknown: cannot filter, as far as we know
    assert dialect_for(object(), "chroma") is DIALECTS["chroma"]
    assert dialect_for(object(), "callable") is DIALECTS["in_memory"]
    assert dialect_for(InMemoryVectorStore(DeterministicFakeEmbedding(size=4)), "none") is None
    custom = Dialect("x", lambda conds: None)
    assert dialect_for(object(), custom) is custom
    with pytest.raises(ValueError, match="unknown filter_style 'sql'"):
        dialect_for(object(), "sql")


def test_chroma_spelling() -> None:
    build = DIALECTS["chroma"].build
    assert build([Condition("a", "eq", 1)]) == {"a": {"$eq": 1}}
    assert build([Condition("a", "eq", 1), Condition("b", "ne", "x")]) == {
        "$and": [{"a": {"$eq": 1}}, {"b": {"$ne": "x"}}]
    }
    # Chroma refuses a mixed-type $in: left to the re-check, not narrowed.
    assert build([Condition("a", "in", ("x", 1))]) is None
    assert build([]) is None


def test_qdrant_spelling() -> None:
    from qdrant_client import models

    built = DIALECTS["qdrant"].build(
        [Condition("s", "eq", "x"), Condition("n", "eq", 2), Condition("m", "ne", "1"),
         Condition("a.b", "eq", "dotted")]
    )
    assert isinstance(built, models.Filter)
    assert [c.key for c in built.must] == ["metadata.s", "metadata.n"]
    assert built.must[1].range == models.Range(gte=2, lte=2)  # 2 also finds a stored 2.0
    assert [c.key for c in built.must_not] == ["metadata.m"]


def test_faiss_and_pgvector_spellings() -> None:
    conds = [Condition("a", "eq", 1), Condition("m", "ne", "1"), Condition("l", "in", ("x",))]
    assert DIALECTS["faiss"].build(conds) == {"a": 1, "m": {"$neq": "1"}, "l": ["x"]}
    assert DIALECTS["faiss"].build([Condition("a", "eq", 1), Condition("a", "eq", 2)]) == {
        "$and": [{"a": 1}, {"a": 2}]
    }
    assert DIALECTS["faiss"].fetch_k
    assert DIALECTS["pgvector"].build([*conds, Condition("not-an-identifier", "eq", 1)]) == {
        "$and": [
            {"a": {"$eq": 1}},
            {"$or": [{"m": {"$exists": False}}, {"m": {"$ne": "1"}}]},
            {"l": {"$in": ["x"]}},
        ]
    }


_values = st.one_of(st.sampled_from(["en", "de", "", "1"]), st.integers(0, 2), st.booleans())
_meta = st.dictionaries(st.sampled_from(["lang", "n", "agentkit_scoped", "agentkit_org_id"]),
                        _values, max_size=4)
_where = st.dictionaries(st.sampled_from(["lang", "n"]),
                         _values | st.lists(_values, max_size=3), max_size=2)
_scope = st.sampled_from([Scope(), Scope("1"), Scope("en", "de")])


@given(_meta, _where, _scope)
def test_the_in_memory_filter_is_exactly_the_recheck(
    meta: dict[str, Any], where: dict[str, Any], scope: Scope
) -> None:
    conds = conditions(scope, where)
    if conds is None:
        assert any(isinstance(v, list) and not v for v in where.values())
        return
    keep = DIALECTS["in_memory"].build(conds)
    assert keep is not None
    doc = Document("t", metadata=meta)
    wanted = in_scope(meta, scope) and matches_where(meta, where)
    if wanted:  # never narrower than the re-check: a matching record always gets through
        assert keep(doc)
    if keep(doc):  # scalar where conditions are pushed exactly
        assert matches_where(meta, where)


def test_merging_keeps_the_retrievers_own_filter() -> None:
    conds = [Condition("lang", "eq", "de")]
    assert merge_filter(DIALECTS["chroma"], {"src": "a"}, conds) == {
        "$and": [{"src": "a"}, {"lang": {"$eq": "de"}}]
    }
    assert merge_filter(DIALECTS["chroma"], None, conds) == {"lang": {"$eq": "de"}}
    both = merge_filter(DIALECTS["faiss"], lambda meta: meta.get("src") == "a", conds)
    assert both({"src": "a", "lang": "de"}) and not both({"src": "b", "lang": "de"})
    assert not both({"src": "a", "lang": "en"})
    same = merge_filter(DIALECTS["in_memory"], lambda d: d.metadata.get("src") == "a", conds)
    assert same(Document("t", metadata={"src": "a", "lang": "de"}))
    assert not same(Document("t", metadata={"src": "b", "lang": "de"}))
    with pytest.raises(TypeError, match="must be callable"):
        merge_filter(DIALECTS["in_memory"], {"src": "a"}, conds)
    custom = Dialect("custom", DIALECTS["chroma"].build)
    assert merge_filter(custom, {"src": "a"}, conds) == {"src": "a"}  # kept, never dropped
