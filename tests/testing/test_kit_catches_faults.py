"""The kit catches a broken implementation: each fault below fails the check named for it.

Every faulty port or source is the reference implementation (InMemoryVectorStore,
VectorMemory over it) with ONE thing broken, the way a real backend gets it wrong. The
kit's test method is run directly on it and must fail (an assertion, or pytest's
"DID NOT RAISE"); the same method on the unbroken reference must pass, so a failure is
the fault's doing and not the kit's. A skip counts as a miss: a check that skips on a
broken implementation has not caught anything.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import pytest

from agentkit.kernel import Ctx, Scope
from agentkit.kernel.errors import UnsupportedOperation
from agentkit.state.memory import MemoryItem, VectorMemory
from agentkit.testing import MemorySourceTests, VectorPortTests
from agentkit.vector import Chunk, HashingEmbedder, InMemoryVectorStore

# --- ports, each broken one way -----------------------------------------------------------


class _Port:
    """Delegates everything to a correct InMemoryVectorStore; subclasses break one thing."""

    def __init__(self) -> None:
        self.inner = InMemoryVectorStore(HashingEmbedder(dim=64))

    async def upsert(self, chunks: Sequence[Chunk], *, scope: Scope) -> None:
        await self.inner.upsert(chunks, scope=scope)

    async def search(
        self, query: str, *, k: int, scope: Scope, where: Mapping[str, Any] | None = None
    ) -> list[tuple[float, Chunk]]:
        return await self.inner.search(query, k=k, scope=scope, where=where)

    async def delete(self, ids: Sequence[str], *, scope: Scope) -> int | None:
        return await self.inner.delete(ids, scope=scope)

    async def delete_where(self, where: Mapping[str, Any], *, scope: Scope) -> int:
        return await self.inner.delete_where(where, scope=scope)

    async def delete_scope(self, *, scope: Scope) -> int:
        return await self.inner.delete_scope(scope=scope)

    async def scan(
        self,
        *,
        scope: Scope,
        where: Mapping[str, Any] | None = None,
        after: str | None = None,
        limit: int = 1000,
    ) -> list[Chunk]:
        return await self.inner.scan(scope=scope, where=where, after=after, limit=limit)


class DropsIds(_Port):
    """Stores every chunk under a fresh id of its own, as a store that ignores ids does."""

    async def upsert(self, chunks: Sequence[Chunk], *, scope: Scope) -> None:
        await self.inner.upsert([replace(c, id=uuid.uuid4().hex) for c in chunks], scope=scope)


class LeaksScope(_Port):
    """Keeps one bucket for everyone: the scope is accepted and ignored."""

    async def upsert(self, chunks: Sequence[Chunk], *, scope: Scope) -> None:
        await self.inner.upsert(chunks, scope=Scope())

    async def search(
        self, query: str, *, k: int, scope: Scope, where: Mapping[str, Any] | None = None
    ) -> list[tuple[float, Chunk]]:
        return await self.inner.search(query, k=k, scope=Scope(), where=where)


class JoinsScopeIds(_Port):
    """Keys buckets by ``org:domain``: ``Scope("a:b", "c")`` meets ``Scope("a", "b:c")``."""

    @staticmethod
    def _bucket(scope: Scope) -> Scope:
        return Scope(f"{scope.org_id or ''}:{scope.domain_id or ''}", "joined")

    async def upsert(self, chunks: Sequence[Chunk], *, scope: Scope) -> None:
        await self.inner.upsert(chunks, scope=self._bucket(scope))

    async def search(
        self, query: str, *, k: int, scope: Scope, where: Mapping[str, Any] | None = None
    ) -> list[tuple[float, Chunk]]:
        return await self.inner.search(query, k=k, scope=self._bucket(scope), where=where)

    async def delete(self, ids: Sequence[str], *, scope: Scope) -> int | None:
        return await self.inner.delete(ids, scope=self._bucket(scope))


class IgnoresK(_Port):
    """Answers everything it has, whatever ``k`` says."""

    async def search(
        self, query: str, *, k: int, scope: Scope, where: Mapping[str, Any] | None = None
    ) -> list[tuple[float, Chunk]]:
        return await self.inner.search(query, k=10_000, scope=scope, where=where)


class WorstFirst(_Port):
    """Right records, wrong order: ascending scores, as a store returning distances does."""

    async def search(
        self, query: str, *, k: int, scope: Scope, where: Mapping[str, Any] | None = None
    ) -> list[tuple[float, Chunk]]:
        return list(reversed(await self.inner.search(query, k=k, scope=scope, where=where)))


class ReturnsDeleted(_Port):
    """Reports the delete and keeps the records."""

    async def delete(self, ids: Sequence[str], *, scope: Scope) -> int | None:
        held = {c.id for c in await self.inner.get(ids, scope=scope)}
        return len(held)


class MiscountsDeleteWhere(_Port):
    """Removes the right records and says it removed none."""

    async def delete_where(self, where: Mapping[str, Any], *, scope: Scope) -> int:
        await self.inner.delete_where(where, scope=scope)
        return 0


class TrueIsOne(_Port):
    """Filters with Python's ``==``, so ``True`` matches ``1`` and ``1`` matches ``True``."""

    async def search(
        self, query: str, *, k: int, scope: Scope, where: Mapping[str, Any] | None = None
    ) -> list[tuple[float, Chunk]]:
        hits = await self.inner.search(query, k=10_000, scope=scope)

        def keep(meta: Mapping[str, Any]) -> bool:
            for key, want in (where or {}).items():
                options = want if isinstance(want, (list, tuple)) else [want]
                if key not in meta or meta[key] not in options:
                    return False
            return True

        return [hit for hit in hits if keep(hit[1].metadata)][:k]


