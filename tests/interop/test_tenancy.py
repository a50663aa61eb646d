"""The tenancy codec: store ids no scope id can break, stamps, the unscoped bucket, widening."""

from __future__ import annotations

import unicodedata
import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentkit.interop import (
    CHUNK_KEY,
    DOMAIN_KEY,
    ID_PREFIX,
    KEYS_KEY,
    ORG_KEY,
    SCOPED_KEY,
    SELF_DESCRIBING,
    IdConvention,
    chunk_id_of,
    conditions,
    id_convention,
    in_scope,
    record_stamps,
    refuse_unfiltered,
    stamp,
    store_id,
    strip_stamps,
    widen,
)
from agentkit.kernel import Scope
from agentkit.kernel.errors import StoreError

# Characters that break naive encodings: separators, escapes, wildcards, quotes,
# NUL and other controls, the id prefix's own ":", case pairs, and a combining accent
# (so NFC and NFD spellings of one word both appear).
_TRICKY = ":%\x1f\x00\n/|_*'\"`.\\ aAbB\u00e9e\u0301\ud800"
_parts = st.text(alphabet=st.sampled_from(_TRICKY) | st.characters(), max_size=8)
_scopes = st.builds(
    Scope, st.none() | _parts, st.none() | _parts
)  # "" normalises to None: one bucket, as Scope itself says
_chunk_ids = st.text(alphabet=st.sampled_from(_TRICKY) | st.characters(), min_size=1, max_size=8)
_keys = st.tuples(_scopes, _chunk_ids)


def _bucket(scope: Scope) -> tuple[str | None, str | None]:
    return (scope.org_id, scope.domain_id)


@settings(max_examples=400)
@given(_keys, _keys, st.booleans())
def test_store_ids_are_injective(a: tuple[Scope, str], b: tuple[Scope, str], as_uuid: bool) -> None:
    (scope_a, id_a), (scope_b, id_b) = a, b
    same = _bucket(scope_a) == _bucket(scope_b) and id_a == id_b
    equal = store_id(scope_a, id_a, uuid=as_uuid) == store_id(scope_b, id_b, uuid=as_uuid)
    assert equal == same


def test_scopes_a_separator_could_make_meet_stay_apart() -> None:
    nfc, nfd = unicodedata.normalize("NFC", "café"), unicodedata.normalize("NFD", "café")
    pairs = [
        ((Scope("a\x1fb", "c"), "x"), (Scope("a", "b\x1fc"), "x")),
        ((Scope("a:b", "c"), "x"), (Scope("a", "b:c"), "x")),
        ((Scope("a", "b"), "c:d"), (Scope("a", "b:c"), "d")),
        ((Scope("a%3Ab", "c"), "x"), (Scope("a:b", "c"), "x")),
        ((Scope("p%", "c"), "x"), (Scope("p%25", "c"), "x")),
        ((Scope("Org", "c"), "x"), (Scope("org", "c"), "x")),
        ((Scope(nfc, "c"), "x"), (Scope(nfd, "c"), "x")),
        ((Scope("a"), "x"), (Scope(None, "a"), "x")),
        ((Scope("a\x00", "c"), "x"), (Scope("a", "\x00c"), "x")),
    ]
    for as_uuid in (False, True):
        for (sa, ia), (sb, ib) in pairs:
            assert store_id(sa, ia, uuid=as_uuid) != store_id(sb, ib, uuid=as_uuid)


@given(_keys)
def test_the_chunk_id_comes_back_from_what_the_store_holds(key: tuple[Scope, str]) -> None:
    scope, chunk_id = key
    for as_uuid in (False, True):
        sid = store_id(scope, chunk_id, uuid=as_uuid)
        metadata = {"lang": "en", **record_stamps(scope, chunk_id, sid)}
        assert chunk_id_of(sid, metadata) == chunk_id
        assert in_scope(metadata, scope)
        assert strip_stamps(metadata) == {"lang": "en"}
    # Even with the chunk key lost, the readable id decodes.
    assert chunk_id_of(store_id(scope, chunk_id), {}) == chunk_id


