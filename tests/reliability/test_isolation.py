"""Tenant isolation, as a property: random stacks, random traffic, nothing crosses scopes.

Hypothesis builds a stack from every composite (CompositeMemory, SequentialMemory), every
decorator (ScopedMemory, CachedMemory with and without strict_scope, CompactedMemory,
ReadOnlyMemory) and every store (InMemoryVectorStore, SQLiteVectorStore dense and lexical
on a real file, LocalFiles per tenant, LangChain's and LlamaIndex's in-memory stores through
the bridge ports), then drives it with an interleaving of writes and queries from several
tenants. Every item any call returns, including the partial results carried by a
CompositeQueryError, must carry the querying tenant's marker and no other. Tenants include
ids that a naive ``org/domain`` join would confuse, and one incomplete scope.
"""

from __future__ import annotations

import asyncio
import re
import tempfile
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from agentkit_langchain import AgentkitEmbeddings, LangChainVectorPort
from agentkit_llamaindex import AgentkitEmbedding, LlamaIndexVectorPort
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.vectorstores import InMemoryVectorStore as LCInMemoryVectorStore
from llama_index.core import VectorStoreIndex

from agentkit.kernel import Ctx, Message, Scope
from agentkit.kernel.errors import (
    CompositeQueryError,
    CompositeWriteError,
    InvalidFilter,
    MemoryWriteRefused,
    ScopeViolation,
)
from agentkit.state.memory import (
    CachedMemory,
    CompactedMemory,
    CompositeMemory,
    HybridMemory,
    LexicalMemory,
    MemoryItem,
    MemorySource,
    PerScopeMemory,
    ReadOnlyMemory,
    ScopedMemory,
    SequentialMemory,
    VectorMemory,
    files_per_scope,
    rrf_rerank,
)
from agentkit.vector import Chunk, HashingEmbedder, InMemoryVectorStore, SQLiteVectorStore

# Five complete tenants (two pairs share an org or a domain, one pair differs only in
# where the "/" falls) and one incomplete scope, which every guard must refuse and every
# bucketing store must keep apart like any other.
TENANTS = [
    Scope("acme", "support"),
    Scope("acme", "sales"),
    Scope("globex", "support"),
    Scope("a/b", "c"),
    Scope("a", "b/c"),
    Scope("acme", None),
]
MARK = re.compile(r"tnt(\d)q")
WORDS = ["alpha", "beta", "gamma", "delta"]
QUERIES = ["alpha", "beta gamma", "delta alpha beta", "zzz"]
DIM = 64


def marker(t: int) -> str:
    return f"tnt{t}q"


def tenant_ok(items: Iterable[MemoryItem], t: int) -> None:
    """Every item names tenant ``t`` and only ``t``."""
    for item in items:
        found = set(MARK.findall(item.content))
        assert found == {str(t)}, (
            f"tenant {TENANTS[t]!r} got an item marked {sorted(found)}: {item!r}"
        )


# --- stack specs (plain data hypothesis can shrink) --------------------------------------

LEAVES = ["vector", "sqlite", "lexical", "hybrid", "files", "langchain", "llamaindex"]
leaf = st.sampled_from(LEAVES).map(lambda kind: ("leaf", kind))