def _plain_only(where: Mapping[str, Any] | None) -> dict[str, Any]:
    """``where`` without the operators: what a store that only knows equality keeps."""
    return {
        k: v for k, v in (where or {}).items() if not k.startswith("$") and not isinstance(v, dict)
    }


class DropsOperators(_Port):
    """Filters by the plain keys it understands and silently drops every operator:
    ``{"page": {"$gt": 2}}`` becomes no filter at all, a widened answer."""

    async def search(
        self, query: str, *, k: int, scope: Scope, where: Mapping[str, Any] | None = None
    ) -> list[tuple[float, Chunk]]:
        return await self.inner.search(query, k=k, scope=scope, where=_plain_only(where))

    async def scan(
        self,
        *,
        scope: Scope,
        where: Mapping[str, Any] | None = None,
        after: str | None = None,
        limit: int = 1000,
    ) -> list[Chunk]:
        return await self.inner.scan(
            scope=scope, where=_plain_only(where), after=after, limit=limit
        )


class EmptyForOperators(_Port):
    """Answers nothing, rather than refusing, for a filter it cannot express: the empty
    answer the contract forbids even of a store that declares ``operators = False``."""

    async def search(
        self, query: str, *, k: int, scope: Scope, where: Mapping[str, Any] | None = None
    ) -> list[tuple[float, Chunk]]:
        if _plain_only(where) != dict(where or {}):
            return []
        return await self.inner.search(query, k=k, scope=scope, where=where)


class RefusesNamingNothing(_Port):
    """Refuses every operator filter, but its message says nothing of which operator."""

    async def search(
        self, query: str, *, k: int, scope: Scope, where: Mapping[str, Any] | None = None
    ) -> list[tuple[float, Chunk]]:
        if _plain_only(where) != dict(where or {}):
            raise UnsupportedOperation("this filter is not supported")
        return await self.inner.search(query, k=k, scope=scope, where=where)