@given(_scopes, _scopes)
def test_a_record_is_in_exactly_its_own_bucket(mine: Scope, other: Scope) -> None:
    metadata = {"x": 1, **stamp(mine)}
    assert in_scope(metadata, mine)
    assert in_scope(metadata, other) == (_bucket(mine) == _bucket(other))


def test_scoped_ids_are_printable_and_free_of_nul() -> None:
    sid = store_id(Scope("a\x00b", "c\nd"), "e\x7f%:")
    assert sid.startswith(ID_PREFIX) and sid.isprintable() and "\x00" not in sid
    assert chunk_id_of(sid, {}) == "e\x7f%:"


def test_unscoped_records_keep_their_own_ids() -> None:
    unscoped = Scope()
    assert store_id(unscoped, "doc-1") == "doc-1"
    assert store_id(Scope("", ""), "doc-1") == "doc-1"
    assert record_stamps(unscoped, "doc-1", "doc-1") == {}  # looks like a user's own record
    assert stamp(unscoped) == {}
    # A user's record is the unscoped bucket; so is a legacy ("", "") stamp.
    assert in_scope({"source": "a.md"}, unscoped)
    assert in_scope({ORG_KEY: "", DOMAIN_KEY: ""}, unscoped)
    assert not in_scope({"source": "a.md"}, Scope("acme", "sales"))
    assert chunk_id_of("doc-1", {"source": "a.md"}) == "doc-1"


@settings(max_examples=200)
@given(_keys, st.dictionaries(st.text(max_size=6), st.integers() | st.text(max_size=4)))
def test_a_self_describing_record_reads_back_whatever_the_store_adds(
    key: tuple[Scope, str], own: dict[str, object]
) -> None:
    """On a store nobody knows: the chunk id travels in the record, and only the user's
    own keys come back, whatever the store drops (the id) or adds (its own keys, even
    one holding the very same value as one of the user's)."""
    scope, chunk_id = key
    sid = store_id(scope, chunk_id)
    stored = {**own, **record_stamps(scope, chunk_id, sid, own_keys=own.keys())}
    assert stored[CHUNK_KEY] == chunk_id  # even where the store id is the chunk id
    returned = {"id": sid, "_internal": 1, **stored}  # what such a store hands back
    assert chunk_id_of(None, returned) == chunk_id
    assert strip_stamps(returned) == own
    assert in_scope(returned, scope)


def test_a_mangled_key_list_keeps_every_key_rather_than_losing_the_users() -> None:
    for mangled in ("not json", '{"a": 1}', "[1, 2]", 7):
        assert strip_stamps({"a": 1, KEYS_KEY: mangled, CHUNK_KEY: "c"}) == {"a": 1}
    assert strip_stamps({"a": 1, "b": 2, KEYS_KEY: '["a"]'}) == {"a": 1}


def test_id_conventions_come_from_the_class_in_either_framework() -> None:
    from langchain_community.vectorstores import SKLearnVectorStore
    from langchain_core.vectorstores import InMemoryVectorStore
    from langchain_qdrant import QdrantVectorStore as LangChainQdrant
    from llama_index.core.vector_stores import SimpleVectorStore
    from llama_index.vector_stores.qdrant import QdrantVectorStore as LlamaIndexQdrant

    def of(cls: type) -> IdConvention:
        return id_convention(cls.__new__(cls))  # the class decides; no instance needed

    assert of(LangChainQdrant).uuid and of(LangChainQdrant).id_key == "_id"
    assert of(LlamaIndexQdrant).uuid and of(LlamaIndexQdrant).id_key is None
    assert of(InMemoryVectorStore).replaces and not of(InMemoryVectorStore).self_describing
    sklearn = of(SKLearnVectorStore)
    assert (sklearn.id_key, sklearn.added_keys, sklearn.replaces) == ("id", {"id"}, False)

    class Mine(InMemoryVectorStore):  # a subclass keeps its base's convention
        pass

    assert of(Mine) is of(InMemoryVectorStore)
    assert of(SimpleVectorStore) is SELF_DESCRIBING  # unknown here; the port passes its own
    plain = IdConvention("nodes")
    assert id_convention(SimpleVectorStore.__new__(SimpleVectorStore), plain) is plain


