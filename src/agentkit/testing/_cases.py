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


# The rule of agentkit.vector.matches_where, case by case. The operator language
# ($eq, $ne, $gt, $in, $exists, $and, $or, $not, ...) lands as more rows of this table:
# one WhereCase per operator, nothing else in either kit changes.
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
)
"""Every filter both kits check, with the exact records it selects. New filter syntax
(the operator language) lands as more rows here."""


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
