"""Writes that outlive their timeout: what the split says is what each member holds.

``CompositeMemory(timeout=...)`` can only cancel the coroutine awaiting a member; a
write already running on a worker thread goes on. Each test slows a real backend
INSIDE that thread (failure injection), lets the composite time it out, waits for
every thread to finish, then reads each member back: a member filed under
``failed`` holds nothing new, one filed under ``accepted`` (or a write that returned)
holds the batch.

Two shapes are covered: stalled before the commit point (the write must be dropped:
``failed``, nothing lands) and stalled after it (the write lands, so it must be
reported as done, never ``failed``).
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest
from agentkit_langchain import AgentkitEmbeddings, LangChainVectorPort
from agentkit_llamaindex import AgentkitEmbedding, LlamaIndexVectorPort
from langchain_core.documents import Document
from langchain_core.runnables.config import run_in_executor
from langchain_core.vectorstores import InMemoryVectorStore
from llama_index.core.schema import BaseNode
from llama_index.core.vector_stores import SimpleVectorStore

from agentkit.kernel import CommitGate, Ctx, Scope
from agentkit.kernel.errors import CompositeWriteError
from agentkit.state.files import LocalFiles
from agentkit.state.memory import CompositeMemory, FileMemory, MemoryItem, VectorMemory
from agentkit.vector import HashingEmbedder

CTX = Ctx(Scope("acme", "support"))
TIMEOUT = 0.1
STALL = 0.4  # well past TIMEOUT, inside the worker thread
SETTLE = 1.0  # long enough for every stalled thread (and any undo) to finish


def _batch() -> list[MemoryItem]:
    return [
        MemoryItem(f"fact {j} zebra", "caller", metadata={"id": f"f{j}", "path": f"/f{j}.md"})
        for j in range(3)
    ]


async def _held(member: Any) -> set[str]:
    return {item.content for item in await member.query("zebra", k=50, ctx=CTX)}


async def _split(members: list[Any]) -> tuple[list[str], dict[str, BaseException]]:
    """(accepted, failed) of a composite write of ``_batch()`` with a short timeout."""
    try:
        await CompositeMemory(members, timeout=TIMEOUT).write(_batch(), ctx=CTX)
    except CompositeWriteError as err:
        return list(err.accepted), dict(err.failed)
    return [m.name for m in members], {}


def _assert_split_matches(
    accepted: list[str], failed: dict[str, BaseException], held: dict[str, set[str]]
) -> None:
    everything = {item.content for item in _batch()}
    assert set(accepted) | set(failed) == set(held)
    for name in accepted:
        assert held[name] == everything, f"{name} reported accepted but holds {held[name]}"
    for name in failed:
        assert held[name] == set(), f"{name} reported failed but holds {held[name]}"


# -- LocalFiles (through FileMemory) --------------------------------------------------


class _StallBeforeReplace(LocalFiles):
    """The temp file is written slowly: the caller gives up before the rename."""

    def _create(self, path: str, text: str, gate: CommitGate | None = None) -> None:
        time.sleep(STALL)
        super()._create(path, text, gate)


class _SlowGate(CommitGate):
    def __init__(self, inner: CommitGate) -> None:
        super().__init__()
        self._inner = inner

    def enter(self) -> bool:
        passed = self._inner.enter()
        time.sleep(STALL)  # past the commit point: the rename will happen
        return passed


class _StallAfterGate(LocalFiles):
    def _create(self, path: str, text: str, gate: CommitGate | None = None) -> None:
        super()._create(path, text, None if gate is None else _SlowGate(gate))


async def test_files_timed_out_before_rename_hold_nothing(tmp_path: Path) -> None:
    (tmp_path / "slow").mkdir()
    (tmp_path / "fast").mkdir()
    slow = FileMemory(_StallBeforeReplace(tmp_path / "slow"), name="slow")
    fast = FileMemory(LocalFiles(tmp_path / "fast"), name="fast")
    accepted, failed = await _split([slow, fast])
    assert accepted == ["fast"]
    assert isinstance(failed["slow"], TimeoutError)
    await asyncio.sleep(SETTLE)
    _assert_split_matches(accepted, failed, {"slow": await _held(slow), "fast": await _held(fast)})
    assert list((tmp_path / "slow").iterdir()) == [], "no file and no stray temp file"


async def test_files_past_the_rename_are_reported_written(tmp_path: Path) -> None:
    member = FileMemory(_StallAfterGate(tmp_path), name="late")
    start = time.monotonic()
    accepted, failed = await _split([member])
    assert (accepted, failed) == (["late"], {})
    assert time.monotonic() - start >= STALL  # it waited for the rename it could not stop
    _assert_split_matches(accepted, failed, {"late": await _held(member)})


async def test_files_overwrite_timed_out_keeps_the_old_text(tmp_path: Path) -> None:
    (tmp_path / "f0.md").write_text("old zebra", encoding="utf-8")
    member = FileMemory(_StallBeforeReplace(tmp_path), name="slow")
    accepted, failed = await _split([member])
    assert accepted == [] and isinstance(failed["slow"], TimeoutError)
    await asyncio.sleep(SETTLE)
    assert await _held(member) == {"old zebra"}


# -- LangChain bridge -------------------------------------------------------------------


class _ThreadedLCStore(InMemoryVectorStore):
    """InMemoryVectorStore with LangChain's default async path: sync calls in a thread.

    ``stall`` seconds are slept inside that thread, as a slow remote store would.
    """

    stall = 0.0

    def add_documents(self, documents: list[Document], **kwargs: Any) -> list[str]:
        time.sleep(self.stall)
        return super().add_documents(documents, **kwargs)

    async def aadd_documents(self, documents: list[Document], **kwargs: Any) -> list[str]:
        return await run_in_executor(None, self.add_documents, documents, **kwargs)

    def delete(self, ids: list[str] | None = None, **kwargs: Any) -> None:
        time.sleep(self.stall)
        super().delete(ids, **kwargs)

    async def adelete(self, ids: list[str] | None = None, **kwargs: Any) -> None:
        await run_in_executor(None, self.delete, ids, **kwargs)


def _lc_member(name: str, stall: float) -> tuple[VectorMemory, _ThreadedLCStore]:
    store = _ThreadedLCStore(AgentkitEmbeddings(HashingEmbedder(dim=64)))
    store.stall = stall
    return VectorMemory(LangChainVectorPort(store), name=name), store


async def test_langchain_timed_out_write_is_undone() -> None:
    slow, slow_store = _lc_member("slow", STALL)
    fast, _ = _lc_member("fast", 0.0)
    accepted, failed = await _split([slow, fast])
    assert accepted == ["fast"]
    assert isinstance(failed["slow"], TimeoutError)
    await asyncio.sleep(SETTLE)
    _assert_split_matches(accepted, failed, {"slow": await _held(slow), "fast": await _held(fast)})
    assert slow_store.store == {}


async def test_langchain_timed_out_overwrite_restores_the_old_record() -> None:
    member, store = _lc_member("slow", 0.0)
    await member.write([MemoryItem("old zebra", "caller", metadata={"id": "f0"})], ctx=CTX)
    store.stall = STALL
    accepted, failed = await _split([member])
    assert accepted == [] and isinstance(failed["slow"], TimeoutError)
    await asyncio.sleep(SETTLE)
    store.stall = 0.0
    assert await _held(member) == {"old zebra"}


async def test_langchain_timed_out_delete_removes_nothing() -> None:
    member, store = _lc_member("slow", 0.0)
    await member.write(_batch(), ctx=CTX)
    store.stall = STALL
    port = member.vector
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(TIMEOUT):
            await port.delete(["f0", "f1"], scope=CTX.scope)
    await asyncio.sleep(SETTLE)
    store.stall = 0.0
    assert await _held(member) == {item.content for item in _batch()}


# -- LlamaIndex bridge ------------------------------------------------------------------


class _SlowEmbedding(AgentkitEmbedding):
    """Embeds in the worker thread slowly: the caller gives up before the index changes."""

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        time.sleep(STALL)
        return super()._get_text_embeddings(texts)


class _SlowAddStore(SimpleVectorStore):
    """Slow inside the index update itself, i.e. past the commit point."""

    def add(self, nodes: list[BaseNode], **kwargs: Any) -> list[str]:
        time.sleep(STALL)
        return super().add(nodes, **kwargs)


def _li_member(name: str, *, slow_embed: bool = False, slow_add: bool = False) -> VectorMemory:
    embedder = HashingEmbedder(dim=64)
    model = _SlowEmbedding(embedder) if slow_embed else AgentkitEmbedding(embedder)
    store = _SlowAddStore() if slow_add else SimpleVectorStore()
    return VectorMemory(LlamaIndexVectorPort.from_vector_store(store, embed_model=model), name=name)


async def test_llamaindex_timed_out_while_embedding_holds_nothing() -> None:
    slow = _li_member("slow", slow_embed=True)
    fast = _li_member("fast")
    accepted, failed = await _split([slow, fast])
    assert accepted == ["fast"]
    assert isinstance(failed["slow"], TimeoutError)
    await asyncio.sleep(SETTLE)
    slow.vector.index._embed_model = AgentkitEmbedding(HashingEmbedder(dim=64))  # fast reads
    _assert_split_matches(accepted, failed, {"slow": await _held(slow), "fast": await _held(fast)})


async def test_llamaindex_past_the_commit_point_is_reported_written() -> None:
    late = _li_member("late", slow_add=True)
    fast = _li_member("fast")
    start = time.monotonic()
    accepted, failed = await _split([late, fast])
    assert (sorted(accepted), failed) == (["fast", "late"], {})
    assert time.monotonic() - start >= STALL
    _assert_split_matches(accepted, failed, {"late": await _held(late), "fast": await _held(fast)})


class _StallBeforeUnlink(LocalFiles):
    def _delete(self, path: str, gate: CommitGate | None = None) -> None:
        time.sleep(STALL)
        super()._delete(path, gate)


async def test_files_timed_out_delete_removes_nothing(tmp_path: Path) -> None:
    (tmp_path / "f0.md").write_text("old zebra", encoding="utf-8")
    files = _StallBeforeUnlink(tmp_path)
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(TIMEOUT):
            await files.delete("/f0.md")
    await asyncio.sleep(SETTLE)
    assert (tmp_path / "f0.md").read_text(encoding="utf-8") == "old zebra"
