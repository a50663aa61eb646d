"""ReadOnlyMemory: a source that must never be written says so, and means it."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from agentkit.kernel.ctx import Ctx
from agentkit.kernel.errors import MemoryWriteRefused
from agentkit.kernel.validate import check_choice, check_k, check_query, check_where
from agentkit.observability import traced_memory
from agentkit.state.memory._fanout import _check_member
from agentkit.state.memory._item import MemoryItem
from agentkit.state.memory._protocol import MemorySource

OnWritePolicy = Literal["refuse", "ignore"]
"""``"refuse"`` raises MemoryWriteRefused; ``"ignore"`` returns having stored nothing.

A closed Literal so a typo is a type error at the call site; the runtime check below
derives its tuple from this alias with ``get_args`` so the two cannot drift.
"""

_ON_WRITE: tuple[object, ...] = get_args(OnWritePolicy)


@traced_memory
@dataclass
class ReadOnlyMemory:
    """Turns "nothing happens to write here" into an enforced boundary.

    Only ``write`` is constrained; ``query`` is a pass-through, so the member recalls
    (and is deduplicated) exactly like the source it wraps. The wrapped source's
    ``write`` is never awaited, under either policy.

    ``"ignore"`` exists for fan-outs (one read-only member must not make a whole
    composite unwritable) and is accounted three ways so it is never silent:
    ``refused_writes`` counts the calls, a ``memory.write_refused`` observation
    (source, n) lands on the timeline, and ``accepts_writes`` is False so a composite
    files the member as refused rather than accepted. ``"refuse"`` does the first two
    as well, then raises.

    ``name=""`` mirrors the wrapped source's name, keeping the guard invisible in
    attribution.

    Args:
        inner: The source to protect from writes.
        on_write: ``"refuse"`` (raise) or ``"ignore"`` (drop, counted and observed);
            see ``OnWritePolicy``.
        name: The name items and traces carry; ``""`` takes the wrapped source's.

    Raises:
        InvalidArgument: An unknown ``on_write`` value.
        MemoryWriteRefused: From ``write``, ``delete`` and ``forget`` under ``"refuse"``.
    """

    inner: MemorySource
    on_write: OnWritePolicy = "refuse"
    name: str = ""
    refused_writes: int = field(default=0, init=False, compare=False)

    def __post_init__(self) -> None:
        _check_member(self.inner, "inner")
        check_choice("on_write", self.on_write, _ON_WRITE)
        if not self.name:
            self.name = self.inner.name

    @property
    def accepts_writes(self) -> bool:
        """Always False: nothing written here is ever stored, under either policy."""
        return False

    async def query(
        self,
        query: str,
        *,
        k: int,
        ctx: Ctx,
        where: dict[str, Any] | None = None,
    ) -> list[MemoryItem]:
        """Untouched: the same arguments go in, the same items come out."""
        check_query(query)
        check_k(k)
        check_where(where)
        return await self.inner.query(query, k=k, ctx=ctx, where=where)

    async def write(self, items: Iterable[MemoryItem], *, ctx: Ctx) -> None:
        """Refuse or drop. An empty write still counts as an attempt.

        The policy is about the attempt, not the bytes: code that reaches ``write``
        on a read-only source will carry items as soon as its input is non-empty,
        and catching it on ``write([])`` finds the bug in the first test run.
        """
        self._refuse(len(list(items)), ctx)

    @property
    def forgets(self) -> bool:
        """False: forgetting changes the source, which this guard exists to prevent."""
        return False

    async def delete(self, ids: Sequence[str], *, ctx: Ctx) -> int:
        """Refused like a write (or, under ``"ignore"``, nothing removed: 0)."""
        self._refuse(len(ids) if isinstance(ids, Sequence) else 0, ctx)
        return 0

    async def forget(
        self,
        where: Mapping[str, Any] | None = None,
        *,
        ctx: Ctx,
        all: bool = False,
    ) -> int:
        """Refused like a write (or, under ``"ignore"``, nothing removed: 0)."""
        self._refuse(0, ctx)
        return 0

    def _refuse(self, n: int, ctx: Ctx) -> None:
        self.refused_writes += 1
        ctx.observe("memory.write_refused", source=self.name, n=n)
        if self.on_write == "refuse":
            raise MemoryWriteRefused(source=self.name, n=n)
