"""Argument checks shared by every source, store and bridge, run before anything is touched.

They live in the kernel so that agentkit.vector and the bridges can share them
without importing agentkit.state.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping, Sequence
from typing import Any

from agentkit.kernel.ctx import Ctx, Scope
from agentkit.kernel.errors import InvalidArgument, InvalidArgumentType
from agentkit.kernel.where import Where, parse_where


def check_k(k: object) -> int:
    """``k`` must be a real int (not a bool) and at least 1."""
    if isinstance(k, bool) or not isinstance(k, int):
        raise InvalidArgumentType(f"k must be an int, got {type(k).__name__}")
    if k < 1:
        raise InvalidArgument(f"k must be >= 1, got {k}")
    return k


def check_exact(exact: object) -> bool:
    """A store's ``exact=`` must be a real bool."""
    if not isinstance(exact, bool):
        raise InvalidArgumentType(f"exact must be a bool, got {type(exact).__name__}")
    return exact


def check_query(query: object) -> str:
    # Every retrieve through a bridge starts here: a plain ASCII str, the usual query,
    # is answered without the two calls the general check makes.
    if type(query) is str and query.isascii():
        return query
    if not isinstance(query, str):
        raise InvalidArgumentType(f"query must be a str, got {type(query).__name__}")
    check_unicode(query, "query")
    return query


def lone_surrogate(text: str) -> int | None:
    """Where ``text`` stops being encodable as UTF-8 (a lone surrogate), or None.

    Python strings may hold surrogate code points that no UTF-8 store, driver or file
    can take; they fail deep inside a driver as a bare UnicodeEncodeError, often after
    part of a batch was sent. ASCII, the common case, is answered without encoding.
    """
    if text.isascii():
        return None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return exc.start
    return None


def check_unicode(text: str, what: str) -> None:
    """Refuse a str holding a lone surrogate, naming ``what`` and the position."""
    at = lone_surrogate(text)
    if at is not None:
        raise InvalidArgument(
            f"{what} holds a lone surrogate {text[at]!r} at position {at}; "
            "it is not valid Unicode text and cannot be stored or searched"
        )


_CONTAINERS = (Mapping, list, tuple, set, frozenset)


def _needs_look(value: object) -> bool:
    """False for what cannot hold a lone surrogate: ASCII text, numbers, None, ..."""
    if isinstance(value, str):
        return not value.isascii()
    return isinstance(value, _CONTAINERS)


_SCALARS = frozenset({int, float, bool, type(None)})


def _plainly_clean(flat: dict[Any, Any]) -> bool:
    """True when every key and value is ASCII text or a plain scalar: the usual metadata,
    answered in one loop without the walk. Anything else (nested values, other text) is
    left to the walk, which alone decides what is wrong."""
    for key, sub in flat.items():
        if type(key) is str:
            if not key.isascii():
                return False
        elif type(key) not in _SCALARS:
            return False
        kind = type(sub)
        if kind is str:
            if not sub.isascii():
                return False
        elif kind not in _SCALARS:
            return False
    return True


# A path as a chain of links: the root is ``(None, name)``; a step is ``(parent, key,
# is_mapping_key)``, spelt ``[key!r]`` for a mapping key and ``[i]`` for a position.
_Path = tuple[Any, ...]


def _spell(path: _Path) -> str:
    steps: list[str] = []
    while path[0] is not None:
        parent, key, keyed = path
        steps.append(f"[{key!r}]" if keyed else f"[{key}]")
        path = parent
    return str(path[1]) + "".join(reversed(steps))


