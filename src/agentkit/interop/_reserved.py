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

from agentkit.kernel.errors import InvalidArgument

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