class ScanIgnoresAfter(_Port):
    """Pages that always start from the top: the first page forever."""

    async def scan(
        self,
        *,
        scope: Scope,
        where: Mapping[str, Any] | None = None,
        after: str | None = None,
        limit: int = 1000,
    ) -> list[Chunk]:
        return await self.inner.scan(scope=scope, where=where, limit=limit)


class LostUpdates(_Port):
    """Read-modify-write of the whole bucket with an await in between: racing writers
    overwrite each other."""

    async def upsert(self, chunks: Sequence[Chunk], *, scope: Scope) -> None:
        held = await self.inner.scan(scope=scope, limit=100_000)
        await asyncio.sleep(0)
        fresh = {c.id: c for c in [*held, *chunks]}
        await self.inner.delete_scope(scope=scope)
        await self.inner.upsert(list(fresh.values()), scope=scope)


class StoresWhatItCan(_Port):
    """Skips what it cannot store instead of refusing the batch."""

    async def upsert(self, chunks: Sequence[Chunk], *, scope: Scope) -> None:
        if not isinstance(scope, Scope) or isinstance(chunks, str):
            return
        good = [c for c in chunks if isinstance(c, Chunk) and "\ud800" not in c.text]
        await self.inner.upsert(good, scope=scope)


# --- sources, each broken one way -----------------------------------------------------------


@dataclass
class _Source:
    """Delegates to a correct VectorMemory; subclasses break one thing."""

    inner: VectorMemory
    name: str = "vector"

    async def query(
        self, query: str, *, k: int, ctx: Ctx, where: dict[str, Any] | None = None
    ) -> list[MemoryItem]:
        return await self.inner.query(query, k=k, ctx=ctx, where=where)

    async def write(self, items: Iterable[MemoryItem], *, ctx: Ctx) -> None:
        await self.inner.write(items, ctx=ctx)


def _vector() -> VectorMemory:
    return VectorMemory(InMemoryVectorStore(HashingEmbedder(dim=64)))


class ClaimsWritesItDoesNotKeep(_Source):
    """``accepts_writes`` is True (by default) and ``write`` keeps nothing."""

    async def write(self, items: Iterable[MemoryItem], *, ctx: Ctx) -> None:
        list(items)


class SourceLeaksScope(_Source):
    """Writes and reads one shared bucket whatever the ctx's scope."""

    async def query(
        self, query: str, *, k: int, ctx: Ctx, where: dict[str, Any] | None = None
    ) -> list[MemoryItem]:
        return await self.inner.query(query, k=k, ctx=Ctx(Scope()), where=where)

    async def write(self, items: Iterable[MemoryItem], *, ctx: Ctx) -> None:
        await self.inner.write(items, ctx=Ctx(Scope()))


class SourceIgnoresK(_Source):
    async def query(
        self, query: str, *, k: int, ctx: Ctx, where: dict[str, Any] | None = None
    ) -> list[MemoryItem]:
        return await self.inner.query(query, k=max(k, 1) + 3, ctx=ctx, where=where)


class SourceDropsIds(_Source):
    async def query(
        self, query: str, *, k: int, ctx: Ctx, where: dict[str, Any] | None = None
    ) -> list[MemoryItem]:
        items = await self.inner.query(query, k=k, ctx=ctx, where=where)
        return [replace(i, id=None) for i in items]


class StampsAnotherName(_Source):
    async def query(
        self, query: str, *, k: int, ctx: Ctx, where: dict[str, Any] | None = None
    ) -> list[MemoryItem]:
        items = await self.inner.query(query, k=k, ctx=ctx, where=where)
        return [replace(i, source="backend") for i in items]


class LeavesATaskBehind(_Source):
    """Runs the lookup in a shielded task, so cancelling the query leaves it running."""

    async def query(
        self, query: str, *, k: int, ctx: Ctx, where: dict[str, Any] | None = None
    ) -> list[MemoryItem]:
        async def slow() -> list[MemoryItem]:
            await asyncio.sleep(0.05)
            return await self.inner.query(query, k=k, ctx=ctx, where=where)

        return await asyncio.shield(asyncio.ensure_future(slow()))


