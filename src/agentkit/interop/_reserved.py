"""The metadata key space the bridges stamp into (``agentkit_*``), and its fast check.

Both bridges refuse an item whose metadata already uses a bridge key: overwriting it
would break the round trip silently. The check runs for every item of every
retrieve, and a store's records share a handful of key names, so the names found
clean are remembered: an item whose keys were all seen before passes in one set
comparison, at C speed, instead of a Python loop over its keys.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agentkit.kernel.errors import InvalidArgument, InvalidFilter
from agentkit.kernel.where import Field, Not, Where, parse_where

RESERVED_PREFIX = "agentkit_"
"""Every metadata key the bridges own starts with this; items may not use it."""
# A bound for key names that never repeat (ids used as keys): start over past it.
_KNOWN_CAP = 4096
_known: set[str] = set()

known_unreserved = _known.issuperset
"""True when every key of the given metadata was already found outside the reserved
space; False means "not known", and ``check_unreserved`` decides."""


def check_unreserved(metadata: Mapping[str, Any]) -> None:
    """Refuse metadata holding an ``agentkit_*`` key, naming the first one.

    Raises:
        InvalidArgument: A key starting ``agentkit_``.
    """
    for key in metadata:
        if key.startswith(RESERVED_PREFIX):
            raise InvalidArgument(
                f"metadata key {key!r} is reserved for the agentkit bridges (keys "
                f"starting {RESERVED_PREFIX!r}); rename it: overwriting it would break "
                "the round trip"
            )
    if len(_known) + len(metadata) > _KNOWN_CAP:
        _known.clear()
    _known.update(metadata)


def check_where_unreserved(where: Mapping[str, Any] | None) -> None:
    """Refuse a ``where`` that tests an ``agentkit_*`` key, naming it and its operator.

    No record a user wrote holds one (``check_unreserved``), so such a test could only
    be aimed at the tenancy stamps: a store's filter would read the real stamps while
    the re-check reads the user's metadata, and the two would disagree. Tenancy is
    outside the language, so it is refused outright.

    Raises:
        InvalidFilter: A test of a key starting ``agentkit_``.
    """
    if not where or not any(key.startswith((RESERVED_PREFIX, "$")) for key in where):
        return  # the usual case, without parsing the filter again
    tree = parse_where(where)
    if tree is not None:
        _walk(tree)


def _walk(tree: Where) -> None:
    if isinstance(tree, Field):
        if tree.key.startswith(RESERVED_PREFIX):
            op = {"in": "$in", "nin": "$nin"}.get(tree.op, f"${tree.op}")
            raise InvalidFilter(
                f"where tests {tree.key!r} with {op}: keys starting {RESERVED_PREFIX!r} are "
                "the bridges' tenancy stamps, which no filter may name (the scope is "
                "chosen by scope=, never by a filter)",
                key=tree.key,
                operator=op,
            )
        return
    if isinstance(tree, Not):
        _walk(tree.part)
        return
    for part in tree.parts:
        _walk(part)
