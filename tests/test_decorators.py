"""ReadOnlyMemory, ScopedMemory, CachedMemory, CompactedMemory."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Iterable, Sequence
from typing import Any, get_args

import pytest

from agentkit.kernel import (
    AgentkitError,
    CompositeWriteError,
    Ctx,
    InvalidArgument,
    MemoryWriteRefused,
    Message,
    Scope,
    ScopeViolation,
)
from agentkit.state.memory import (
    CachedMemory,
    CompactedMemory,
    CompositeMemory,
    MemoryItem,
    OnWritePolicy,
    ReadOnlyMemory,
    ScopedMemory,
    _cached,
)


class TenantMemory:
    """A small real multi-tenant source: one list per scope, substring match."""

    def __init__(self, name: str = "kb") -> None:
        self.name = name
        self.buckets: dict[Scope, list[MemoryItem]] = {}
        self.queries: list[tuple[str, int, Any]] = []
        self.writes = 0
        self.last_result: list[MemoryItem] | None = None

    async def query(
        self, query: str, *, k: int, ctx: Ctx, where: dict[str, Any] | None = None
    ) -> list[MemoryItem]:
        self.queries.append((query, k, where))
        hits = [i for i in self.buckets.get(ctx.scope, []) if query in i.content]
        if where:
            hits = [i for i in hits if all(_match(i.metadata.get(a), b) for a, b in where.items())]
        self.last_result = hits[:k]
        return self.last_result

    async def write(self, items: Iterable[MemoryItem], *, ctx: Ctx) -> None:
        self.writes += 1
        bucket = self.buckets.setdefault(ctx.scope, [])
        bucket.extend(dataclasses.replace(i, source=self.name) for i in items)


def _match(value: Any, wanted: Any) -> bool:
    if isinstance(wanted, (list, tuple, set)):
        return value in wanted
    return bool(value == wanted)


class ExplodingWrite(TenantMemory):
    async def write(self, items: Iterable[MemoryItem], *, ctx: Ctx) -> None:
        self.writes += 1
        raise AssertionError("the wrapped write must never be awaited")


ACME = Scope("acme", "support")
GLOBEX = Scope("globex", "support")


@pytest.fixture
def ctx() -> Ctx:
    return Ctx(ACME)


async def seeded(ctx: Ctx, *contents: str, name: str = "kb", **meta: Any) -> TenantMemory:
    mem = TenantMemory(name)
    await mem.write([MemoryItem(c, "seed", 0.5, meta) for c in contents], ctx=ctx)
    mem.writes = 0
    return mem


# === ReadOnlyMemory ================================================================


def test_readonly_defaults_and_policy_alias() -> None:
    ro = ReadOnlyMemory(TenantMemory("registry"))
    assert ro.on_write == "refuse"
    assert ro.name == "registry"  # mirrors the wrapped source
    assert ro.refused_writes == 0
    assert ReadOnlyMemory(TenantMemory("registry"), name="alias").name == "alias"
    assert get_args(OnWritePolicy) == ("refuse", "ignore")


@pytest.mark.parametrize("policy", ["drop", "REFUSE", None, ""])
def test_readonly_unknown_policy_fails_at_construction(policy: Any) -> None:
    with pytest.raises(ValueError) as info:
        ReadOnlyMemory(TenantMemory(), on_write=policy)
    assert isinstance(info.value, InvalidArgument)
    assert "'refuse'" in str(info.value) and "'ignore'" in str(info.value)


@pytest.mark.parametrize("policy", ["refuse", "ignore"])
def test_readonly_never_accepts_writes(policy: OnWritePolicy) -> None:
    assert ReadOnlyMemory(TenantMemory(), on_write=policy).accepts_writes is False


async def test_refuse_raises_named_error_and_never_awaits_inner(ctx: Ctx) -> None:
    inner = ExplodingWrite("registry")
    ro = ReadOnlyMemory(inner)
    with pytest.raises(MemoryWriteRefused) as info:
        await ro.write((MemoryItem(c, "x") for c in "ab"), ctx=ctx)
    err = info.value
    assert err.source == "registry" and err.n == 2
    assert isinstance(err, AgentkitError)
    assert not isinstance(err, PermissionError) and not isinstance(err, ValueError)
    assert inner.writes == 0
    assert ro.refused_writes == 1
    (obs,) = ctx.timeline.of("memory.write_refused")
    assert dict(obs.data) == {"source": "registry", "n": 2}


async def test_ignore_returns_quietly_but_is_accounted(ctx: Ctx) -> None:
    inner = ExplodingWrite("registry")
    ro = ReadOnlyMemory(inner, on_write="ignore")
    assert await ro.write([MemoryItem("a", "x")], ctx=ctx) is None
    await ro.write([MemoryItem("b", "x"), MemoryItem("c", "x")], ctx=ctx)
    assert inner.writes == 0
    assert ro.refused_writes == 2
    assert [dict(o.data) for o in ctx.timeline.of("memory.write_refused")] == [
        {"source": "registry", "n": 1}, {"source": "registry", "n": 2}]


@pytest.mark.parametrize("policy", ["refuse", "ignore"])
async def test_empty_write_still_refuses(ctx: Ctx, policy: OnWritePolicy) -> None:
    ro = ReadOnlyMemory(ExplodingWrite("registry"), on_write=policy)
    if policy == "refuse":
        with pytest.raises(MemoryWriteRefused) as info:
            await ro.write([], ctx=ctx)
        assert info.value.n == 0
    else:
        await ro.write([], ctx=ctx)
    assert ro.refused_writes == 1
    assert ctx.timeline.of("memory.write_refused")[0].data["n"] == 0


async def test_readonly_query_is_a_pure_pass_through(ctx: Ctx) -> None:
    inner = await seeded(ctx, "alpha", "beta", tag="t")
    ro = ReadOnlyMemory(inner)
    where = {"tag": "t"}
    got = await ro.query("a", k=7, ctx=ctx, where=where)
    assert got is inner.last_result  # no defensive copy, no re-stamping
    assert all(i.source == "kb" for i in got)
    assert inner.queries == [("a", 7, where)]
    assert inner.queries[0][2] is where


async def test_refused_write_loses_nothing_already_stored(ctx: Ctx) -> None:
    inner = await seeded(ctx, "fact one")
    with pytest.raises(MemoryWriteRefused):
        await ReadOnlyMemory(inner).write([MemoryItem("junk", "x")], ctx=ctx)
    assert [i.content for i in await inner.query("", k=10, ctx=ctx)] == ["fact one"]


async def test_readonly_nesting_orders(ctx: Ctx) -> None:
    no_scope = Ctx()
    inner = TenantMemory("kb")
    with pytest.raises(MemoryWriteRefused):  # refuses before the tenant guard runs
        await ReadOnlyMemory(ScopedMemory(inner)).write([MemoryItem("x", "c")], ctx=no_scope)
    with pytest.raises(ScopeViolation):  # tenant checked first
        await ScopedMemory(ReadOnlyMemory(inner)).write([MemoryItem("x", "c")], ctx=no_scope)
    inner_ro = ReadOnlyMemory(inner)
    outer_ro = ReadOnlyMemory(inner_ro)
    with pytest.raises(MemoryWriteRefused):
        await outer_ro.write([MemoryItem("x", "c")], ctx=ctx)
    assert inner_ro.refused_writes == 0 and outer_ro.refused_writes == 1
    assert inner.writes == 0


async def test_readonly_member_in_a_fanout(ctx: Ctx) -> None:
    rw = TenantMemory("notes")
    ignoring = ReadOnlyMemory(TenantMemory("registry"), on_write="ignore")
    refusing = ReadOnlyMemory(TenantMemory("kb"))
    await CompositeMemory([rw, ignoring]).write([MemoryItem("n", "c")], ctx=ctx)
    with pytest.raises(CompositeWriteError) as info:
        await CompositeMemory([rw, ignoring, refusing]).write([MemoryItem("m", "c")], ctx=ctx)
    assert info.value.accepted == ["notes"]
    assert info.value.refused == ["registry"]
    assert isinstance(info.value.failed["kb"], MemoryWriteRefused)


async def test_readonly_member_participates_in_recall_and_dedupe(ctx: Ctx) -> None:
    registry = ReadOnlyMemory(await seeded(ctx, "shared fact", name="registry"))
    notes = await seeded(ctx, "shared fact", "own note", name="notes")
    got = await CompositeMemory([registry, notes]).query("", k=5, ctx=ctx)
    shared = next(i for i in got if i.content == "shared fact")
    assert shared.metadata["dedupe_sources"] == ("registry", "notes")


# === ScopedMemory =================================================================


def test_scoped_defaults() -> None:
    scoped = ScopedMemory(TenantMemory("kb"))
    assert scoped.enforce is None and scoped.name == "kb"
    assert ScopedMemory(TenantMemory("kb"), name="guarded").name == "guarded"


@pytest.mark.parametrize("scope", [Scope(), Scope("acme"), Scope(None, "support"),
                                   Scope("", ""), Scope("acme", "")])
async def test_default_guard_needs_a_complete_scope(scope: Scope) -> None:
    inner = TenantMemory()
    scoped = ScopedMemory(inner)
    bad = Ctx(scope)
    with pytest.raises(ScopeViolation) as info:
        await scoped.query("q", k=1, ctx=bad)
    assert isinstance(info.value, PermissionError) and isinstance(info.value, AgentkitError)
    with pytest.raises(PermissionError):
        await scoped.write([MemoryItem("x", "c")], ctx=bad)
    assert inner.queries == [] and inner.writes == 0


async def test_complete_scope_passes_and_results_keep_their_stamp(ctx: Ctx) -> None:
    inner = await seeded(ctx, "alpha")
    scoped = ScopedMemory(inner)
    got = await scoped.query("alpha", k=1, ctx=ctx)
    assert [(i.content, i.source) for i in got] == [("alpha", "kb")]
    await scoped.write([MemoryItem("beta", "c")], ctx=ctx)
    assert inner.writes == 1


async def test_custom_enforce_falsy_is_a_violation(ctx: Ctx) -> None:
    inner = TenantMemory()
    only_acme = ScopedMemory(inner, enforce=lambda c: c.scope.org_id == "globex")
    with pytest.raises(ScopeViolation):
        await only_acme.query("q", k=1, ctx=ctx)
    with pytest.raises(ScopeViolation):
        await only_acme.write([MemoryItem("x", "c")], ctx=ctx)
    assert inner.queries == [] and inner.writes == 0
    await only_acme.query("q", k=1, ctx=Ctx(GLOBEX))
    assert len(inner.queries) == 1


async def test_custom_enforce_may_relax_the_default() -> None:
    inner = TenantMemory()
    await ScopedMemory(inner, enforce=lambda c: True).query("q", k=1, ctx=Ctx())
    assert len(inner.queries) == 1


async def test_custom_enforce_raising_is_a_violation_with_cause(ctx: Ctx) -> None:
    original = KeyError("no checkpoint")

    def enforce(c: Ctx) -> bool:
        raise original

    inner = TenantMemory()
    with pytest.raises(ScopeViolation) as info:
        await ScopedMemory(inner, enforce=enforce).query("q", k=1, ctx=ctx)
    assert info.value.__cause__ is original
    assert inner.queries == []


async def test_async_enforce_is_awaited(ctx: Ctx) -> None:
    async def approved(c: Ctx) -> bool:
        await asyncio.sleep(0)
        return c.scope == ACME

    inner = TenantMemory()
    scoped = ScopedMemory(inner, enforce=approved)
    await scoped.query("q", k=1, ctx=ctx)
    with pytest.raises(ScopeViolation):
        await scoped.query("q", k=1, ctx=Ctx(GLOBEX))
    assert len(inner.queries) == 1


def test_scoped_accepts_writes_mirrors_inner() -> None:
    assert ScopedMemory(TenantMemory()).accepts_writes is True
    assert ScopedMemory(ReadOnlyMemory(TenantMemory(), on_write="ignore")).accepts_writes is False


def test_scoped_rejects_non_callable_enforce() -> None:
    with pytest.raises(TypeError, match="enforce"):
        ScopedMemory(TenantMemory(), enforce="strict")  # type: ignore[arg-type]


# === CachedMemory =================================================================


def test_cached_defaults() -> None:
    cache = CachedMemory(TenantMemory("kb"))
    assert cache.ttl_seconds == 60.0 and cache.max_entries == 256
    assert cache.name == "kb" and cache.strict_scope is False


@pytest.mark.parametrize(
    ("kwargs", "exc", "needle"),
    [({"ttl_seconds": 0}, ValueError, "ttl_seconds"), ({"ttl_seconds": -1}, ValueError, "ttl"),
     ({"ttl_seconds": float("nan")}, ValueError, "ttl"), ({"ttl_seconds": "5"}, TypeError, "ttl"),
     ({"max_entries": 0}, ValueError, "max_entries"), ({"max_entries": 1.5}, TypeError, "max"),
     ({"max_entries": True}, TypeError, "max_entries")],
)
def test_cached_bad_settings(kwargs: dict[str, Any], exc: type[Exception], needle: str) -> None:
    with pytest.raises(exc, match=needle):
        CachedMemory(TenantMemory(), **kwargs)


async def test_hit_is_served_without_touching_inner(ctx: Ctx) -> None:
    inner = await seeded(ctx, "alpha", "alpine")
    cache = CachedMemory(inner)
    first = await cache.query("al", k=2, ctx=ctx)
    second = await cache.query("al", k=2, ctx=ctx)
    assert len(inner.queries) == 1
    assert [i.content for i in first] == [i.content for i in second] == ["alpha", "alpine"]
    assert first is not second
    second.clear()  # a fresh list each time: mutating one does not poison the cache
    assert len(await cache.query("al", k=2, ctx=ctx)) == 2


async def test_key_includes_query_k_and_where_values(ctx: Ctx) -> None:
    inner = await seeded(ctx, "alpha")
    cache = CachedMemory(inner)
    await cache.query("al", k=2, ctx=ctx)
    await cache.query("alp", k=2, ctx=ctx)
    await cache.query("al", k=3, ctx=ctx)
    await cache.query("al", k=2, ctx=ctx, where={"lang": "en"})
    await cache.query("al", k=2, ctx=ctx, where={"lang": "fr"})  # same keys, other value
    assert len(inner.queries) == 5
    await cache.query("al", k=2, ctx=ctx, where={"lang": "fr"})
    assert len(inner.queries) == 5


async def test_where_is_canonical(ctx: Ctx) -> None:
    inner = TenantMemory()
    cache = CachedMemory(inner)
    await cache.query("q", k=1, ctx=ctx, where={"a": 1, "b": ["x", "y"]})
    await cache.query("q", k=1, ctx=ctx, where={"b": ["x", "y"], "a": 1})  # key order
    assert len(inner.queries) == 1
    await cache.query("q", k=1, ctx=ctx, where={"a": 1, "b": ["x", "z"]})
    await cache.query("q", k=1, ctx=ctx, where={"a": "1", "b": ["x", "y"]})
    await cache.query("q", k=1, ctx=ctx, where={"n": {"deep": [1, {"x": {2, 3}}]}})
    await cache.query("q", k=1, ctx=ctx, where={"n": {"deep": [1, {"x": {3, 2}}]}})
    assert len(inner.queries) == 4
    await cache.query("q", k=1, ctx=ctx, where={"n": {"deep": [1, {"x": {4}}]}})
    assert len(inner.queries) == 5


async def test_unkeyable_where_bypasses_the_cache(ctx: Ctx) -> None:
    class Opaque:
        __hash__ = None  # type: ignore[assignment]

    inner = TenantMemory()
    cache = CachedMemory(inner)
    for _ in range(2):
        await cache.query("q", k=1, ctx=ctx, where={"o": Opaque()})
    assert len(inner.queries) == 2 and len(cache) == 0


async def test_one_tenants_entry_is_never_served_to_another() -> None:
    inner = TenantMemory()
    acme, globex = Ctx(ACME), Ctx(GLOBEX)
    await inner.write([MemoryItem("acme secret", "x")], ctx=acme)
    cache = CachedMemory(inner)
    assert [i.content for i in await cache.query("secret", k=1, ctx=acme)] == ["acme secret"]
    assert await cache.query("secret", k=1, ctx=globex) == []
    assert await cache.query("secret", k=1, ctx=Ctx()) == []


async def test_strict_scope_refuses_incomplete_scope_before_inner(ctx: Ctx) -> None:
    inner = TenantMemory()
    cache = CachedMemory(inner, strict_scope=True)
    with pytest.raises(ScopeViolation) as info:
        await cache.query("q", k=1, ctx=Ctx(Scope("acme")))
    assert isinstance(info.value, PermissionError)
    assert inner.queries == []
    await cache.query("q", k=1, ctx=ctx)
    assert len(inner.queries) == 1


async def test_ttl_expires_entries(ctx: Ctx, monkeypatch: pytest.MonkeyPatch) -> None:
    now = [1000.0]
    monkeypatch.setattr(_cached.time, "monotonic", lambda: now[0])
    inner = TenantMemory()
    cache = CachedMemory(inner, ttl_seconds=10)
    await cache.query("q", k=1, ctx=ctx)
    now[0] += 9.9
    await cache.query("q", k=1, ctx=ctx)
    assert len(inner.queries) == 1
    now[0] += 0.1  # exactly ttl old: never served
    await cache.query("q", k=1, ctx=ctx)
    assert len(inner.queries) == 2


async def test_eviction_drops_the_oldest_insertion(ctx: Ctx) -> None:
    inner = TenantMemory()
    cache = CachedMemory(inner, max_entries=2)
    for q in ("a", "b", "a", "c"):  # re-reading "a" does not refresh its insertion
        await cache.query(q, k=1, ctx=ctx)
    assert len(cache) == 2
    assert len(inner.queries) == 3
    await cache.query("c", k=1, ctx=ctx)
    await cache.query("b", k=1, ctx=ctx)
    assert len(inner.queries) == 3
    await cache.query("a", k=1, ctx=ctx)  # "a" was evicted
    assert len(inner.queries) == 4


async def test_write_forwards_then_invalidates(ctx: Ctx) -> None:
    inner = await seeded(ctx, "old")
    cache = CachedMemory(inner)
    assert [i.content for i in await cache.query("", k=5, ctx=ctx)] == ["old"]
    await cache.write([MemoryItem("new", "c")], ctx=ctx)
    assert inner.writes == 1
    assert [i.content for i in await cache.query("", k=5, ctx=ctx)] == ["old", "new"]


async def test_failed_write_still_invalidates(ctx: Ctx) -> None:
    inner = ExplodingWrite()
    cache = CachedMemory(inner)
    await cache.query("q", k=1, ctx=ctx)
    with pytest.raises(AssertionError):
        await cache.write([MemoryItem("x", "c")], ctx=ctx)
    assert len(cache) == 0


async def test_query_in_flight_during_a_write_does_not_store_stale_results(ctx: Ctx) -> None:
    gate = asyncio.Event()

    class Gated(TenantMemory):
        async def query(self, query: str, *, k: int, ctx: Ctx, where: Any = None
                        ) -> list[MemoryItem]:
            result = await super().query(query, k=k, ctx=ctx, where=where)
            await gate.wait()
            return result

    inner = Gated()
    cache = CachedMemory(inner)
    pending = asyncio.create_task(cache.query("", k=5, ctx=ctx))
    await asyncio.sleep(0.01)
    await cache.write([MemoryItem("new", "c")], ctx=ctx)
    gate.set()
    assert await pending == []  # the stale answer goes to its caller...
    assert [i.content for i in await cache.query("", k=5, ctx=ctx)] == ["new"]  # ...not the cache


def test_cached_accepts_writes_mirrors_inner() -> None:
    assert CachedMemory(TenantMemory()).accepts_writes is True
    assert CachedMemory(ReadOnlyMemory(TenantMemory(), on_write="ignore")).accepts_writes is False


async def test_cached_bad_input_touches_nothing(ctx: Ctx) -> None:
    inner = TenantMemory()
    with pytest.raises(ValueError, match="k"):
        await CachedMemory(inner).query("q", k=0, ctx=ctx)
    with pytest.raises(TypeError, match="where"):
        await CachedMemory(inner).query("q", k=1, ctx=ctx, where="a=1")  # type: ignore[arg-type]
    assert inner.queries == []


# === CompactedMemory =============================================================


class Truncate:
    """A real compactor: keeps the first ``n`` characters of every message."""

    def __init__(self, n: int, delay: float = 0.0) -> None:
        self.n, self.delay = n, delay
        self.calls: list[list[Message]] = []
        self.now = self.peak = 0

    async def compact(self, messages: Sequence[Message], *, ctx: Ctx) -> list[Message]:
        self.calls.append(list(messages))
        self.now += 1
        self.peak = max(self.peak, self.now)
        await asyncio.sleep(self.delay)
        self.now -= 1
        return [Message(m.role, m.content[: self.n]) for m in messages]


class Splitter:
    """Returns several messages, to show how they are joined."""

    async def compact(self, messages: Sequence[Message], *, ctx: Ctx) -> list[Message]:
        return [Message("user", part) for m in messages for part in m.content.split(" ")]


def test_compacted_defaults_and_validation() -> None:
    comp = CompactedMemory(TenantMemory("kb"), Truncate(3))
    assert comp.max_items is None and comp.name == "kb"
    with pytest.raises(ValueError, match="max_items"):
        CompactedMemory(TenantMemory(), Truncate(3), max_items=0)
    with pytest.raises(TypeError, match="max_items"):
        CompactedMemory(TenantMemory(), Truncate(3), max_items="2")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="compactor"):
        CompactedMemory(TenantMemory(), object())


async def test_each_item_is_compacted_as_one_user_message(ctx: Ctx) -> None:
    inner = TenantMemory()
    await inner.write([MemoryItem("a long passage", "x", 0.7, {"path": "/a"}, id="r1")], ctx=ctx)
    compactor = Truncate(6)
    (got,) = await CompactedMemory(inner, compactor).query("", k=5, ctx=ctx)
    assert compactor.calls == [[Message("user", "a long passage")]]
    assert got.content == "a long"
    assert (got.source, got.score, got.id, got.metadata["path"]) == ("kb", 0.7, "r1", "/a")


async def test_returned_messages_are_joined_by_newlines(ctx: Ctx) -> None:
    inner = await seeded(ctx, "one two three")
    (got,) = await CompactedMemory(inner, Splitter()).query("", k=1, ctx=ctx)
    assert got.content == "one\ntwo\nthree"


async def test_items_are_compacted_concurrently(ctx: Ctx) -> None:
    inner = await seeded(ctx, *[f"passage {i}" for i in range(5)])
    compactor = Truncate(4, delay=0.1)
    got = await CompactedMemory(inner, compactor).query("", k=5, ctx=ctx)
    assert compactor.peak == 5
    assert [i.content for i in got] == ["pass"] * 5


async def test_max_items_caps_the_list(ctx: Ctx) -> None:
    inner = await seeded(ctx, "a1", "a2", "a3")
    compactor = Truncate(10)
    got = await CompactedMemory(inner, compactor, max_items=2).query("", k=3, ctx=ctx)
    assert [i.content for i in got] == ["a1", "a2"]
    assert inner.queries[0][1] == 3 and len(compactor.calls) == 2


async def test_compacted_write_passes_through(ctx: Ctx) -> None:
    inner = TenantMemory()
    comp = CompactedMemory(inner, Truncate(1))
    await comp.write([MemoryItem("full text", "c")], ctx=ctx)
    assert [i.content for i in inner.buckets[ACME]] == ["full text"]
    assert comp.accepts_writes is True
    ro = ReadOnlyMemory(TenantMemory(), on_write="ignore")
    assert CompactedMemory(ro, Truncate(1)).accepts_writes is False


async def test_compactor_failure_propagates(ctx: Ctx) -> None:
    class Broken:
        async def compact(self, messages: Sequence[Message], *, ctx: Ctx) -> list[Message]:
            raise RuntimeError("llm down")

    inner = await seeded(ctx, "a", "b")
    with pytest.raises(RuntimeError, match="llm down"):
        await CompactedMemory(inner, Broken()).query("", k=2, ctx=ctx)


# === shared decorator behaviour ===================================================


@pytest.mark.parametrize(
    "wrap",
    [lambda m: ReadOnlyMemory(m), lambda m: ScopedMemory(m), lambda m: CachedMemory(m),
     lambda m: CompactedMemory(m, Truncate(100))],
)
async def test_decorators_are_invisible_in_attribution(ctx: Ctx, wrap: Any) -> None:
    inner = await seeded(ctx, "fact", name="vector")
    deco = wrap(inner)
    assert deco.name == "vector"
    assert [i.source for i in await deco.query("", k=1, ctx=ctx)] == ["vector"]


@pytest.mark.parametrize(
    "build",
    [lambda: ReadOnlyMemory(object()), lambda: ScopedMemory(object()),
     lambda: CachedMemory(object()), lambda: CompactedMemory(object(), Truncate(1))],
)
def test_decorators_reject_a_non_source(build: Any) -> None:
    with pytest.raises(TypeError, match="inner"):
        build()