def test_an_unscoped_id_shaped_like_a_scoped_one_is_encoded() -> None:
    scoped = store_id(Scope("acme", "sales"), "1")
    assert scoped.startswith(ID_PREFIX)
    raw = store_id(Scope(), scoped)
    assert raw != scoped and raw.startswith(ID_PREFIX)
    assert record_stamps(Scope(), scoped, raw) == {CHUNK_KEY: scoped}
    assert chunk_id_of(raw, {}) == scoped


def test_uuid_mode_keeps_existing_uuids_and_hashes_everything_else() -> None:
    existing = str(uuid.uuid4())
    assert store_id(Scope(), existing, uuid=True) == existing  # a user's Qdrant point
    for sid in (
        store_id(Scope(), "doc-1", uuid=True),
        store_id(Scope(), existing.upper(), uuid=True),  # not as Qdrant spells it back
        store_id(Scope("acme", "sales"), existing, uuid=True),
    ):
        assert uuid.UUID(sid).version == 8 and str(uuid.UUID(sid)) == sid
    # A tenant's point id, read off the store, names another point when written unscoped.
    tenant = store_id(Scope("acme", "sales"), "1", uuid=True)
    assert store_id(Scope(), tenant, uuid=True) != tenant
    assert store_id(Scope("acme", "sales"), "1", uuid=True) == tenant  # stable


def test_stamps_carry_the_scoped_marker_and_unscoped_conditions_use_it() -> None:
    stamped = stamp(Scope("acme"))
    assert stamped == {ORG_KEY: "acme", DOMAIN_KEY: "", SCOPED_KEY: "1"}
    [cond] = conditions(Scope(), None) or []
    assert (cond.key, cond.op, cond.value) == (SCOPED_KEY, "ne", "1")
    assert conditions(Scope(), {"lang": []}) is None  # an empty any-of matches nothing


def test_a_store_that_cannot_filter_is_refused_only_for_scoped_use() -> None:
    refuse_unfiltered("SomeStore", Scope())
    with pytest.raises(StoreError, match="SomeStore cannot filter"):
        refuse_unfiltered("SomeStore", Scope("acme", "sales"))


async def test_widen_asks_again_wider_until_k_or_exhausted() -> None:
    ranked = [f"other-{i}" if i % 10 else f"mine-{i}" for i in range(100)]  # 10 of mine
    asked: list[int] = []

    async def fetch(n: int) -> list[str]:
        asked.append(n)
        return ranked[:n]

    def mine(x: str) -> bool:
        return x.startswith("mine")

    assert await widen(fetch, mine, 3, first=3) == ["mine-0", "mine-10", "mine-20"]
    assert asked == [3, 6, 12, 24]
    asked.clear()
    assert len(await widen(fetch, mine, 50, first=4)) == 10  # exhausted: all there is
    assert asked[-1] >= 100
    asked.clear()
    assert await widen(fetch, lambda x: True, 4, first=4) == ranked[:4]
    assert asked == [4]  # enough on the first pass: one pass


async def test_widen_with_a_total_does_not_stop_on_a_short_post_filtered_answer() -> None:
    records = [f"other-{i}" for i in range(60)] + ["mine-a", "mine-b"]
    asked: list[int] = []

    async def post_filtered(n: int) -> list[str]:  # FAISS: filters its top n candidates
        asked.append(n)
        return [r for r in records[:n] if r.startswith("mine")]

    found = await widen(post_filtered, lambda r: True, 2, first=20, total=len(records))
    assert found == ["mine-a", "mine-b"]
    assert asked == [20, 40, 62]