def _extend(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(
        st.tuples(st.just("scoped"), children),
        st.tuples(st.just("cached"), st.booleans(), children),
        st.tuples(st.just("compacted"), st.sampled_from([None, 1, 2]), children),
        st.tuples(st.just("readonly"), st.sampled_from(["ignore", "refuse"]), children),
        st.tuples(
            st.just("composite"),
            st.sampled_from(["raise", "skip"]),
            st.sampled_from(["id", "content", None]),
            st.booleans(),  # rrf instead of score sort
            st.lists(children, min_size=1, max_size=3),
        ),
        st.tuples(
            st.just("sequential"),
            st.sampled_from(["raise", "skip"]),
            st.lists(children, min_size=1, max_size=3),
        ),
    )


stacks = st.recursive(leaf, _extend, max_leaves=5)

ops = st.lists(
    st.one_of(
        st.tuples(
            st.just("write"),
            st.integers(0, len(TENANTS) - 1),
            st.lists(st.sampled_from(WORDS), min_size=1, max_size=3),
            st.integers(1, 3),
        ),
        st.tuples(
            st.just("query"),
            st.integers(0, len(TENANTS) - 1),
            st.sampled_from(QUERIES),
            st.sampled_from([1, 3, 50]),
        ),
    ),
    min_size=1,
    max_size=12,
)


class Prefix:
    """A real compactor shape: rewrites each message, keeping the text."""

    async def compact(self, messages: list[Message], *, ctx: Ctx) -> list[Message]:
        return [Message(m.role, "[short] " + m.content) for m in messages]


@dataclass
class Harness:
    """Builds leaves on real files under one temp dir and remembers how to seed them."""

    root: Path
    seeders: list[Callable[[Scope, list[MemoryItem]], Awaitable[None]]] = field(
        default_factory=list
    )
    closers: list[Callable[[], Awaitable[None]]] = field(default_factory=list)
    count: int = 0

    def build(self, spec: Any) -> MemorySource:
        kind = spec[0]
        if kind == "leaf":
            return self._leaf(spec[1])
        if kind == "scoped":
            return ScopedMemory(self.build(spec[1]))
        if kind == "cached":
            return CachedMemory(self.build(spec[2]), strict_scope=spec[1])
        if kind == "compacted":
            return CompactedMemory(self.build(spec[2]), Prefix(), max_items=spec[1])
        if kind == "readonly":
            return ReadOnlyMemory(self.build(spec[2]), on_write=spec[1])
        if kind == "composite":
            _, on_error, dedupe, rrf, children = spec
            return CompositeMemory(
                [self.build(c) for c in children],
                reranker=rrf_rerank if rrf else None,
                dedupe=dedupe,
                on_error=on_error,
            )
        if kind == "sequential":
            _, on_error, children = spec
            return SequentialMemory([self.build(c) for c in children], on_error=on_error)
        raise AssertionError(spec)

    def _leaf(self, kind: str) -> MemorySource:
        self.count += 1
        n = self.count
        emb = HashingEmbedder(dim=DIM)
        if kind == "vector":
            vm = VectorMemory(InMemoryVectorStore(emb), name=f"vector{n}")
            self.seeders.append(lambda s, items: vm.write(items, ctx=Ctx(s)))
            return vm
        if kind in ("sqlite", "lexical", "hybrid"):
            store = SQLiteVectorStore(self.root / f"store{n}.db", embedder=emb)
            self.closers.append(store.close)

            async def seed(s: Scope, items: list[MemoryItem]) -> None:
                await store.upsert(
                    [Chunk(f"seed-{i}", it.content, {}) for i, it in enumerate(items)], scope=s
                )

            self.seeders.append(seed)
            if kind == "sqlite":
                return VectorMemory(store, name=f"sqlite{n}")
            if kind == "hybrid":
                return HybridMemory(store, name=f"hybrid{n}")
            return LexicalMemory(store, name=f"lexical{n}")
        if kind == "files":
            folder = self.root / f"files{n}"
            folder.mkdir()
            fm = files_per_scope(folder, name=f"files{n}")

            async def seed_files(s: Scope, items: list[MemoryItem]) -> None:
                if s.complete:  # PerScopeMemory has no bucket for an incomplete scope
                    await fm.write(items, ctx=Ctx(s))

            self.seeders.append(seed_files)
            return fm
        if kind == "langchain":
            port = LangChainVectorPort(LCInMemoryVectorStore(AgentkitEmbeddings(emb)))
            lc = VectorMemory(port, name=f"langchain{n}")
            self.seeders.append(lambda s, items: lc.write(items, ctx=Ctx(s)))
            return lc
        if kind == "llamaindex":
            index = VectorStoreIndex([], embed_model=AgentkitEmbedding(emb))
            li = VectorMemory(LlamaIndexVectorPort(index), name=f"llamaindex{n}")
            self.seeders.append(lambda s, items: li.write(items, ctx=Ctx(s)))
            return li
        raise AssertionError(kind)

    async def seed(self) -> None:
        for t, scope in enumerate(TENANTS):
            items = [
                MemoryItem(f"{w} seed {marker(t)}", "seed") for w in ("alpha beta", "gamma delta")
            ]
            for seeder in self.seeders:
                await seeder(scope, items)

    async def close(self) -> None:
        for closer in self.closers:
            await closer()


# Errors a stack may legitimately answer with; anything else fails the property.
def _refusal_ok(exc: BaseException, complete: bool) -> bool:
    if isinstance(exc, MemoryWriteRefused):
        return True
    if isinstance(exc, ScopeViolation):
        return not complete  # a complete scope is never refused
    if isinstance(exc, CompositeWriteError):
        return all(_refusal_ok(e, complete) for e in exc.failed.values())
    if isinstance(exc, CompositeQueryError):
        return all(_refusal_ok(e, complete) for e in exc.failed.values())
    return False


async def run_traffic(stack: MemorySource, harness: Harness, traffic: list[Any]) -> None:
    written = 0
    for op in traffic:
        kind, t = op[0], op[1]
        ctx = Ctx(TENANTS[t])
        complete = TENANTS[t].complete
        if kind == "write":
            _, _, words, n = op
            batch = [
                MemoryItem(f"{' '.join(words)} {marker(t)} w{written + i}", "caller")
                for i in range(n)
            ]
            written += n
            try:
                await stack.write(batch, ctx=ctx)
            except Exception as exc:
                assert _refusal_ok(exc, complete), repr(exc)
            continue
        _, _, text, k = op
        try:
            got = await stack.query(text, k=k, ctx=ctx)
        except CompositeQueryError as exc:
            assert _refusal_ok(exc, complete), repr(exc)
            for items in exc.succeeded.values():
                tenant_ok(items, t)  # partial answers must not leak either
            continue
        except ScopeViolation:
            assert not complete
            continue
        assert len(got) <= k
        tenant_ok(got, t)

    # Liveness: each complete tenant finds its own seeded facts through the stack, so the
    # property above is not passing because the stack answers nothing.
    for t, scope in enumerate(TENANTS):
        if not scope.complete:
            continue
        got = await stack.query(f"alpha beta gamma delta {marker(t)}", k=50, ctx=Ctx(scope))
        tenant_ok(got, t)
        assert got, f"tenant {scope!r} recalled nothing of its own through {stack!r}"


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(spec=stacks, traffic=ops)
def test_no_item_crosses_tenants_in_any_stack(spec: Any, traffic: list[Any]) -> None:
    async def scenario() -> None:
        with tempfile.TemporaryDirectory() as tmp:
            harness = Harness(Path(tmp))
            stack = harness.build(spec)
            try:
                await harness.seed()
                await run_traffic(stack, harness, traffic)
            finally:
                await harness.close()

    asyncio.run(scenario())


# --- every store alone, with the same traffic: the leaves must hold on their own ---------


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(kind=st.sampled_from(LEAVES), traffic=ops)
def test_every_store_keeps_tenants_apart(kind: str, traffic: list[Any]) -> None:
    async def scenario() -> None:
        with tempfile.TemporaryDirectory() as tmp:
            harness = Harness(Path(tmp))
            stack = harness.build(("leaf", kind))
            try:
                await harness.seed()
                await run_traffic(stack, harness, traffic)
            finally:
                await harness.close()

    asyncio.run(scenario())


# --- CachedMemory: an entry is never served to another tenant ---------------------------


class TenantEcho:
    """Answers with one item naming the asking scope, and counts what reached it."""

    name = "echo"

    def __init__(self) -> None:
        self.calls: list[tuple[Scope, str, int]] = []

    async def query(
        self, query: str, *, k: int, ctx: Ctx, where: dict[str, Any] | None = None
    ) -> list[MemoryItem]:
        self.calls.append((ctx.scope, query, k))
        t = TENANTS.index(ctx.scope)
        return [MemoryItem(f"{query} {marker(t)}", self.name)]

    async def write(self, items: Iterable[MemoryItem], *, ctx: Ctx) -> None:
        return None


@settings(max_examples=40, deadline=None)
@given(
    strict=st.booleans(),
    calls=st.lists(
        st.tuples(st.integers(0, len(TENANTS) - 1), st.sampled_from(QUERIES[:2]), st.just(3)),
        min_size=1,
        max_size=30,
    ),
)
def test_cache_never_serves_one_tenants_entry_to_another(
    strict: bool, calls: list[tuple[int, str, int]]
) -> None:
    async def scenario() -> None:
        echo = TenantEcho()
        cache = CachedMemory(echo, strict_scope=strict, max_entries=4)
        for t, text, k in calls:
            scope = TENANTS[t]
            if strict and not scope.complete:
                try:
                    await cache.query(text, k=k, ctx=Ctx(scope))
                except ScopeViolation:
                    continue
                raise AssertionError("strict_scope served an incomplete scope")
            before = len(echo.calls)
            got = await cache.query(text, k=k, ctx=Ctx(scope))
            tenant_ok(got, t)
            if len(echo.calls) == before:  # a hit: this very tenant asked it before
                assert any(c[0] == scope and c[1] == text for c in echo.calls)

    asyncio.run(scenario())


# --- PerScopeMemory: the way to make a scope-less backend multi-tenant -------------------


async def test_files_per_scope_gives_each_tenant_its_own_root(tmp_path: Path) -> None:
    mem = files_per_scope(tmp_path)
    for t, scope in enumerate(TENANTS[:5]):
        await mem.write(
            [MemoryItem(f"shared words {marker(t)}", "u", metadata={"path": "/same.md"})],
            ctx=Ctx(scope),
        )
    for t, scope in enumerate(TENANTS[:5]):
        got = await mem.query("shared words", k=10, ctx=Ctx(scope))
        assert [i.content for i in got] == [f"shared words {marker(t)}"]
    # "a/b"+"c" and "a"+"b/c" are two directories, and no id can climb out of the root.
    assert len(set(mem.scopes)) == 5
    assert len(_tree(tmp_path, "*/*")) == 5
    await mem.write([MemoryItem(f"evil {marker(0)}", "u")], ctx=Ctx(Scope("..", "..")))
    files = _tree(tmp_path, "**/*.md")
    assert len(files) == 6 and all(".." not in f.split("/") for f in files)
    assert "s-%2E%2E/s-%2E%2E" in {f.rsplit("/", 1)[0] for f in files}


def _tree(root: Path, pattern: str) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.glob(pattern))


