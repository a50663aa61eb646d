"""Filter dialects: one small function per LangChain store, from conditions to its filter.

A search through a port asks for a scope and a ``where``; each store spells "metadata
key equals value" its own way (Chroma wants ``$and`` around two keys, langchain-qdrant
a ``models.Filter``, FAISS filters after its top ``fetch_k``). The port turns the
request into :class:`Condition` objects (:func:`conditions`) and the store's
:class:`Dialect` turns those into the store's own filter. A condition a dialect cannot
spell exactly is left out, never approximated narrower: the pushed filter may only
let through *more* than asked, because every hit is re-checked on the way out.

The dialect is chosen from the store's class by module and class name (so nothing here
imports a framework; Qdrant's ``models`` is imported only when a Qdrant filter is
built), and the user may name or pass one. No dialect means the store cannot filter:
the port refuses scoped use (see ``refuse_unfiltered``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, NoReturn

from agentkit.interop._reserved import check_where_unreserved
from agentkit.interop._tenancy import (
    DOMAIN_KEY,
    ORG_KEY,
    SCOPED_KEY,
    SCOPED_VALUE,
    is_unscoped,
)
from agentkit.kernel.ctx import Scope
from agentkit.kernel.errors import InvalidArgument, InvalidArgumentType, UnsupportedOperation
from agentkit.kernel.where import And, Field, Not, Or, Where, parse_where
from agentkit.vector.port import matches_where

__all__ = [
    "DIALECTS",
    "Condition",
    "Dialect",
    "chroma_filter",
    "conditions",
    "dialect_for",
    "faiss_filter",
    "flat_filter",
    "in_memory_filter",
    "merge_filter",
    "pgvector_filter",
    "qdrant_filter",
    "scope_conditions",
    "where_conditions",
]

Op = Literal["eq", "in", "ne", "where"]
_SCALARS = (str, int, float, bool)
_ANY_OF = (list, tuple, set, frozenset)


@dataclass(frozen=True, slots=True)
class Condition:
    """One metadata test: ``eq`` (key present and equal), ``in`` (present and equal to
    one of ``value``, a tuple), ``ne`` (absent, or present and not equal), or ``where``:
    ``value`` is a parsed filter with operators (``agentkit.kernel.where``), which a
    dialect states exactly in the store's own filter or refuses (UnsupportedOperation
    naming the operator and the store): never dropped, never loosened."""

    key: str
    op: Op
    value: Any


def conditions(scope: Scope, where: Mapping[str, Any] | None) -> list[Condition] | None:
    """The conditions a port's search of ``scope`` with ``where`` asks for.

    None when ``where`` can match nothing (an empty any-of), so the caller can skip the
    store. ``where`` values no store filter can carry (None, dicts, lists of
    non-scalars) are left to the re-check.
    """
    wanted = where_conditions(where)
    return None if wanted is None else [*scope_conditions(scope), *wanted]


def scope_conditions(scope: Scope) -> list[Condition]:
    """The records of ``scope``'s bucket: its stamp, or for the unscoped bucket no
    scoped marker (absent counts, so a user's own records are in)."""
    if is_unscoped(scope):
        return [Condition(SCOPED_KEY, "ne", SCOPED_VALUE)]
    return [
        Condition(ORG_KEY, "eq", scope.org_id or ""),
        Condition(DOMAIN_KEY, "eq", scope.domain_id or ""),
    ]


def where_conditions(where: Mapping[str, Any] | None) -> list[Condition] | None:
    """``where`` as conditions (None: it matches nothing); see ``conditions``.

    Plain equality and any-of entries become ``eq``/``in`` conditions, as they always
    did; every entry with operators (an operator dict, ``$and``, ``$or``, ``$not``)
    becomes one ``where`` condition holding its parsed tree.
    """
    check_where_unreserved(where)
    out: list[Condition] = []
    for key, value in (where or {}).items():
        if key.startswith("$") or isinstance(value, Mapping):
            tree = parse_where({key: value})
            folded = normal(tree) if tree is not None else True
            if folded is False:
                return None
            if folded is not True:
                out.append(Condition(key, "where", folded))
            continue
        if isinstance(value, _ANY_OF):
            values = tuple(value)
            if not values:
                return None
            if all(_is_scalar(v) for v in values):
                out.append(Condition(key, "in", values))
        elif _is_scalar(value):
            out.append(Condition(key, "eq", value))
    return out


@dataclass(frozen=True, slots=True)
class Dialect:
    """How one kind of store filters, and the search facts a port must work around.

    ``build`` turns conditions into the store's ``filter=`` value (None: nothing to
    push). ``fetch_k``: the store filters only its top ``fetch_k`` candidates (FAISS),
    so a search passes ``fetch_k`` and a short answer does not mean "no more", only
    reaching ``size(store)`` does. ``approximate``: a search, filtered or not, may
    return fewer records than match (Chroma's HNSW walk, worst among near-identical
    vectors), so a short answer is checked against an exact metadata read before it
    counts as "no more". How the store keeps record ids is not the dialect's
    business: that is the store's ``IdConvention`` (``agentkit.interop``), which
    stays whatever filter a port is given.
    """

    name: str
    build: Callable[[Sequence[Condition]], Any]
    fetch_k: bool = False
    size: Callable[[Any], int | None] | None = None
    approximate: bool = False


# --- one builder per store ---------------------------------------------------------


def in_memory_filter(conds: Sequence[Condition]) -> Callable[[Any], bool] | None:
    """LangChain ``InMemoryVectorStore``: a callable on the Document; exact for all ops.

    The store calls it once per record on every search, so string equality (the scope
    stamps, most ``where`` values) is a plain ``dict.get`` comparison; the rest goes
    through the shared ``where`` rule.
    """
    if not conds:
        return None
    plain = tuple((c.key, c.value, c.op == "eq") for c in conds if _plain(c))
    other = tuple(c for c in conds if not _plain(c))

    def keep(doc: Any) -> bool:
        meta = doc.metadata
        for key, value, equal in plain:
            if bool(meta.get(key) == value) is not equal:
                return False
        return all(_holds(meta, cond) for cond in other) if other else True

    return keep


def chroma_filter(conds: Sequence[Condition]) -> dict[str, Any] | None:
    """Chroma: ``{"k": {"$op": v}}``, several under ``$and`` (a flat dict is refused).

    ``$in`` needs one value type; ``$ne`` also matches records without the key.
    """
    clauses: list[dict[str, Any]] = []
    for cond in conds:
        if cond.op == "where":
            clauses.append(_chroma_tree(cond.value))
            continue
        if cond.key.startswith("$"):
            continue
        if cond.op == "in":
            if _one_type(cond.value):
                clauses.append({cond.key: {"$in": list(cond.value)}})
        else:
            clauses.append({cond.key: {"$eq" if cond.op == "eq" else "$ne": cond.value}})
    return _and(clauses)


def faiss_filter(conds: Sequence[Condition]) -> dict[str, Any] | Callable[[Any], bool] | None:
    """FAISS (langchain-community): its Python-side dict filter, applied after
    ``fetch_k``. Flat ``{key: value}`` (a list is any-of) is its fastest form, so a key
    goes under ``$and`` only when it repeats. ``$neq`` compares ``metadata.get(key)``,
    so absent passes."""
    if any(c.op == "where" for c in conds):
        # Its dict filter has no exact "not" for a missing key, but FAISS takes a
        # callable: every condition, operators included, judged by agentkit's rule.
        tests = tuple(conds)
        return lambda meta: all(_holds(meta, cond) for cond in tests)
    flat: dict[str, Any] = {}
    extra: list[dict[str, Any]] = []
    for cond in conds:
        if cond.key.startswith("$"):
            continue
        if cond.op == "eq":
            value: Any = cond.value
        elif cond.op == "in":
            value = list(cond.value)
        else:
            value = {"$neq": cond.value}
        if cond.key in flat:
            extra.append({cond.key: value})
        else:
            flat[cond.key] = value
    if not flat:
        return None
    return {"$and": [flat, *extra]} if extra else flat


def pgvector_filter(conds: Sequence[Condition]) -> dict[str, Any] | None:
    """PGVector (langchain-postgres): JSONB operators under ``$and``.

    Field names must be identifiers. ``$in`` compares as text, so only all-str lists
    are pushed; ``$ne`` on a missing key is not true in SQL, hence ``$exists``.
    """
    clauses: list[dict[str, Any]] = []
    for cond in conds:
        if cond.op == "where":
            clauses.append(_pgvector_tree(cond.value))
            continue
        key = cond.key
        if not key.isidentifier():
            continue
        if cond.op == "eq":
            clauses.append({key: {"$eq": cond.value}})
        elif cond.op == "in":
            if all(isinstance(v, str) for v in cond.value):
                clauses.append({key: {"$in": list(cond.value)}})
        else:
            clauses.append(
                {"$or": [{key: {"$exists": False}}, {key: {"$ne": cond.value}}]}
            )
    return _and(clauses)


def qdrant_filter(conds: Sequence[Condition]) -> Any:
    """langchain-qdrant: a ``models.Filter`` on ``metadata.<key>`` payload paths.

    Strings and bools match exactly; numbers as a one-point ``Range`` (so ``1`` finds a
    stored ``1.0``, as the re-check would); any-of only for strings. Keys that Qdrant
    would read as a path (dots, brackets, quotes) are left to the re-check.
    """
    from qdrant_client import models

    must: list[Any] = []
    must_not: list[Any] = []
    for cond in conds:
        if cond.op == "where":
            must.append(_qdrant_tree(cond.value))
            continue
        if any(ch in cond.key for ch in '.[]"') or not cond.key:
            continue
        path = f"metadata.{cond.key}"
        if cond.op == "in":
            if all(isinstance(v, str) for v in cond.value):
                must.append(
                    models.FieldCondition(key=path, match=models.MatchAny(any=list(cond.value)))
                )
            continue
        value = cond.value
        if isinstance(value, (str, bool)):
            test = models.FieldCondition(key=path, match=models.MatchValue(value=value))
        else:
            test = models.FieldCondition(key=path, range=models.Range(gte=value, lte=value))
        (must if cond.op == "eq" else must_not).append(test)
    if not must and not must_not:
        return None
    return models.Filter(must=must or None, must_not=must_not or None)


def flat_filter(conds: Sequence[Condition]) -> dict[str, Any] | None:
    """A flat ``{key: value}`` equality dict: what many stores take for simple filters
    (``filter_style="dict"``). Only ``eq`` conditions, each key once."""
    out: dict[str, Any] = {}
    for cond in conds:
        if cond.op == "where":
            _refuse(_first_op(cond.value), "a flat equality filter (filter_style='dict' or a "
                    "filter-building function)", "it states equality only")
        if cond.op == "eq" and cond.key not in out and not cond.key.startswith("$"):
            out[cond.key] = cond.value
    return out or None


def _faiss_size(store: Any) -> int | None:
    ntotal = getattr(getattr(store, "index", None), "ntotal", None)
    return int(ntotal) if isinstance(ntotal, int) else None


DIALECTS: dict[str, Dialect] = {
    "in_memory": Dialect("in_memory", in_memory_filter),
    "chroma": Dialect("chroma", chroma_filter, approximate=True),
    "qdrant": Dialect("qdrant", qdrant_filter),
    "faiss": Dialect("faiss", faiss_filter, fetch_k=True, size=_faiss_size),
    "pgvector": Dialect("pgvector", pgvector_filter),
    "dict": Dialect("dict", flat_filter),
}
"""The built-in dialects by name, for ``filter_style=``/``dialect_for``."""

# (top-level package, class name) -> dialect; matched along the store's MRO, so a
# subclass of a known store keeps its dialect.
_BY_CLASS: dict[tuple[str, str], str] = {
    ("langchain_core", "InMemoryVectorStore"): "in_memory",
    ("langchain_chroma", "Chroma"): "chroma",
    ("langchain_qdrant", "QdrantVectorStore"): "qdrant",
    ("langchain_community", "FAISS"): "faiss",
    ("langchain_postgres", "PGVector"): "pgvector",
}
_ALIASES = {"callable": "in_memory", "inmemory": "in_memory", "postgres": "pgvector"}


def dialect_for(
    store: object, choice: str | Dialect | Callable[[dict[str, Any]], Any] = "auto"
) -> Dialect | None:
    """The dialect for ``store``: ``"auto"`` (by its class), a name from
    ``DIALECTS``, ``"none"`` (cannot filter), a ``Dialect``, or a function
    from an equality dict ``{key: value}`` to the store's filter (only equality
    conditions reach it). None means the store cannot filter.
    """
    if isinstance(choice, Dialect):
        return choice
    if isinstance(choice, str):
        if choice == "auto":
            for cls in type(store).__mro__:
                package = cls.__module__.partition(".")[0]
                name = _BY_CLASS.get((package, cls.__name__))
                if name is not None:
                    return DIALECTS[name]
            return None
        if choice == "none":
            return None
        name = _ALIASES.get(choice, choice)
        if name in DIALECTS:
            return DIALECTS[name]
        raise InvalidArgument(
            f"unknown filter_style {choice!r}; expected 'auto', 'none', one of "
            f"{sorted(DIALECTS)!r}, a Dialect or a callable"
        )
    if callable(choice):
        user = choice

        def build(conds: Sequence[Condition]) -> Any:
            equality = flat_filter(conds)
            return None if equality is None else user(equality)

        return Dialect("custom", build)
    raise InvalidArgumentType(
        f"filter_style must be a str, a Dialect or a callable, got {type(choice).__name__}"
    )


def merge_filter(dialect: Dialect, own: Any, conds: Sequence[Condition]) -> Any:
    """``own`` (a retriever's own ``filter``) AND ``conds``, in ``dialect``.

    Only ever narrows ``own``: a retriever's restrictions stay. When the two cannot be
    combined in the dialect (a custom one), ``own`` is kept and ``conds`` are left to
    the re-check.
    """
    ours = dialect.build(conds)
    if ours is None:
        return own
    if own is None:
        return ours
    name = dialect.name
    if name == "in_memory":
        if not callable(own):
            raise InvalidArgumentType(
                f"InMemoryVectorStore filter must be callable, got {type(own).__name__}"
            )
        return _both(own, ours)
    if name == "qdrant":
        from qdrant_client import models

        return models.Filter(must=[own, ours])
    if name == "faiss" and callable(ours) and isinstance(own, dict):
        return own  # a dict and a callable do not combine: the re-check applies ours
    if name == "faiss" and callable(own):
        tests = tuple(conds)
        return _both(own, lambda meta: all(_holds(meta, cond) for cond in tests))
    if name in ("chroma", "faiss", "pgvector") and isinstance(own, dict):
        return {"$and": [own, ours]}
    if name == "dict" and isinstance(own, dict) and not set(own) & set(ours):
        return {**own, **ours}
    return own


# --- helpers -------------------------------------------------------------------------


def _both(first: Callable[[Any], Any], second: Callable[[Any], Any]) -> Callable[[Any], bool]:
    def both(value: Any) -> bool:
        return bool(first(value)) and bool(second(value))

    return both



def _holds(meta: Mapping[str, Any], cond: Condition) -> bool:
    if cond.op == "where":
        return bool(cond.value.matches(meta))
    if cond.op == "eq":
        return matches_where(meta, {cond.key: cond.value})
    if cond.op == "in":
        return matches_where(meta, {cond.key: cond.value})
    return not matches_where(meta, {cond.key: cond.value})


def _plain(cond: Condition) -> bool:
    """An eq/ne on a str value: ``dict.get(key) == value`` is the whole rule (a missing
    key reads as None, which equals no str)."""
    return cond.op != "in" and type(cond.value) is str


def _is_scalar(value: object) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    return isinstance(value, _SCALARS)


def _one_type(values: Sequence[Any]) -> bool:
    kinds = {bool if isinstance(v, bool) else type(v) for v in values}
    return len(kinds) == 1


def _and(clauses: list[dict[str, Any]]) -> dict[str, Any] | None:
    if not clauses:
        return None
    if len(clauses) == 1:
        return clauses[0]
    return {"$and": clauses}


# --- operator filters, store by store ----------------------------------------------
#
# A ``where`` condition is stated exactly or refused: a store filter that let through
# less than asked would lose matches, and one that let through much more would turn a
# filtered search into a scan of the store behind the re-check. Each translator works
# on the tree ``normal`` gives: constants folded away and every ``$not`` pushed down to
# the leaves where a leaf has an exact negation ($eq/$ne, $in/$nin, $exists).


def normal(tree: Where) -> Where | bool:
    """``tree`` with empty any-ofs folded (True: matches everything, False: nothing)
    and ``Not`` pushed down to the leaves wherever an exact negation exists."""
    return _normal(tree, negate=False)


_FLIP = {"eq": "ne", "ne": "eq", "in": "nin", "nin": "in"}


def _normal(tree: Where, *, negate: bool) -> Where | bool:
    if isinstance(tree, Not):
        return _normal(tree.part, negate=not negate)
    if isinstance(tree, Field):
        if tree.op in ("in", "nin") and not tree.value:
            return (tree.op == "nin") != negate
        if not negate:
            return tree
        if tree.op in _FLIP:
            return Field(tree.key, _FLIP[tree.op], tree.value)  # type: ignore[arg-type]
        if tree.op == "exists":
            return Field(tree.key, "exists", not tree.value)
        return Not(tree)
    conjunction = isinstance(tree, And) != negate  # De Morgan under a negation
    parts: list[Where] = []
    for part in tree.parts:
        folded = _normal(part, negate=negate)
        if folded is (not conjunction):
            return not conjunction  # False in an AND, True in an OR decides it
        if folded is conjunction:
            continue  # True in an AND, False in an OR says nothing
        assert not isinstance(folded, bool)
        parts.append(folded)
    if not parts:
        return conjunction
    if len(parts) == 1:
        return parts[0]
    return And(tuple(parts)) if conjunction else Or(tuple(parts))


def _first_op(tree: Where) -> str:
    """The operator a refusal names: the tree's first, spelt as the user wrote it."""
    node = tree
    while not isinstance(node, Field):
        if isinstance(node, Not):
            return "$not"
        node = node.parts[0]
    return {"in": "$in", "nin": "$nin"}.get(node.op, f"${node.op}")


def _refuse(op: str, store: str, why: str) -> NoReturn:
    raise UnsupportedOperation(
        f"the where operator {op} cannot be stated exactly in {store}'s filter ({why}); "
        "a filter is never dropped or loosened, so this search is refused: filter on what "
        "this store can state, or use an agentkit store"
    )


def _spelt(op: str) -> str:
    return {"eq": "$eq", "ne": "$ne", "in": "$in", "nin": "$nin"}.get(op, f"${op}")


def _chroma_tree(tree: Where) -> dict[str, Any]:
    """Chroma: ``$eq $ne $gt $gte $lt $lte $in $nin`` on str/number/bool values (its
    ``$ne``/``$nin`` pass records without the key, as agentkit's do), ``$and``/``$or``
    of two or more. It has no ``$not``, ``$exists``, null values or string orderings."""
    if isinstance(tree, Not):
        _refuse("$not", "Chroma", f"it has no $not, and {_first_op(tree.part)} has no exact "
                "negation there")
    if isinstance(tree, (And, Or)):
        parts = [_chroma_tree(p) for p in tree.parts]
        return {"$and" if isinstance(tree, And) else "$or": parts}
    assert isinstance(tree, Field)
    op, key, value = tree.op, tree.key, tree.value
    if op == "exists":
        _refuse("$exists", "Chroma", "it has no $exists")
    values = value if op in ("in", "nin") else (value,)
    if any(v is None for v in values):
        _refuse(_spelt(op), "Chroma", "it keeps no null values to compare with")
    if op in ("gt", "gte", "lt", "lte"):
        if isinstance(value, str):
            _refuse(f"${op}", "Chroma", "it orders numbers only")
        return {key: {f"${op}": value}}
    if op in ("eq", "ne"):
        return {key: {_spelt(op): value}}
    groups: dict[type, list[Any]] = {}
    for v in values:  # Chroma's $in/$nin take one value type (int, float, ...) per list
        groups.setdefault(type(v), []).append(v)
    clauses = [{key: {_spelt(op): vs}} for vs in groups.values()]
    if len(clauses) == 1:
        return clauses[0]
    return {"$or" if op == "in" else "$and": clauses}


def _qdrant_tree(tree: Where) -> Any:
    """langchain-qdrant: a ``models.Filter`` over ``metadata.<key>``. Strings and bools
    match exactly, numbers as ranges (so ``1`` finds ``1.0``); ``must_not`` is an exact
    complement (a record without the key passes it). No null, ``$exists`` or string
    orderings: Qdrant's emptiness tests also count ``[]``, and its ranges are numeric."""
    from qdrant_client import models

    if isinstance(tree, Not):
        return models.Filter(must_not=[_qdrant_tree(tree.part)])
    if isinstance(tree, And):
        return models.Filter(must=[_qdrant_tree(p) for p in tree.parts])
    if isinstance(tree, Or):
        return models.Filter(should=[_qdrant_tree(p) for p in tree.parts])
    op, key, value = tree.op, tree.key, tree.value
    if not key or any(ch in key for ch in '.[]"'):
        _refuse(_spelt(op), "Qdrant", f"key {key!r} would be read as a payload path")
    if op == "exists":
        _refuse("$exists", "Qdrant", "its emptiness tests also count null and []")
    path = f"metadata.{key}"
    if op in ("gt", "gte", "lt", "lte"):
        if isinstance(value, str):
            _refuse(f"${op}", "Qdrant", "its ranges are numeric")
        return models.FieldCondition(key=path, range=models.Range(**{op: value}))
    values = value if op in ("in", "nin") else (value,)
    if any(v is None for v in values):
        _refuse(_spelt(op), "Qdrant", "null is matched only with [] alike")
    tests: list[Any] = []
    strings = [v for v in values if isinstance(v, str)]
    if strings:
        tests.append(models.FieldCondition(key=path, match=models.MatchAny(any=strings)))
    for v in values:
        if isinstance(v, bool):
            tests.append(models.FieldCondition(key=path, match=models.MatchValue(value=v)))
        elif not isinstance(v, str):
            tests.append(models.FieldCondition(key=path, range=models.Range(gte=v, lte=v)))
    one = tests[0] if len(tests) == 1 else models.Filter(should=tests)
    return models.Filter(must_not=[one]) if op in ("ne", "nin") else one


def _pgvector_tree(tree: Where) -> dict[str, Any]:
    """PGVector (langchain-postgres): JSON path comparisons, typed as agentkit's are
    (``true`` is not ``1``; a string is never ordered against a number), ``$exists``,
    ``$and``/``$or``. A negation is refused: its SQL ``NOT`` of a JSON-path test on a
    value of another type is unknown, not true, so ``$ne``/``$nin``/``$not`` would
    drop records; string orderings follow the database's collation, not code points;
    ``$in`` compares as text, so it is stated as equalities instead."""
    if isinstance(tree, Not):
        _refuse("$not", "PGVector", "SQL NOT of a JSON-path test of another type is unknown")
    if isinstance(tree, (And, Or)):
        return {"$and" if isinstance(tree, And) else "$or":
                [_pgvector_tree(p) for p in tree.parts]}
    op, key, value = tree.op, tree.key, tree.value
    if not key.isidentifier():
        _refuse(_spelt(op), "PGVector", f"key {key!r} is not an identifier")
    if op == "exists":
        return {key: {"$exists": value}}
    if op in ("ne", "nin"):
        _refuse(_spelt(op), "PGVector",
                "SQL NOT of a JSON-path test of another type is unknown")
    if op in ("gt", "gte", "lt", "lte"):
        if isinstance(value, str):
            _refuse(f"${op}", "PGVector", "it orders strings in the database's collation")
        return {key: {f"${op}": value}}
    values = value if op == "in" else (value,)
    clauses = [{key: {"$eq": v}} for v in values]
    return clauses[0] if len(clauses) == 1 else {"$or": clauses}
