"""The data both kits share: scopes, the odd scope ids, the ``where`` table, argument shapes.

Kept apart from the test classes so a suite of one's own can reuse the same cases (a
third-party store's extra tests, a bench) without inheriting any test.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agentkit.kernel.ctx import Scope

ACME = Scope("acme", "support")
GLOBEX = Scope("globex", "support")
# Same organisation, another domain: a bucket of its own, however the ids are joined.
ACME_SALES = Scope("acme", "sales")
UNSCOPED = Scope()

# Scope ids that a separator, an escape, a pattern, case folding or Unicode
# normalisation could make meet; every (scope, record id) here is its own record.
_NFC, _NFD = unicodedata.normalize("NFC", "café"), unicodedata.normalize("NFD", "café")
# fmt: off
ODD_SCOPES: tuple[tuple[Scope, str], ...] = (
    (UNSCOPED, "x"),
    (Scope("a\x1fb", "c"), "x"), (Scope("a", "b\x1fc"), "x"), (Scope("a%1Fb", "c"), "x"),
    (Scope("a:b", "c"), "x"), (Scope("a", "b:c"), "x"), (Scope("a%3Ab", "c"), "x"),
    (Scope("a/b", "c"), "x"), (Scope("a", "b/c"), "x"), (Scope("a%2Fb", "c"), "x"),
    (Scope("a|b", "c"), "x"), (Scope("a", "b|c"), "x"),
    (Scope("a\x00b", "c"), "x"), (Scope("a", "b\x00c"), "x"),
    (Scope('q"1', "c"), "x"), (Scope("q'1", "c"), "x"), (Scope("q`1", "c"), "x"),
    (Scope("p%", "c"), "x"), (Scope("p%25", "c"), "x"), (Scope("pq", "c"), "x"),
    (Scope("p_", "c"), "x"), (Scope("p*", "c"), "x"), (Scope("p.*", "c"), "x"),
    (Scope("Org", "c"), "x"), (Scope("org", "c"), "x"), (Scope("ORG", "c"), "x"),
    (Scope(_NFC, "c"), "x"), (Scope(_NFD, "c"), "x"),
    (Scope("a"), "x"), (Scope(None, "a"), "x"), (Scope("a", "a"), "x"),
    (Scope("a", "b"), "c\x1fd"), (Scope("a", "b"), "c:d"), (Scope("a", "b"), "c/d"),
    (Scope("a", "b"), "c%3Ad"), (Scope("a", "b\x1fc"), "d"), (Scope("a", "b:c"), "d"),
    (Scope("a", "b/c"), "d"), (Scope("a", "b"), "x"),
)
# fmt: on
"""(scope, record id) pairs that a naive encoding would make meet; each is its own record.