async def test_per_scope_refuses_incomplete_scopes_before_building(tmp_path: Path) -> None:
    built: list[Scope] = []

    def factory(scope: Scope) -> MemorySource:
        built.append(scope)
        return VectorMemory(InMemoryVectorStore(HashingEmbedder(dim=DIM)))

    mem = PerScopeMemory(factory)
    for scope in (Scope(), Scope("acme", None), Scope(None, "support")):
        for call in (
            mem.query("x", k=1, ctx=Ctx(scope)),
            mem.write([MemoryItem("x", "u")], ctx=Ctx(scope)),
        ):
            try:
                await call
            except ScopeViolation as exc:
                assert "complete scope" in str(exc)
            else:
                raise AssertionError(f"{scope!r} was served")
    assert built == []


async def test_per_scope_builds_once_under_a_race() -> None:
    built: list[Scope] = []

    async def factory(scope: Scope) -> MemorySource:
        built.append(scope)
        await asyncio.sleep(0.02)  # first calls overlap while this one is building
        return VectorMemory(InMemoryVectorStore(HashingEmbedder(dim=DIM)))

    mem = PerScopeMemory(factory)
    ctx = Ctx(Scope("acme", "support"))
    await asyncio.gather(*(mem.query("x", k=1, ctx=ctx) for _ in range(10)))
    assert built == [Scope("acme", "support")]


