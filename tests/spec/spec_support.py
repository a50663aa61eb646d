"""Fakes for failure injection and call recording; the code under test is always real.

A FakeSource has no ``accepts_writes`` attribute unless one is given, so it also stands
for a third-party source that never heard of the marker.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from agentkit.kernel import Ctx, Message, Scope

_MISSING = object()


def ctx(org: str | None = "acme", domain: str | None = "support") -> Ctx:
    return Ctx(Scope(org, domain))


@dataclass
class Call:
    query: str
    k: int
    where: Any
    ctx: Ctx


@dataclass
class Interval:
    start: float
    end: float = 0.0


class FakeSource:
    """Returns its stored items (the same objects) and records every call."""

    def __init__(
        self,
        name: str,
        items: Iterable[Any] = (),
        *,
        delay: float = 0.0,
        fail_query: BaseException | None = None,
        fail_write: BaseException | None = None,
        accepts_writes: Any = _MISSING,
        store_writes: bool = False,
    ) -> None:
        self.name = name
        self.items = list(items)
        self.delay = delay
        self.fail_query = fail_query
        self.fail_write = fail_write
        self.store_writes = store_writes
        self.queries: list[Call] = []
        self.writes: list[list[Any]] = []
        self.intervals: list[Interval] = []
        self.cancelled = 0
        if accepts_writes is not _MISSING:
            self.accepts_writes = accepts_writes

    async def query(
        self, query: str, *, k: int, ctx: Ctx, where: dict[str, Any] | None = None
    ) -> list[Any]:
        self.queries.append(Call(query, k, where, ctx))
        await self._pause()
        if self.fail_query is not None:
            raise self.fail_query
        return list(self.items[:k])

    async def write(self, items: Iterable[Any], *, ctx: Ctx) -> None:
        batch = list(items)
        self.writes.append(batch)
        await self._pause()
        if self.fail_write is not None:
            raise self.fail_write
        if self.store_writes:
            self.items.extend(batch)

    async def _pause(self) -> None:
        if not self.delay:
            return
        iv = Interval(time.monotonic())
        self.intervals.append(iv)
        try:
            await asyncio.sleep(self.delay)
        except asyncio.CancelledError:
            self.cancelled += 1
            raise
        finally:
            iv.end = time.monotonic()


def overlapped(intervals: Sequence[Interval]) -> bool:
    """True when every interval started before any of them ended."""
    return max(i.start for i in intervals) < min(i.end for i in intervals)


class UpperCompactor:
    """A Compactor that records what it was given and shortens each message."""

    def __init__(self, limit: int = 5) -> None:
        self.limit = limit
        self.calls: list[list[Message]] = []

    async def compact(self, messages: Sequence[Message], *, ctx: Ctx) -> list[Message]:
        self.calls.append(list(messages))
        return [Message(m.role, m.content[: self.limit].upper()) for m in messages]


class RecordingPort:
    """A VectorPort that records calls and returns canned results."""

    def __init__(self, results: Sequence[Any] = ()) -> None:
        self.results = list(results)
        self.searches: list[dict[str, Any]] = []
        self.upserts: list[dict[str, Any]] = []

    async def upsert(self, chunks: Sequence[Any], *, scope: Scope) -> None:
        self.upserts.append({"chunks": list(chunks), "scope": scope})

    async def search(self, query: str, *, k: int, scope: Scope, where: Any = None) -> list[Any]:
        self.searches.append({"query": query, "k": k, "scope": scope, "where": where})
        return list(self.results[:k])

    async def delete(self, ids: Sequence[str], *, scope: Scope) -> None:
        pass


class RecordingTool:
    """A Tool-protocol object that records its args and returns a canned result."""

    name = "search"
    description = "canned search"

    def __init__(self, result: Any) -> None:
        self.result = result
        self.calls: list[tuple[dict[str, Any], Ctx]] = []

    async def invoke(self, args: Any, *, ctx: Ctx) -> Any:
        self.calls.append((dict(args), ctx))
        return self.result


@dataclass
class Entry:
    """A journal entry with a role attribute."""

    role: str
    text: str


@dataclass
class Bare:
    """A journal entry without a role attribute."""

    text: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