def unicode_problem(value: object, name: str) -> str | None:
    """The first str inside ``value`` holding a lone surrogate, described for an error
    message that calls ``value`` ``name``; None if clean. Mapping keys and values,
    lists, tuples and sets are looked into, at any depth.

    Walked with an explicit stack and a seen-set, so deep or cyclic metadata cannot
    turn this check into a RecursionError or a hang (the JSON encoder reports those).
    The path to each value is kept as a link to its parent's path plus one step, and
    spelt out only for the value that has a problem: clean values, nearly all of them,
    never pay for a string they would not use.
    """
    if type(value) is dict and _plainly_clean(value):
        return None
    stack: list[tuple[object, _Path]] = [(value, (None, name))]
    seen: set[int] = set()
    while stack:
        item, path = stack.pop()
        if isinstance(item, str):
            at = lone_surrogate(item)
            if at is not None:
                return f"{_spell(path)} holds a lone surrogate {item[at]!r} at position {at}"
            continue
        if not isinstance(item, _CONTAINERS):
            continue
        if id(item) in seen:
            continue
        seen.add(id(item))
        if isinstance(item, Mapping):
            for key, sub in item.items():
                if isinstance(key, str) and lone_surrogate(key) is not None:
                    return f"{_spell(path)} has a key {key!r} holding a lone surrogate"
                if _needs_look(sub):
                    stack.append((sub, (path, key, True)))
        else:
            stack.extend((sub, (path, i, False)) for i, sub in enumerate(item) if _needs_look(sub))
    return None


def check_where(where: object) -> dict[str, Any] | None:
    """``where`` is ``None`` or a mapping with str keys; returns a plain dict copy.

    The shape every source's ``where`` shares; what the keys mean is the source's
    own (tool arguments, a path prefix). Metadata filters are ``check_filter``'s.
    """
    if where is None:
        return None
    if not isinstance(where, Mapping):
        raise InvalidArgumentType(f"where must be a mapping or None, got {type(where).__name__}")
    for key in where:
        if not isinstance(key, str):
            raise InvalidArgumentType(f"where keys must be str, got {type(key).__name__}")
    problem = unicode_problem(where, "where")
    if problem is not None:
        raise InvalidArgument(problem)
    return dict(where)


def check_filter(where: object) -> Where | None:
    """A metadata ``where`` in the filter language (``agentkit.kernel.where``), parsed
    once: what every store and bridge evaluates or compiles. None filters nothing.

    Raises:
        InvalidArgumentType: Not a mapping, or a non-str key.
        InvalidFilter: A malformed filter (unknown operator, wrong operand, too deep
            or too large), naming the key and operator.
    """
    return parse_where(check_where(where))


def check_metadata_where(where: object) -> dict[str, Any] | None:
    """``check_filter``'s checks, returning the plain dict copy (for a caller that
    merges or forwards the filter rather than evaluating it)."""
    checked = check_where(where)
    parse_where(checked)
    return checked


def check_score(score: object) -> float | None:
    """A score is ``None`` or a finite real number, returned as a plain float."""
    if score is None:
        return None
    if isinstance(score, bool) or not isinstance(score, numbers.Real):
        raise InvalidArgumentType(
            f"score must be a finite number or None, got {type(score).__name__}"
        )
    value = float(score)
    if not math.isfinite(value):
        raise InvalidArgument(f"score must be a finite number, got {value!r}")
    return value


def check_choice(name: str, value: object, allowed: tuple[object, ...]) -> None:
    """Policy strings are checked at construction so a typo fails where it is made."""
    if value not in allowed:
        raise InvalidArgument(f"unknown {name} {value!r}; expected one of {allowed!r}")


def check_ctx(ctx: object) -> Ctx:
    """A missing or wrong ctx would otherwise surface as an AttributeError on .scope."""
    if not isinstance(ctx, Ctx):
        raise InvalidArgumentType(f"ctx must be a Ctx, got {type(ctx).__name__}")
    return ctx


def check_scope(scope: object) -> Scope:
    if not isinstance(scope, Scope):
        raise InvalidArgumentType(f"scope must be a Scope, got {type(scope).__name__}")
    for part in (scope.org_id, scope.domain_id):
        if isinstance(part, str) and lone_surrogate(part) is not None:
            raise InvalidArgument(f"scope {scope!r} holds a lone surrogate; no store can key by it")
    return scope


def check_ids(ids: object) -> list[str]:
    """A sequence of str ids; a bare str is refused (it would iterate as characters)."""
    if isinstance(ids, (str, bytes)) or not isinstance(ids, Sequence):
        raise InvalidArgumentType(f"ids must be a sequence of str, got {type(ids).__name__}")
    out = list(ids)
    for i, cid in enumerate(out):
        if not isinstance(cid, str):
            raise InvalidArgumentType(f"ids[{i}] must be a str, got {type(cid).__name__}")
        check_unicode(cid, f"ids[{i}]")
    return out