class AnswersKZero(_Source):
    """Treats ``k <= 0`` as "nothing" instead of refusing it."""

    async def query(
        self, query: str, *, k: int, ctx: Ctx, where: dict[str, Any] | None = None
    ) -> list[MemoryItem]:
        if isinstance(k, int) and k <= 0:
            return []
        return await self.inner.query(query, k=k, ctx=ctx, where=where)


class NoCtxCheck(_Source):
    """Reaches for ``ctx.scope`` first: a missing ctx is an AttributeError."""

    async def query(
        self, query: str, *, k: int, ctx: Ctx, where: dict[str, Any] | None = None
    ) -> list[MemoryItem]:
        Ctx(ctx.scope)
        return await self.inner.query(query, k=k, ctx=ctx, where=where)


class WritesUntilItFails(_Source):
    """Writes item by item, so a bad item halfway leaves the first ones stored."""

    async def write(self, items: Iterable[MemoryItem], *, ctx: Ctx) -> None:
        if isinstance(items, str):
            raise TypeError("items must be a list")
        for item in items:
            await self.inner.write([item], ctx=ctx)


class IgnoresWhere(_Source):
    async def query(
        self, query: str, *, k: int, ctx: Ctx, where: dict[str, Any] | None = None
    ) -> list[MemoryItem]:
        return await self.inner.query(query, k=k, ctx=ctx)


class ReadOnlyThatSaysWritable(_Source):
    """Stores nothing, but never says so (no ``accepts_writes``)."""

    async def write(self, items: Iterable[MemoryItem], *, ctx: Ctx) -> None:
        return None


class _HonestReadOnly(_Source):
    """The reference for the read-only check: stores nothing and says so."""

    accepts_writes = False

    async def write(self, items: Iterable[MemoryItem], *, ctx: Ctx) -> None:
        return None


# --- the kit's view of them -------------------------------------------------------------


class _Ports(VectorPortTests):
    pass


class _PortsWithoutOperators(VectorPortTests):
    operators = False


class _Sources(MemorySourceTests):
    pass


class _ReadOnlySources(MemorySourceTests):
    read_only = True
    query_example = "walrus"


async def _seeded_read_only(source: _Source) -> _Source:
    store = source.inner.vector
    await store.upsert(
        [Chunk(f"f{i}", f"walrus fact {i}") for i in range(3)], scope=Scope("acme", "support")
    )
    return source


@dataclass(frozen=True)
class Fault:
    """A broken implementation, the kit class that checks it, and the check that must fail."""

    name: str
    kit: type[Any]
    make: Callable[[], Any]
    reference: Callable[[], Any]
    check: str
    # How the kit's check fails: an assertion or pytest's DID NOT RAISE; a fault that
    # raises the wrong exception fails the check with that exception.
    raises: tuple[type[BaseException], ...] = (AssertionError, pytest.fail.Exception)


def _source(cls: type[_Source]) -> Callable[[], Any]:
    return lambda: cls(_vector())


