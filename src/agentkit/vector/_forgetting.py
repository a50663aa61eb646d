"""Argument checks for forgetting and enumerating, shared by every agentkit store.

One place, so ``delete_where({})`` or ``scan(limit=0)`` is refused with the same words
whichever store is behind the call.
"""

from __future__ import annotations

from typing import Any

from agentkit.kernel.errors import InvalidArgument, InvalidArgumentType
from agentkit.kernel.validate import check_metadata_where, check_unicode
from agentkit.kernel.where import Where, parse_where

# scan's page size when the caller does not choose one, and its ceiling.
SCAN_LIMIT = 1000
MAX_SCAN_LIMIT = 100_000


def check_forget_where(where: object) -> dict[str, Any]:
    """A non-empty ``where``: an empty filter matches everything, and wiping a whole
    scope must be asked for by name (``delete_scope``), never reached by a missing key.

    The same language and checks as search (``check_filter``): a filter that deletes
    is exactly the filter that finds."""
    checked = check_metadata_where(where)
    if not checked:
        raise InvalidArgument(
            "delete_where needs a non-empty where (it would match every record); "
            "use delete_scope to remove a whole scope"
        )
    return checked


def check_forget_filter(where: object) -> Where:
    """``check_forget_where``, parsed: what a store's ``delete_where`` evaluates or
    compiles, the same tree its search would."""
    tree = parse_where(check_forget_where(where))
    if tree is None:  # pragma: no cover - check_forget_where refused it already
        raise InvalidArgument("delete_where needs a non-empty where")
    return tree


def check_scan(
    where: object, after: object, limit: object
) -> tuple[dict[str, Any] | None, str | None, int]:
    """``scan``'s arguments: a ``where`` as search takes it, a str cursor, a page size."""
    checked = check_metadata_where(where)
    if after is not None:
        if not isinstance(after, str):
            raise InvalidArgumentType(f"after must be a str (a chunk id) or None, got "
                                      f"{type(after).__name__}")
        check_unicode(after, "after")
    return checked, after, _check_limit(limit)


def check_prefix(prefix: object, limit: object) -> tuple[str, int]:
    """``ids_with_prefix``'s arguments: a non-empty str (an empty prefix would name every
    record, which is never what a caller resolving a shortened id means), a page size."""
    if not isinstance(prefix, str):
        raise InvalidArgumentType(f"prefix must be a str, got {type(prefix).__name__}")
    if not prefix:
        raise InvalidArgument("prefix must be non-empty (an empty prefix matches every id)")
    check_unicode(prefix, "prefix")
    return prefix, _check_limit(limit)


def _check_limit(limit: object) -> int:
    if isinstance(limit, bool) or not isinstance(limit, int):
        raise InvalidArgumentType(f"limit must be an int, got {type(limit).__name__}")
    if not 1 <= limit <= MAX_SCAN_LIMIT:
        raise InvalidArgument(f"limit must be between 1 and {MAX_SCAN_LIMIT}, got {limit}")
    return limit
