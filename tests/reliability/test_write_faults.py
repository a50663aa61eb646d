"""Writes that fail, on real stores: the error's split is what each member holds.

tests/test_composite.py proves the split over list-backed fakes. Here the members are
real stores (InMemoryVectorStore, SQLite on disk, LocalFiles per tenant, a lexical
half, read-only guards), each behind a fault injector that fails or stalls past the
timeout on its FIRST write without touching the store. After the write, every member is
read back through its own ``query``: ``accepted`` members hold the batch exactly once,
``refused`` and ``failed`` ones hold nothing. Replaying the failed members alone then
converges: every writable member holds the batch exactly once, nothing duplicated.
"""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentkit.kernel import Ctx, Scope
from agentkit.kernel.errors import CompositeWriteError, MemoryWriteRefused
from agentkit.state.memory import (
    CompositeMemory,
    LexicalMemory,
    MemoryItem,
    MemorySource,
    ReadOnlyMemory,
    VectorMemory,
    files_per_scope,
)
from agentkit.state.memory._protocol import accepts_writes
from agentkit.vector import HashingEmbedder, InMemoryVectorStore
from agentkit.vector.sqlite import SQLiteVectorStore

CTX = Ctx(Scope("acme", "support"))
KINDS = [
    "mem-ok", "mem-fail", "mem-slow",
    "sqlite-ok", "sqlite-fail", "sqlite-slow",
    "files-ok", "files-fail", "files-slow",
    "lexical", "ro-ignore", "ro-refuse",
]  # fmt: skip


class Faulty:
    """Fails (raises, or stalls until cancelled) on its first write, before the store."""

    def __init__(self, inner: MemorySource, mode: str) -> None:
        self.inner = inner
        self.name = inner.name
        self.mode = mode
        self.attempts = 0

    @property
    def accepts_writes(self) -> bool:
        return accepts_writes(self.inner)

    async def query(
        self, query: str, *, k: int, ctx: Ctx, where: dict[str, Any] | None = None
    ) -> list[MemoryItem]:
        return await self.inner.query(query, k=k, ctx=ctx, where=where)

    async def write(self, items: Iterable[MemoryItem], *, ctx: Ctx) -> None:
        self.attempts += 1
        if self.attempts == 1 and self.mode == "fail":
            raise ConnectionError("transient")
        if self.attempts == 1 and self.mode == "slow":
            await asyncio.sleep(10)  # the composite's timeout cancels this
        await self.inner.write(items, ctx=ctx)


async def held(member: Any) -> list[str]:
    """What a member holds of the batch, read back through the store itself."""
    source = member.inner if isinstance(member, (Faulty, ReadOnlyMemory)) else member
    if isinstance(source, ReadOnlyMemory):
        source = source.inner
    items = await source.query("fact zq", k=1000, ctx=CTX)
    return sorted(i.content for i in items if "zq" in i.content)


def build(kind: str, i: int, root: Path, closers: list[Any]) -> Any:
    emb = HashingEmbedder(dim=32)
    store, _, mode = kind.partition("-")
    name = f"{kind}#{i}"
    if store == "mem":
        return Faulty(VectorMemory(InMemoryVectorStore(emb), name=name), mode)
    if store in ("sqlite", "lexical"):
        db = SQLiteVectorStore(root / f"{i}.db", embedder=emb)
        closers.append(db.close)
        if store == "lexical":
            return LexicalMemory(db, name=name)
        return Faulty(VectorMemory(db, name=name), mode)
    if store == "files":
        folder = root / f"files{i}"
        folder.mkdir()
        return Faulty(files_per_scope(folder, name=name), mode)
    inner = VectorMemory(InMemoryVectorStore(emb), name=name)
    return ReadOnlyMemory(inner, on_write="ignore" if mode == "ignore" else "refuse")


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    kinds=st.lists(st.sampled_from(KINDS), min_size=1, max_size=5),
    n_items=st.integers(min_value=1, max_value=4),
)
def test_split_matches_what_real_stores_hold_and_replay_converges(
    kinds: list[str], n_items: int
) -> None:
    async def scenario() -> None:
        closers: list[Any] = []
        with tempfile.TemporaryDirectory() as tmp:
            members = [build(kind, i, Path(tmp), closers) for i, kind in enumerate(kinds)]
            try:
                await check(members, n_items)
            finally:
                for close in closers:
                    await close()

    asyncio.run(scenario())


async def check(members: list[Any], n_items: int) -> None:
    batch = [
        MemoryItem(f"fact {j} zq", "caller", metadata={"id": f"f{j}", "path": f"/f{j}.md"})
        for j in range(n_items)
    ]
    contents = sorted(i.content for i in batch)
    by_name = {m.name: m for m in members}
    try:
        # Generous timeout: only the injected stall may hit it, never a loaded disk.
        await CompositeMemory(members, timeout=0.5).write(batch, ctx=CTX)
    except CompositeWriteError as err:
        accepted, refused, failed = err.accepted, err.refused, dict(err.failed)
    else:
        refused = [m.name for m in members if not accepts_writes(m)]
        accepted = [m.name for m in members if m.name not in refused]
        failed = {}
    assert sorted([*accepted, *refused, *failed]) == sorted(by_name)
    for name in accepted:
        assert await held(by_name[name]) == contents, f"{name} was reported accepted"
    for name in [*refused, *failed]:
        assert await held(by_name[name]) == [], f"{name} was reported not committed"
    for name, exc in failed.items():
        assert isinstance(exc, (ConnectionError, TimeoutError, MemoryWriteRefused)), (name, exc)

    retry = [by_name[name] for name in failed]
    if retry:
        try:
            await CompositeMemory(retry, timeout=5).write(batch, ctx=CTX)
        except CompositeWriteError as err:
            assert all(isinstance(e, MemoryWriteRefused) for e in err.failed.values())
    for m in members:
        writable = accepts_writes(m) and not isinstance(m, ReadOnlyMemory)
        assert await held(m) == (contents if writable else []), m.name


class SlowCommitStore(SQLiteVectorStore):
    """A real SQLite store whose worker thread is slow inside the write (failure injection)."""

    def _upsert_sync(self, *args: Any) -> None:
        import time

        time.sleep(0.3)  # on the store's own thread: asyncio cannot interrupt it
        super()._upsert_sync(*args)


async def test_a_write_reported_timed_out_does_not_land_afterwards(tmp_path: Path) -> None:
    """A member filed under ``failed`` must not commit once the caller has given up.

    The timeout cancels the awaiting task, but the store's worker thread is already
    inside the write; if it goes on to COMMIT, the split says "failed" about a member
    that holds the batch (and replaying "failed members only" writes id-less items twice).
    """
    store = SlowCommitStore(tmp_path / "s.db", embedder=HashingEmbedder(dim=32))
    try:
        member = VectorMemory(store, name="sqlite")
        batch = [MemoryItem(f"fact {j} zq", "caller", metadata={"id": f"f{j}"}) for j in range(3)]
        try:
            await CompositeMemory([member], timeout=0.1).write(batch, ctx=CTX)
        except CompositeWriteError as err:
            assert isinstance(err.failed["sqlite"], TimeoutError)
        else:
            raise AssertionError("the write should have timed out")
        await asyncio.sleep(0.6)  # let the worker thread finish whatever it was doing
        assert await store.count(scope=CTX.scope) == 0, (
            "reported failed (timed out), yet the batch was committed afterwards"
        )
    finally:
        await store.close()