FAULTS = [
    Fault("drops ids", _Ports, DropsIds, _Port, "test_round_trip_keeps_id_text_and_metadata"),
    Fault("leaks a scope", _Ports, LeaksScope, _Port, "test_two_scopes_with_one_id_never_touch"),
    Fault("joins scope ids", _Ports, JoinsScopeIds, _Port, "test_odd_scope_ids_never_collide"),
    Fault("ignores k", _Ports, IgnoresK, _Port, "test_k_is_honoured"),
    Fault("worst first", _Ports, WorstFirst, _Port, "test_scores_are_floats_best_first"),
    Fault(
        "returns a deleted record",
        _Ports,
        ReturnsDeleted,
        _Port,
        "test_delete_counts_exactly_and_keeps_the_rest",
    ),
    Fault(
        "miscounts delete_where",
        _Ports,
        MiscountsDeleteWhere,
        _Port,
        "test_delete_where_counts_exactly_in_one_scope",
    ),
    Fault("True is 1", _Ports, TrueIsOne, _Port, "test_where_selects_exactly_what_the_rule_says"),
    Fault(
        "drops operators",
        _Ports,
        DropsOperators,
        _Port,
        "test_where_selects_exactly_what_the_rule_says",
    ),
    Fault(
        "empty for operators, though operators = False",
        _PortsWithoutOperators,
        EmptyForOperators,
        _Port,
        "test_where_selects_exactly_what_the_rule_says",
    ),
    Fault(
        "refuses naming no operator",
        _PortsWithoutOperators,
        RefusesNamingNothing,
        _Port,
        "test_where_selects_exactly_what_the_rule_says",
    ),
    Fault(
        "scan ignores after",
        _Ports,
        ScanIgnoresAfter,
        _Port,
        "test_scan_pages_through_everything_once",
    ),
    Fault("lost updates", _Ports, LostUpdates, _Port, "test_concurrent_writers_lose_nothing"),
    Fault(
        "stores what it can",
        _Ports,
        StoresWhatItCan,
        _Port,
        "test_bad_arguments_are_refused_by_name_before_anything_changes",
    ),
    Fault(
        "claims writes it does not keep",
        _Sources,
        _source(ClaimsWritesItDoesNotKeep),
        _source(_Source),
        "test_accepts_writes_is_honest",
    ),
    Fault(
        "source leaks a scope",
        _Sources,
        _source(SourceLeaksScope),
        _source(_Source),
        "test_a_scope_is_never_crossed",
    ),
    Fault(
        "source ignores k",
        _Sources,
        _source(SourceIgnoresK),
        _source(_Source),
        "test_k_is_honoured",
    ),
    Fault(
        "source drops ids",
        _Sources,
        _source(SourceDropsIds),
        _source(_Source),
        "test_write_read_round_trip",
    ),
    Fault(
        "stamps another name",
        _Sources,
        _source(StampsAnotherName),
        _source(_Source),
        "test_items_have_the_memory_item_shape",
    ),
    Fault(
        "leaves a task behind",
        _Sources,
        _source(LeavesATaskBehind),
        _source(_Source),
        "test_cancellation_leaves_no_task_behind",
    ),
    Fault(
        "answers k=0",
        _Sources,
        _source(AnswersKZero),
        _source(_Source),
        "test_bad_arguments_are_refused_by_name",
    ),
    Fault(
        "no ctx check",
        _Sources,
        _source(NoCtxCheck),
        _source(_Source),
        "test_ctx_is_required",
        raises=(AttributeError,),
    ),
    Fault(
        "writes until it fails",
        _Sources,
        _source(WritesUntilItFails),
        _source(_Source),
        "test_bad_arguments_are_refused_by_name",
    ),
    Fault(
        "ignores where",
        _Sources,
        _source(IgnoresWhere),
        _source(_Source),
        "test_where_selects_exactly_what_the_rule_says",
    ),
    Fault(
        "read-only that says writable",
        _ReadOnlySources,
        _source(ReadOnlyThatSaysWritable),
        _source(_HonestReadOnly),
        "test_accepts_writes_is_honest",
    ),
]


async def _run(fault: Fault, subject: Any) -> None:
    if fault.kit is _ReadOnlySources:
        subject = await _seeded_read_only(subject)
    await getattr(fault.kit(), fault.check)(subject)


@pytest.mark.parametrize("fault", FAULTS, ids=[f.name for f in FAULTS])
async def test_the_kit_catches_the_fault(fault: Fault) -> None:
    with pytest.raises(fault.raises):
        await _run(fault, fault.make())


@pytest.mark.parametrize("fault", FAULTS, ids=[f.name for f in FAULTS])
async def test_the_same_check_passes_on_the_reference(fault: Fault) -> None:
    await _run(fault, fault.reference())