Separators (``:``, ``/``, ``|``, U+001F) inside either id, their percent-escapes, NUL,
quotes, SQL and glob wildcards, case variants, NFC and NFD spellings of one word, half
scopes and the unscoped bucket."""
# One of each look-alike couple is rewritten, the other deleted; nobody else may move.
ODD_REWRITTEN = (1, 4, 12, 26, 28)
ODD_DELETED = (2, 5, 13, 27, 29)


@dataclass(frozen=True)
class WhereRecord:
    """One record of the ``where`` corpus: its key, its text, its tags."""

    key: str
    text: str
    metadata: Mapping[str, Any] = field(default_factory=dict)


# Thirty English records outrank the single German and French ones for the shared
# query, so a store that filters after its own top-N loses them: the table catches that.
WHERE_QUERY = "refund policy details"
WHERE_RECORDS: tuple[WhereRecord, ...] = (
    *(
        WhereRecord(f"en-{i:02d}", f"refund policy details {i}", {"lang": "en", "page": i % 5})
        for i in range(30)
    ),
    WhereRecord("de-1", "refund notes", {"lang": "de", "page": 1}),
    WhereRecord("fr-1", "policy notes", {"lang": "fr", "page": 1}),
    WhereRecord("bare", "refund policy details without tags"),
    WhereRecord("flag-bool", "refund policy flags", {"reviewed": True}),
    WhereRecord("flag-int", "refund policy flags too", {"reviewed": 1}),
)
"""The corpus the ``where`` cases select from (``WHERE_QUERY`` matches every record)."""


def _keys(pred: Any) -> frozenset[str]:
    return frozenset(r.key for r in WHERE_RECORDS if pred(dict(r.metadata)))


@dataclass(frozen=True)
class WhereCase:
    """A filter and the exact set of ``WHERE_RECORDS`` keys it must select."""

    name: str
    where: Mapping[str, Any]
    expected: frozenset[str]


def _same(got: Any, want: Any) -> bool:
    """JSON equality, written apart from agentkit's evaluator: a bool equals only a bool,
    numbers compare by value (``1 == 1.0``), a list or dict equals no scalar."""
    if isinstance(got, bool) or isinstance(want, bool):
        return isinstance(got, bool) and isinstance(want, bool) and got == want
    if isinstance(got, (int, float)) and isinstance(want, (int, float)):
        return got == want
    return type(got) is type(want) and got == want


def _num(m: Mapping[str, Any], key: str) -> float | None:
    """The key's value when it is a JSON number (not a bool), else None: orderings hold
    only between values of one kind."""
    v = m.get(key)
    return v if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _page(test: Any) -> frozenset[str]:
    return _keys(lambda m: (p := _num(m, "page")) is not None and test(p))


def _lang(test: Any) -> frozenset[str]:
    return _keys(lambda m: isinstance(m.get("lang"), str) and test(m["lang"]))


# The rule of agentkit.kernel.where (docs/filters.md), case by case. Each expected set
# comes from a plain predicate over WHERE_RECORDS, never from agentkit's evaluator.
WHERE_CASES: tuple[WhereCase, ...] = (
    WhereCase("one rare value", {"lang": "de"}, frozenset({"de-1"})),
    WhereCase("a list is any-of", {"lang": ["de", "fr"]}, frozenset({"de-1", "fr-1"})),
    WhereCase("a tuple is any-of", {"lang": ("de", "fr")}, frozenset({"de-1", "fr-1"})),
    WhereCase(
        "keys are and-ed",
        {"lang": "en", "page": 2},
        _keys(lambda m: m.get("lang") == "en" and m.get("page") == 2),
    ),
    WhereCase(
        "any-of beside equality",
        {"lang": ["en", "de"], "page": [1, 3]},
        _keys(lambda m: m.get("lang") in ("en", "de") and m.get("page") in (1, 3)),
    ),
    WhereCase("True is not 1", {"reviewed": True}, frozenset({"flag-bool"})),
    WhereCase("1 is not True", {"reviewed": 1}, frozenset({"flag-int"})),
    WhereCase("an unknown value matches nothing", {"lang": "xx"}, frozenset()),
    WhereCase("absence never matches", {"missing": "v"}, frozenset()),
    WhereCase("an empty any-of matches nothing", {"lang": []}, frozenset()),
    WhereCase("no filter is everything", {}, frozenset(r.key for r in WHERE_RECORDS)),
    # --- the operator language ---
    WhereCase("$eq", {"lang": {"$eq": "fr"}}, frozenset({"fr-1"})),
    WhereCase("$eq True is not 1", {"reviewed": {"$eq": True}}, frozenset({"flag-bool"})),
    WhereCase("$eq 1.0 is 1", {"page": {"$eq": 1.0}}, _page(lambda p: p == 1)),
    WhereCase(
        "$ne holds where the key is missing",
        {"lang": {"$ne": "en"}},
        _keys(lambda m: "lang" not in m or not _same(m["lang"], "en")),
    ),
    WhereCase("$gt", {"page": {"$gt": 2}}, _page(lambda p: p > 2)),
    WhereCase("$gte", {"page": {"$gte": 3}}, _page(lambda p: p >= 3)),
    WhereCase("$lt", {"page": {"$lt": 1}}, _page(lambda p: p < 1)),
    WhereCase("$lte", {"page": {"$lte": 1}}, _page(lambda p: p <= 1)),
    WhereCase("$gt and $lt on one key", {"page": {"$gt": 0, "$lt": 2}}, _page(lambda p: p == 1)),
    WhereCase("$lt on strings by code point", {"lang": {"$lt": "en"}}, _lang(lambda v: v < "en")),
    WhereCase("$gte on strings", {"lang": {"$gte": "e"}}, _lang(lambda v: v >= "e")),
    WhereCase("a number never orders a string", {"lang": {"$gt": 0}}, frozenset()),
    WhereCase("a string never orders a number", {"page": {"$gte": "0"}}, frozenset()),
    WhereCase("$in", {"lang": {"$in": ["de", "fr"]}}, frozenset({"de-1", "fr-1"})),
    WhereCase("$in [1] is not True", {"reviewed": {"$in": [1]}}, frozenset({"flag-int"})),
    WhereCase(
        "$nin holds where the key is missing",
        {"page": {"$nin": [0, 1, 2, 3]}},
        _keys(lambda m: "page" not in m or not any(_same(m["page"], v) for v in (0, 1, 2, 3))),
    ),
    WhereCase(
        "$exists true",
        {"reviewed": {"$exists": True}},
        _keys(lambda m: "reviewed" in m),
    ),
    WhereCase("$exists false", {"page": {"$exists": False}}, _keys(lambda m: "page" not in m)),
    WhereCase(
        "$and",
        {"$and": [{"lang": "en"}, {"page": {"$gte": 3}}]},
        _keys(lambda m: m.get("lang") == "en" and (_num(m, "page") or 0) >= 3),
    ),
    WhereCase(
        "$or",
        {"$or": [{"lang": "de"}, {"reviewed": True}]},
        frozenset({"de-1", "flag-bool"}),
    ),
    WhereCase(
        "$not includes records without its keys",
        {"$not": {"lang": "en"}},
        _keys(lambda m: m.get("lang") != "en"),
    ),
    WhereCase(
        "$or of $and and $not, beside a top-level $not",
        {
            "$or": [
                {"$and": [{"lang": "en"}, {"page": {"$gt": 3}}]},
                {"$not": {"page": {"$in": [0, 1, 2, 3, 4]}}},
            ],
            "$not": {"reviewed": {"$exists": True}},
        },
        _keys(
            lambda m: (
                (
                    (m.get("lang") == "en" and (_num(m, "page") or 0) > 3)
                    or not any(_same(m.get("page", ...), v) for v in range(5))
                )
                and "reviewed" not in m
            )
        ),
    ),
)
"""Every filter both kits check, with the exact records it selects: equality and any-of,
then one or more rows per operator of the ``where`` language, JSON-typed comparisons,
missing keys, and nested ``$and``/``$or``/``$not``."""


_NEGATED = {"$eq": "$ne", "$ne": "$eq", "$in": "$nin", "$nin": "$in", "$and": "$or", "$or": "$and"}


def _operators_in(where: Any) -> frozenset[str]:
    """The operators a filter uses, at any depth, spelled or implied: what a refusal may
    name. A plain value is ``$eq``, a plain list ``$in``, several entries of one mapping
    (keys, or operators on one key) an ``$and``: the language's own reading of them.
    Under ``$not`` their negations count too (``$ne`` for ``$eq``, ``$nin`` for ``$in``,
    ``$or`` for ``$and``): a translation may push a ``$not`` down that way."""
    found: set[str] = set()
    if isinstance(where, Mapping):
        if len(where) > 1:
            found.add("$and")
        for key, value in where.items():
            if isinstance(key, str) and key.startswith("$"):
                found.add(key)
            elif isinstance(value, (list, tuple, set, frozenset)):
                found.add("$in")
            elif not isinstance(value, Mapping):
                found.add("$eq")
            inner = _operators_in(value)
            found |= inner
            if key == "$not":
                found |= {_NEGATED[op] for op in inner if op in _NEGATED}
    elif isinstance(where, (list, tuple)):
        for value in where:
            found |= _operators_in(value)
    return frozenset(found)


def refused_operator(error: BaseException, case: WhereCase, *, allowed: bool) -> str:
    """Check a refusal of ``case`` against the contract (issue #26) and say what it was.

    A refusal is acceptable only where the kit subclass declares ``operators = False``
    (``allowed``) and it names an operator the case's filter uses; anything else fails
    the check. Returns ``"case name ($op)"`` for the skip that lists refusals."""
    where = f"where {case.name} {dict(case.where)}"
    assert allowed, f"{where} refused ({error}); declare operators = False if it cannot be"
    for op in sorted(_operators_in(case.where)):
        if re.search(rf"{re.escape(op)}(?![\w])", str(error)):
            return f"{case.name} ({op})"
    raise AssertionError(f"{where}: the refusal names none of its operators: {error}")


@dataclass(frozen=True)
class BadArgument:
    """A call shape every source or store must refuse with ``error``, naming ``names``.

    A value of the wrong type is a TypeError, a well-typed value out of range (``k=0``)
    a ValueError: what ``except`` clause catches it is part of the contract.
    """

    label: str
    overrides: Mapping[str, Any]
    names: str
    error: type[Exception]


BAD_QUERY_ARGUMENTS: tuple[BadArgument, ...] = (
    BadArgument("k=0", {"k": 0}, "k", ValueError),
    BadArgument("k=-1", {"k": -1}, "k", ValueError),
    BadArgument("k='3'", {"k": "3"}, "k", TypeError),
    BadArgument("k=True", {"k": True}, "k", TypeError),
    BadArgument("k=2.0", {"k": 2.0}, "k", TypeError),
    BadArgument("query=None", {"query": None}, "query", TypeError),
    BadArgument("query=b'bytes'", {"query": b"bytes"}, "query", TypeError),
    BadArgument("where as pairs", {"where": [("lang", "en")]}, "where", TypeError),
    BadArgument("where as text", {"where": "lang=en"}, "where", TypeError),
    BadArgument("where with an int key", {"where": {1: "x"}}, "where", TypeError),
)


def names(error: BaseException, argument: str) -> bool:
    """The error message names ``argument`` as a word (``k``, not the k of ``keys``)."""
    return re.search(rf"(?<![\w]){re.escape(argument)}(?![\w])", str(error)) is not None


def assert_scores(scores: Sequence[Any], *, ordered: bool = True) -> None:
    """Plain finite floats and, where ``ordered``, best first (higher is better)."""
    for score in scores:
        assert type(score) is float, f"score {score!r} is a {type(score).__name__}, not float"
        assert math.isfinite(score), f"score {score!r} is not finite"
    if ordered:
        assert list(scores) == sorted(scores, reverse=True), f"not best first: {list(scores)}"


def enough(found: int, wanted: int, recall: float) -> bool:
    """``found`` of ``wanted`` is what a search of the stated ``recall`` promises."""
    return found >= math.ceil(wanted * recall - 1e-9)
