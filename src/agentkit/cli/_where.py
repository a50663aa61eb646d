"""The two ways a user types a metadata filter on the command line.

``--where KEY=VALUE`` (repeatable: different keys must all match, a repeated key
matches any of its values; a value matches the text as typed or the number/true/
false/null it spells, so ``--where doc_id=7`` finds a BEIR ``"7"`` and an integer
``7`` alike) and ``--filter JSON``, the full ``where`` language
(``'{"year": {"$gte": 2020}, "$or": [{"topic": "a"}, {"topic": "b"}]}'``). Given
together, both must hold. A malformed filter is a usage error (exit 2) naming the key
and operator, raised before any store is opened.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from agentkit.cli._args import UsageError
from agentkit.kernel.errors import InvalidFilter
from agentkit.kernel.validate import check_metadata_where


def add_arguments(parser: argparse.ArgumentParser, verb: str) -> None:
    parser.add_argument(
        "--where", action="append", default=[], metavar="KEY=VALUE",
        help=f"{verb} the records whose metadata KEY equals VALUE (repeatable)",
    )
    parser.add_argument(
        "--filter", default=None, metavar="JSON", dest="filter_json",
        help=f"{verb} the records matching this where filter: a JSON object with "
        "$eq $ne $gt $gte $lt $lte $in $nin $exists $and $or $not",
    )


def from_args(args: argparse.Namespace) -> dict[str, Any] | None:
    """The run's filter (None: neither flag given), checked."""
    parts: list[dict[str, Any]] = []
    if args.where:
        parts.append(parse_where(args.where))
    if args.filter_json is not None:
        parts.append(parse_filter(args.filter_json))
    if not parts:
        return None
    return parts[0] if len(parts) == 1 else {"$and": parts}


def parse_filter(text: str) -> dict[str, Any]:
    """``--filter``'s JSON object, validated as a ``where``."""
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise UsageError(f"--filter takes a JSON object: {exc}") from exc
    if not isinstance(value, dict) or not value:
        raise UsageError(f"--filter takes a non-empty JSON object, got {text!r}")
    try:
        checked = check_metadata_where(value)
    except InvalidFilter as exc:
        raise UsageError(f"--filter: {exc}") from exc
    assert checked is not None
    return checked


def parse_where(pairs: list[str]) -> dict[str, Any]:
    """``KEY=VALUE`` pairs as a ``where``: keys AND-ed, a repeated key any-of."""
    where: dict[str, list[Any]] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise UsageError(f"--where takes KEY=VALUE, got {pair!r}")
        options = where.setdefault(key, [])
        for option in _spellings(value):
            if not any(_same(option, o) for o in options):
                options.append(option)
    return {key: options[0] if len(options) == 1 else options for key, options in where.items()}


def _spellings(value: str) -> list[Any]:
    """The text, and the JSON scalar it spells when it spells one (``7``, ``true``)."""
    try:
        parsed = json.loads(value)
    except ValueError:
        return [value]
    if parsed is None or isinstance(parsed, (bool, int, float)):
        return [value, parsed]
    return [value]


def _same(a: Any, b: Any) -> bool:
    return type(a) is type(b) and a == b
