"""Scope and ``where`` as LlamaIndex ``MetadataFilters``, store by store.

Every LlamaIndex store takes ``MetadataFilters``, but each spells them differently
underneath, and a pushed filter may only ever let through *more* than asked (every
hit is re-checked on the way out; a record the store filtered away is lost). So the
conditions of a search (``agentkit.interop.conditions``, shared with the LangChain
bridge) are pushed only where the store is known to evaluate them exactly:

* one flat AND list (the simple store rejects nested groups);
* values str, int or float (LlamaIndex refuses bool, dict and mixed lists);
* numbers: the simple store and Chroma compare by value (``1`` finds ``1.0``);
  Qdrant matches them exactly only as a one-point range; the Postgres store casts
  the column to float (an error on any non-numeric row), so numbers stay with the
  re-check there;
* "not equal" (how the unscoped bucket is selected) only where an absent key counts
  as not equal (the simple store, Chroma; Qdrant and Postgres drop such records);
* the Postgres store pastes keys and values into SQL text, so only identifier keys
  and strings without quotes or backslashes that do not read as numbers go there.

Anything else is left to the re-check (and the port widens its fetch for it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal, NoReturn

from llama_index.core.schema import QueryBundle
from llama_index.core.vector_stores.types import (
    BasePydanticVectorStore,
    FilterCondition,
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
)

from agentkit import interop
from agentkit.interop import Condition
from agentkit.kernel import Scope
from agentkit.kernel.errors import UnsupportedOperation
from agentkit.kernel.where import And, Field, Not, Or, Where

__all__ = [
    "Pushdown",
    "has_empty_any_of",
    "merge_filters",
    "pushdown",
    "query_bundle",
    "store_can_filter",
    "store_refuses_nul",
    "without_orderings",
]

# Stores that take no metadata filters at all (FaissMapVectorStore inherits the
# refusal). Matched by class name along the MRO, so nothing is imported.
_CANNOT_FILTER = frozenset({"FaissVectorStore"})


@dataclass(frozen=True, slots=True)
class _Spelling:
    numbers: Literal["eq", "range", "none"] = "none"
    ne_absent: bool = False  # NE also matches records without the key
    sql_text: bool = False  # keys and values are pasted into SQL text
    # How a where with operators is stated: nested groups with Chroma's operators,
    # Qdrant's (numbers as ranges, negations as NOT groups), one flat AND list, or not.
    operators: Literal["chroma", "qdrant", "flat", "none"] = "none"
    name: str = "this store"


_DEFAULT = _Spelling()
_SPELLINGS: dict[str, _Spelling] = {
    "SimpleVectorStore": _Spelling(
        numbers="eq", ne_absent=True, operators="flat", name="SimpleVectorStore"
    ),
    "ChromaVectorStore": _Spelling(
        numbers="eq", ne_absent=True, operators="chroma", name="ChromaVectorStore"
    ),
    "QdrantVectorStore": _Spelling(numbers="range", operators="qdrant", name="QdrantVectorStore"),
    "PGVectorStore": _Spelling(sql_text=True, name="PGVectorStore"),
}


def _class_names(store: object) -> list[str]:
    return [cls.__name__ for cls in type(store).__mro__]


def store_can_filter(store: BasePydanticVectorStore) -> bool:
    """Whether ``store`` honours ``MetadataFilters`` (the ports' tenancy rests on it).

    LlamaIndex stores filter unless known not to; ``can_filter=`` on the port
    overrides this either way.
    """
    return not (set(_class_names(store)) & _CANNOT_FILTER)


def store_refuses_nul(store: BasePydanticVectorStore) -> bool:
    """Whether ``store`` is PostgreSQL underneath, whose text and JSONB refuse NUL."""
    return _spelling(store).sql_text


def _spelling(store: BasePydanticVectorStore) -> _Spelling:
    for name in _class_names(store):
        if name in _SPELLINGS:
            return _SPELLINGS[name]
    return replace(_DEFAULT, name=type(store).__name__)  # a refusal names the store


def has_empty_any_of(where: Mapping[str, Any] | None) -> bool:
    """An empty any-of list matches nothing, so the backend need not be asked at all."""
    return bool(where) and any(
        isinstance(v, (list, tuple, set, frozenset)) and not v for v in (where or {}).values()
    )


def _number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _sql_safe(value: object) -> bool:
    if not isinstance(value, str) or "'" in value or "\\" in value or "\x00" in value:
        return False
    try:
        float(value)
    except ValueError:
        return True
    return False  # the Postgres store would compare it as a float


def _key_ok(key: str, spelling: _Spelling) -> bool:
    if not key or key.startswith("$"):
        return False
    return key.isidentifier() if spelling.sql_text else not any(ch in key for ch in '.[]"')


def _spell(
    cond: Condition, spelling: _Spelling
) -> list[MetadataFilter | MetadataFilters] | None:
    """``cond`` as filters the store evaluates exactly, or None if it cannot (a where
    with operators it cannot state exactly is refused instead: UnsupportedOperation)."""
    if cond.op == "where":
        if spelling.operators == "flat":  # one flat AND list: the simple store nests nothing
            return [_spell_field(leaf, spelling) for leaf in _flat_leaves(cond.value, spelling)]
        return [_spell_where(cond.value, spelling)]
    if not _key_ok(cond.key, spelling):
        return None
    key, value = cond.key, cond.value
    if cond.op == "in":
        values = list(value)
        if all(isinstance(v, str) for v in values):
            if spelling.sql_text and not all(_sql_safe(v) for v in values):
                return None
            return [MetadataFilter(key=key, value=values, operator=FilterOperator.IN)]
        kinds = {type(v) for v in values}
        if spelling.numbers == "eq" and len(kinds) == 1 and kinds <= {int, float}:
            return [MetadataFilter(key=key, value=values, operator=FilterOperator.IN)]
        return None
    if isinstance(value, str):
        if spelling.sql_text and not _sql_safe(value):
            return None
        if cond.op == "eq":
            return [MetadataFilter(key=key, value=value, operator=FilterOperator.EQ)]
        if spelling.ne_absent:
            return [MetadataFilter(key=key, value=value, operator=FilterOperator.NE)]
        return None
    if not _number(value) or cond.op != "eq":
        return None
    if spelling.numbers == "eq":
        return [MetadataFilter(key=key, value=value, operator=FilterOperator.EQ)]
    if spelling.numbers == "range":
        return [
            MetadataFilter(key=key, value=value, operator=FilterOperator.GTE),
            MetadataFilter(key=key, value=value, operator=FilterOperator.LTE),
        ]
    return None


@dataclass(frozen=True, slots=True)
class Pushdown:
    """What a search can hand the store: its filters (None: none), whether the scope
    reached the store, and whether every condition did (then no re-check can drop a
    hit, so the first fetch need not be wider than k). ``where_only`` is the same
    filter without the scope's conditions: for an unscoped search, a first pass
    that costs what the store's plain search costs (Chroma's "not equal" is a scan)."""

    filters: MetadataFilters | None
    scope_pushed: bool
    complete: bool
    where_only: MetadataFilters | None = None
    scope_in_filters: bool = False


def pushdown(
    store: BasePydanticVectorStore,
    scope: Scope | None,
    where: Mapping[str, Any] | None,
    *,
    can_filter: bool | None = None,
    orderings: bool = True,
) -> Pushdown | None:
    """The filters for a search of ``scope`` (None: no scope, a retriever's search)
    with ``where`` on ``store``; None when ``where`` can match nothing.

    ``orderings=False`` leaves the simple store's orderings to the caller's re-check
    (a caller that cannot ask again without them when they raise, see
    ``without_orderings``)."""
    if can_filter is None:
        can_filter = store_can_filter(store)
    conds = interop.conditions(scope if scope is not None else Scope(), where)
    if conds is None:
        return None
    if scope is None:  # drop the unscoped-bucket condition conditions() adds
        conds = [c for c in conds if c.key not in interop.STAMP_KEYS]
    where_keys = set(where or {})
    spelling = _spelling(store)
    filters: list[MetadataFilter | MetadataFilters] = []
    plain: list[MetadataFilter | MetadataFilters] = []
    scope_pushed = scope is not None
    complete = {c.key for c in conds} >= where_keys
    for cond in conds:
        # A store that takes no filters (FAISS) has every condition, operators too,
        # applied by the port's re-check while it reads the ranking to the end: exact,
        # as a plain where and delete_where/scan there are.
        spelled = _spell(cond, spelling) if can_filter else None
        if spelled is not None and not orderings and spelling.operators == "flat":
            unordered = [f for f in spelled if not _ordering(f)]
            if len(unordered) < len(spelled):
                complete = False
                spelled = unordered
        if spelled is None:
            complete = False
            if cond.key not in where_keys:
                scope_pushed = False
            continue
        filters.extend(spelled)
        if cond.key in where_keys:
            plain.extend(spelled)
    scope_in_filters = len(plain) < len(filters)
    return Pushdown(_and(filters), scope_pushed, complete, _and(plain), scope_in_filters)


# --- a where with operators, as nested MetadataFilters -----------------------------


def _refuse(tree: Where, spelling: _Spelling, why: str, op: str | None = None) -> NoReturn:
    name = op or _op_name(tree)
    raise UnsupportedOperation(
        f"the where operator {name} cannot be stated exactly in {spelling.name}'s "
        f"MetadataFilters ({why}); a filter is never dropped or loosened, so this search "
        "is refused: filter on what this store can state, or use an agentkit store"
    )


def _op_name(tree: Where) -> str:
    if isinstance(tree, Not):
        return "$not"
    if isinstance(tree, (And, Or)):
        return "$and" if isinstance(tree, And) else "$or"
    return {"in": "$in", "nin": "$nin"}.get(tree.op, f"${tree.op}")


_ORDERINGS = frozenset({FilterOperator.GT, FilterOperator.GTE, FilterOperator.LT,
                        FilterOperator.LTE})
_LI_ORDER = {
    "gt": FilterOperator.GT,
    "gte": FilterOperator.GTE,
    "lt": FilterOperator.LT,
    "lte": FilterOperator.LTE,
}


def _flat_leaves(tree: Where, spelling: _Spelling) -> list[Field]:
    """The tests of ``tree`` when it is one conjunction (nested ``$and`` flattened),
    which the simple store's one flat AND list states; anything else is refused."""
    if isinstance(tree, Field):
        return [tree]
    if isinstance(tree, And):
        return [leaf for part in tree.parts for leaf in _flat_leaves(part, spelling)]
    why = ("it has no exact negation of this test" if isinstance(tree, Not)
           else "it takes one flat AND list, no $or group beside the scope's tests")
    _refuse(tree, spelling, why)


def _spell_where(tree: Where, spelling: _Spelling) -> MetadataFilter | MetadataFilters:
    """``tree`` (after ``interop.normal``) stated exactly for ``spelling``'s store."""
    kind = spelling.operators
    if kind == "none":
        _refuse(tree, spelling, "agentkit does not know how this store reads operators")
    if isinstance(tree, Not):
        if kind != "qdrant":
            _refuse(tree, spelling, "it has no exact negation of this test")
        return MetadataFilters(filters=[_spell_where(tree.part, spelling)],
                               condition=FilterCondition.NOT)
    if isinstance(tree, (And, Or)):
        condition = FilterCondition.AND if isinstance(tree, And) else FilterCondition.OR
        return MetadataFilters(filters=[_spell_where(p, spelling) for p in tree.parts],
                               condition=condition)
    return _spell_field(tree, spelling)


def _spell_field(field: Field, spelling: _Spelling) -> MetadataFilter | MetadataFilters:
    kind, key, op, value = spelling.operators, field.key, field.op, field.value
    if not _key_ok(key, spelling):
        _refuse(field, spelling, f"key {key!r} would be read as a path")
    if op == "exists":
        _refuse(field, spelling, "LlamaIndex filters have no exact $exists")
    values = list(value) if op in ("in", "nin") else [value]
    for v in values:
        if v is None or isinstance(v, bool):
            _refuse(field, spelling, "a LlamaIndex MetadataFilter holds no bool or null")
    if op in _LI_ORDER:
        # The simple store compares with Python's < (code points for strings; a bool as
        # 0/1, which the re-check drops; a value of another type raises TypeError, and
        # then the port asks again without it: ``without_orderings``).
        if isinstance(value, str) and kind != "flat":
            _refuse(field, spelling, "it orders numbers only")
        return MetadataFilter(key=key, value=value, operator=_LI_ORDER[op])
    negated = op in ("ne", "nin")
    if kind == "flat":
        # Python's == there: True equals 1. Admitting a bool twin is only more than
        # asked (the re-check drops it); refusing one under != would lose records.
        if negated and any(not isinstance(v, str) and v in (0, 1) for v in values):
            _refuse(field, spelling, "it compares with ==, under which True equals 1")
        if len(values) == 1:
            operator = FilterOperator.NE if negated else FilterOperator.EQ
            return MetadataFilter(key=key, value=values[0], operator=operator)
        if len({type(v) for v in values}) > 1:
            if not all(isinstance(v, (int, float)) and float(v) == v for v in values):
                _refuse(field, spelling, "a LlamaIndex list holds one value type")
            values = [float(v) for v in values]  # == finds 2020 among 2020.0 alike
        operator = FilterOperator.NIN if negated else FilterOperator.IN
        return MetadataFilter(key=key, value=values, operator=operator)
    tests: list[MetadataFilter | MetadataFilters] = []
    if kind == "qdrant":
        strings = [v for v in values if isinstance(v, str)]
        if strings:
            tests.append(MetadataFilter(key=key, value=strings, operator=FilterOperator.IN))
        for v in values:
            if not isinstance(v, str):  # a one-point range: 1 finds 1.0
                tests.append(MetadataFilters(filters=[
                    MetadataFilter(key=key, value=v, operator=FilterOperator.GTE),
                    MetadataFilter(key=key, value=v, operator=FilterOperator.LTE),
                ]))
    else:
        groups: dict[type, list[Any]] = {}
        for v in values:  # Chroma's lists take one value type
            groups.setdefault(type(v), []).append(v)
        operator = FilterOperator.NIN if negated else FilterOperator.IN
        for group in groups.values():
            tests.append(MetadataFilter(key=key, value=group, operator=operator))
        if negated:
            return tests[0] if len(tests) == 1 else MetadataFilters(filters=tests)
    either = tests[0] if len(tests) == 1 else MetadataFilters(
        filters=tests, condition=FilterCondition.OR
    )
    if negated:  # Qdrant: NOT is must_not, an exact complement
        return MetadataFilters(filters=[either], condition=FilterCondition.NOT)
    return either


def without_orderings(filters: MetadataFilters | None) -> tuple[bool, MetadataFilters | None]:
    """``filters`` less their top-level orderings, and whether there were any.

    The simple store compares an ordering with Python's ``<``, which raises TypeError
    on a stored value of another type -- any node's, another tenant's too, since it
    evaluates every test on every node. The port then asks again without them and its
    re-check applies them: the answer is the same, and no error depends on what
    another scope stores.
    """
    if filters is None:
        return False, None
    kept = [f for f in filters.filters if not _ordering(f)]
    if len(kept) == len(filters.filters):
        return False, filters
    return True, MetadataFilters(filters=kept, condition=filters.condition) if kept else None


def _ordering(flt: MetadataFilter | MetadataFilters) -> bool:
    return isinstance(flt, MetadataFilter) and flt.operator in _ORDERINGS


def _and(filters: list[MetadataFilter | MetadataFilters]) -> MetadataFilters | None:
    return MetadataFilters(filters=filters, condition=FilterCondition.AND) if filters else None


def merge_filters(
    existing: MetadataFilters | None, extra: MetadataFilters | None
) -> tuple[MetadataFilters | None, bool]:
    """AND ``extra`` onto the user's filters, keeping one flat list.

    The simple vector store rejects nested groups, so an OR or nested user filter is
    kept as is and ``extra`` is not pushed (second value False): the user's own
    restriction always stands, ours is then applied by the re-check alone.
    """
    if extra is None or not extra.filters:
        return existing, True
    if existing is None or not existing.filters:
        return extra, True
    flat = all(isinstance(f, MetadataFilter) for f in existing.filters)
    if existing.condition not in (None, FilterCondition.AND) or not flat:
        return existing, False
    merged = MetadataFilters(
        filters=[*existing.filters, *extra.filters], condition=FilterCondition.AND
    )
    return merged, True


def query_bundle(query: str) -> QueryBundle:
    """A bundle that still gets embedded when the query is empty.

    LlamaIndex embeds nothing for ``""`` and its vector retriever then fails on a
    missing embedding; an empty query is a valid agentkit query, so embed it as is.
    """
    return QueryBundle(query_str=query, custom_embedding_strs=[query] if not query else None)
