"""What every composite and decorator shares about asking members.

Running members concurrently without ever leaving one behind (``_settle_all``,
``_guarded``), the names failures are reported under (``_member_keys``), the
construction-time duck check (``_check_member``) and the check that a member's
answer is what the protocol promises (``_check_answer``). One copy of each, so
CompositeMemory, SequentialMemory and the decorators cannot drift apart.
"""

from __future__ import annotations

import asyncio
import math
import numbers
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any, Literal, TypeVar, get_args

from agentkit.kernel.ctx import Ctx
from agentkit.kernel.errors import InvalidArgument, InvalidArgumentType
from agentkit.state.memory._item import MemoryItem, check_items
from agentkit.state.memory._protocol import MemorySource

OnErrorPolicy = Literal["raise", "skip"]
"""What a composite does when a member's query fails or times out.

``"raise"``: wait for every member, then raise CompositeQueryError with the split.
``"skip"``: answer from the healthy members and put a ``memory.source_failed``
observation on the timeline per casualty; if every member failed, raise anyway, since
an empty answer would hide an outage. A member whose answer is not a list of
MemoryItems has failed, exactly like one that raised.
"""

_ON_ERROR: tuple[object, ...] = get_args(OnErrorPolicy)

T = TypeVar("T")
# (ok, value-or-exception, elapsed seconds)
_Outcome = tuple[bool, Any, float]


async def _ask(
    source: MemorySource,
    label: str,
    query: str,
    k: int,
    ctx: Ctx,
    where: dict[str, Any] | None,
) -> list[MemoryItem]:
    """One member's checked answer.

    Each member gets its own copy of ``where`` so one cannot edit another's filter.
    """
    answer = await source.query(
        query, k=k, ctx=ctx, where=None if where is None else dict(where)
    )
    return _check_answer(answer, label)


def _check_answer(answer: object, label: str) -> list[MemoryItem]:
    """A member's answer as a list, or InvalidArgumentType naming the member.

    A source that returns strings, dicts, ``None`` or a bare string is broken, not
    empty: handing that on would crash whoever reads ``item.content`` far from the
    culprit, so it fails here, as that member's failure.
    """
    if type(answer) is list and all(type(item) is MemoryItem for item in answer):
        return answer  # the common case, without a copy
    return check_items(answer, owner=label)


def _bind(fn: Callable[..., Awaitable[T]], *args: Any) -> Callable[[], Awaitable[T]]:
    return lambda: fn(*args)


async def _guarded(call: Callable[[], Awaitable[T]], limit: float | None) -> _Outcome:
    """Turn a member's result or failure into a value, so siblings keep running.

    The member is called inside the guard, so even a synchronous raise on call is
    captured as that member's failure.

    Only ``Exception`` is captured. Cancellation of the caller propagates; a
    CancelledError a member raises on its own (nobody cancelled us) counts as that
    member's failure.
    """
    start = time.monotonic()
    try:
        if limit is None:
            value = await call()
        else:
            async with asyncio.timeout(limit):
                value = await call()
    except Exception as exc:
        return (False, exc, time.monotonic() - start)
    except asyncio.CancelledError as exc:
        task = asyncio.current_task()
        if task is None or task.cancelling():
            raise
        return (False, exc, time.monotonic() - start)
    return (True, value, time.monotonic() - start)


async def _settle_all(guarded: Sequence[Awaitable[_Outcome]]) -> list[_Outcome]:
    """Run every coroutine concurrently and wait for all of them.

    A TaskGroup gives the one guarantee that matters under cancellation: if the
    caller is cancelled, every child is cancelled AND awaited before the cancellation
    propagates, so no member keeps running behind the caller's back.
    """
    if len(guarded) == 1:
        return [await guarded[0]]
    async with asyncio.TaskGroup() as group:
        tasks = [group.create_task(_as_coroutine(g)) for g in guarded]
    return [task.result() for task in tasks]


async def _as_coroutine(awaitable: Awaitable[T]) -> T:
    return await awaitable


def _member_keys(sources: Sequence[object]) -> list[str]:
    """Member names, with ``#index`` appended to every name that occurs twice."""
    names = [str(getattr(source, "name", type(source).__name__)) for source in sources]
    counts = Counter(names)
    return [f"{n}#{i}" if counts[n] > 1 else n for i, n in enumerate(names)]


# --- construction-time checks ------------------------------------------------------


def _check_sources(sources: object) -> list[MemorySource]:
    if isinstance(sources, (str, bytes)) or not isinstance(sources, Iterable):
        raise InvalidArgumentType(
            f"sources must be a list of MemorySource, got {type(sources).__name__}"
        )
    # A list is kept as the caller's own object, as a plain dataclass field would be.
    members = sources if isinstance(sources, list) else list(sources)
    for i, source in enumerate(members):
        _check_member(source, f"sources[{i}]")
    return members


def _check_member(source: object, label: str) -> MemorySource:
    """Duck check at construction, so a wrong object fails where it is wired."""
    if not callable(getattr(source, "query", None)) or not callable(
        getattr(source, "write", None)
    ):
        raise InvalidArgumentType(
            f"{label} is not a MemorySource (needs query() and write()), "
            f"got {type(source).__name__}"
        )
    return source  # type: ignore[return-value]


def _check_timeout(timeout: object) -> float | None:
    if timeout is None:
        return None
    if isinstance(timeout, bool) or not isinstance(timeout, numbers.Real):
        raise InvalidArgumentType(
            f"timeout must be a number of seconds or None, got {type(timeout).__name__}"
        )
    value = float(timeout)
    if math.isnan(value) or value <= 0:
        raise InvalidArgument(f"timeout must be > 0 seconds or None, got {timeout!r}")
    return value