async def test_per_scope_factory_failure_is_retried_next_time() -> None:
    attempts = 0

    def factory(scope: Scope) -> MemorySource:
        nonlocal attempts
        attempts += 1
        if attempts == 1:
            raise OSError("disk not mounted yet")
        return VectorMemory(InMemoryVectorStore(HashingEmbedder(dim=DIM)))

    mem = PerScopeMemory(factory)
    ctx = Ctx(Scope("acme", "support"))
    try:
        await mem.query("x", k=1, ctx=ctx)
    except OSError:
        pass
    else:
        raise AssertionError("factory failure swallowed")
    assert await mem.query("x", k=1, ctx=ctx) == []
    assert attempts == 2


# --- the bridges keep the scope in metadata: it must not be spoofable ---------------------


async def test_bridge_scope_stamps_cannot_be_spoofed_by_where_or_metadata() -> None:
    """A ``where`` naming the stamp keys cannot widen the scope, and a write cannot set them."""
    emb = HashingEmbedder(dim=DIM)
    ports: list[Any] = [
        LangChainVectorPort(LCInMemoryVectorStore(AgentkitEmbeddings(emb))),
        LlamaIndexVectorPort(VectorStoreIndex([], embed_model=AgentkitEmbedding(emb))),
    ]
    acme, globex = Ctx(TENANTS[0]), Ctx(TENANTS[2])
    for port in ports:
        mem = VectorMemory(port)
        await mem.write([MemoryItem(f"private alpha {marker(2)}", "u")], ctx=globex)
        await mem.write([MemoryItem(f"own alpha {marker(0)}", "u")], ctx=acme)
        for where in (
            {"agentkit_org_id": "globex"},
            {"agentkit_org_id": ["acme", "globex"], "agentkit_domain_id": "support"},
        ):
            # Refused outright, naming the stamp: the scope comes from ctx, never a filter.
            with pytest.raises(InvalidFilter, match="agentkit_org_id"):
                await mem.query("alpha", k=10, ctx=acme, where=where)
        spoof = Chunk("x", f"spoofed alpha {marker(0)}", {"agentkit_org_id": "globex"})
        try:
            await port.upsert([spoof], scope=acme.scope)
        except ValueError as exc:  # InvalidArgument: the key is reserved
            assert "reserved" in str(exc)
        got = await mem.query("alpha", k=10, ctx=globex)
        tenant_ok(got, 2)
        assert len(got) == 1
