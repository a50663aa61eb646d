"""Scope, Ctx and the run's Timeline: what every call carries."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from agentkit.kernel.errors import InvalidArgumentType


@dataclass(frozen=True, slots=True)
class Scope:
    """The tenant bucket every backend keys on.

    ``""`` is normalised to ``None`` so the two spellings of "unset" are one bucket.
    Frozen and hashable, so stores can key their buckets on it directly.

    Args:
        org_id: The organisation (tenant); ``None`` leaves it unset.
        domain_id: The area inside the organisation (a team, a product, a user);
            ``None`` leaves it unset.

    Raises:
        InvalidArgumentType: An id that is neither a str nor ``None``.
    """

    org_id: str | None = None
    domain_id: str | None = None

    def __post_init__(self) -> None:
        for name in ("org_id", "domain_id"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, str):
                raise InvalidArgumentType(
                    f"Scope.{name} must be a str or None, got {type(value).__name__}"
                )
            if value == "":
                object.__setattr__(self, name, None)

    @property
    def complete(self) -> bool:
        """Both ids set: the only scope a multi-tenant backend may serve."""
        return self.org_id is not None and self.domain_id is not None

    @property
    def key(self) -> tuple[str | None, str | None]:
        """A plain tuple, for stores that index buckets by value."""
        return (self.org_id, self.domain_id)


@dataclass(frozen=True, slots=True)
class Observation:
    """One thing that happened during a run, for traces and audits.

    Attributes:
        kind: A dotted name such as ``memory.source_failed``.
        data: The details, read-only.
        at: Wall-clock time of the observation (``time.time()``).
    """

    kind: str
    data: Mapping[str, Any]
    at: float


class Timeline:
    """Append-only, ordered record of a run's observations.

    Sync backends observe from worker threads. The list alone is safe for that:
    ``list.append`` and copying a list are atomic in CPython, with the GIL and in the
    free-threaded build (which locks each list). So no lock of our own, which would
    be made per Ctx, and a Ctx is made per retrieve through the bridges.
    """

    __slots__ = ("_items",)

    def __init__(self) -> None:
        self._items: list[Observation] = []

    def append(self, observation: Observation) -> None:
        """Add ``observation`` at the end; ``Ctx.observe`` is the usual way in."""
        self._items.append(observation)

    def of(self, kind: str) -> list[Observation]:
        """Observations of one kind, oldest first."""
        return [o for o in self._items if o.kind == kind]

    def __iter__(self) -> Iterator[Observation]:
        return iter(list(self._items))

    def __len__(self) -> int:
        return len(self._items)

    def __repr__(self) -> str:
        return f"Timeline({len(self._items)} observations)"


def _run_id() -> str:
    # What uuid.uuid4().hex returns (OS randomness, version 4, RFC 4122 variant) without
    # building a UUID object on the way, which cost most of a new Ctx: one is made per
    # sync or async call through the bridges.
    raw = bytearray(os.urandom(16))
    raw[6] = (raw[6] & 0x0F) | 0x40
    raw[8] = (raw[8] & 0x3F) | 0x80
    return raw.hex()


@dataclass(slots=True)
class Ctx:
    """The per-run context passed as ``ctx=`` to every memory call.

    One object per run: the tenant every layer checks and the timeline every layer
    reports to, so a decorator deep in a stack needs nothing else to do either.

    Args:
        scope: The tenant this run serves; the default ``Scope()`` is unscoped.
        run_id: Identifies the run in traces; a fresh random hex id by default.
        timeline: Where the run's observations go; a new empty one by default.

    Raises:
        InvalidArgumentType: ``scope`` is not a ``Scope``.
    """

    scope: Scope = field(default_factory=Scope)
    run_id: str = field(default_factory=_run_id, kw_only=True)
    timeline: Timeline = field(default_factory=Timeline, kw_only=True)

    def __post_init__(self) -> None:
        if not isinstance(self.scope, Scope):
            raise InvalidArgumentType(
                f"Ctx.scope must be a Scope, got {type(self.scope).__name__}"
            )

    def observe(self, kind: str, **data: Any) -> Observation:
        """Record ``kind`` with ``data`` on the timeline and return it."""
        obs = Observation(kind, MappingProxyType(dict(data)), time.time())
        self.timeline.append(obs)
        return obs
