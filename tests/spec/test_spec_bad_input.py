"""Issue 2, "Bad input": a clear error naming the argument, before anything is touched;
a refused or failed write loses nothing stored before it."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest
from spec_support import FakeSource, RecordingPort, RecordingTool, UpperCompactor, ctx

from agentkit.kernel import AgentkitError, Scope
from agentkit.state.memory import (
    CachedMemory,
    CompactedMemory,
    CompositeMemory,
    FileMemory,
    JournalMemory,
    LexicalMemory,
    MemoryItem,
    MemoryWriteRefused,
    ReadOnlyMemory,
    ScopedMemory,
    ScratchpadMemory,
    SequentialMemory,
    ToolMemory,
    VectorMemory,
)
from agentkit.vector import Chunk, HashingEmbedder, InMemoryVectorStore


class RecordingFiles:
    """Duck-typed files backend that records any touch."""

    def __init__(self) -> None:
        self.touched: list[str] = []

    async def view(self, path: str) -> str:
        self.touched.append(f"view {path}")
        return ""

    async def create(self, path: str, text: str) -> None:
        self.touched.append(f"create {path}")

    async def delete(self, path: str) -> None:
        self.touched.append(f"delete {path}")


class RecordingLexical:
    def __init__(self) -> None:
        self.calls: list[Any] = []

    async def lexical_search(
        self, query: str, *, k: int, scope: Scope, where: Any = None
    ) -> list[Any]:
        self.calls.append(query)
        return []


def _journal(render_calls: list[Any]) -> JournalMemory[Any]:
    from agentkit.state.journal import MutationJournal

    j: MutationJournal[str] = MutationJournal()
    j.record("an entry")

    def render(e: str) -> str:
        render_calls.append(e)
        return e

    return JournalMemory(j, render=render)


def _scratchpad() -> ScratchpadMemory:
    from agentkit.state.context import WorkingContext

    wc = WorkingContext()
    wc.scratchpad["a"] = "value"
    return ScratchpadMemory(wc)


def _make(kind: str) -> tuple[Any, Callable[[], bool]]:
    """A source plus a probe that says whether its backend was touched."""
    if kind in ("composite", "sequential", "cached", "compacted", "readonly", "scoped"):
        fake = FakeSource("inner", [MemoryItem("x", "inner")])
        wrapped: Any = {
            "composite": lambda: CompositeMemory([fake]),
            "sequential": lambda: SequentialMemory([fake]),
            "cached": lambda: CachedMemory(fake),
            "compacted": lambda: CompactedMemory(fake, UpperCompactor()),
            "readonly": lambda: ReadOnlyMemory(fake),
            "scoped": lambda: ScopedMemory(fake),
        }[kind]()
        return wrapped, lambda: bool(fake.queries or fake.writes)
    if kind == "vector":
        port = RecordingPort()
        return VectorMemory(port), lambda: bool(port.searches or port.upserts)
    if kind == "files":
        files = RecordingFiles()
        return FileMemory(files), lambda: bool(files.touched)
    if kind == "journal":
        calls: list[Any] = []
        return _journal(calls), lambda: bool(calls)
    if kind == "scratchpad":
        return _scratchpad(), lambda: False
    if kind == "tool":
        tool = RecordingTool(["x"])
        return ToolMemory(tool), lambda: bool(tool.calls)
    if kind == "lexical":
        lex = RecordingLexical()
        return LexicalMemory(lex), lambda: bool(lex.calls)
    raise AssertionError(kind)


KINDS = [
    "composite",
    "sequential",
    "cached",
    "compacted",
    "readonly",
    "scoped",
    "vector",
    "files",
    "journal",
    "scratchpad",
    "tool",
    "lexical",
]


def _names(err: BaseException, arg: str) -> bool:
    return re.search(rf"\b{arg}\b", str(err)) is not None


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("k", [0, -1, 1.5, "3", None])
async def test_bad_k_is_refused_before_anything_is_touched(kind: str, k: Any) -> None:
    src, touched = _make(kind)
    with pytest.raises((TypeError, ValueError)) as info:
        await src.query("q", k=k, ctx=ctx())
    assert isinstance(info.value, AgentkitError)
    assert _names(info.value, "k"), str(info.value)
    assert not touched()


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("query", [None, 123, b"bytes", ["q"]])
async def test_non_str_query_is_refused_before_anything_is_touched(kind: str, query: Any) -> None:
    src, touched = _make(kind)
    with pytest.raises(TypeError) as info:
        await src.query(query, k=3, ctx=ctx())
    assert isinstance(info.value, AgentkitError)
    assert _names(info.value, "query"), str(info.value)
    assert not touched()


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("where", [[("a", 1)], "a=1", 42])
async def test_non_mapping_where_is_refused_before_anything_is_touched(
    kind: str, where: Any
) -> None:
    src, touched = _make(kind)
    with pytest.raises(TypeError) as info:
        await src.query("q", k=3, ctx=ctx(), where=where)
    assert isinstance(info.value, AgentkitError)
    assert _names(info.value, "where"), str(info.value)
    assert not touched()


async def test_k_bad_input_does_not_poison_the_cache() -> None:
    fake = FakeSource("inner", [MemoryItem("x", "inner")])
    cache = CachedMemory(fake)
    with pytest.raises(ValueError):
        await cache.query("q", k=0, ctx=ctx())
    assert [i.content for i in await cache.query("q", k=1, ctx=ctx())] == ["x"]
    assert len(fake.queries) == 1


# --- MemoryItem -----------------------------------------------------------------------


@pytest.mark.parametrize("content", [1, None, b"bytes", ["x"]])
def test_item_non_str_content(content: Any) -> None:
    with pytest.raises(TypeError) as info:
        MemoryItem(content, "src")
    assert isinstance(info.value, AgentkitError)
    assert _names(info.value, "content")


def test_item_empty_source() -> None:
    with pytest.raises(ValueError) as info:
        MemoryItem("c", "")
    assert isinstance(info.value, AgentkitError)
    assert _names(info.value, "source")


@pytest.mark.parametrize("source", [None, 3])
def test_item_non_str_source(source: Any) -> None:
    with pytest.raises((TypeError, ValueError)) as info:
        MemoryItem("c", source)
    assert _names(info.value, "source")


@pytest.mark.parametrize("score", [math.nan, math.inf, -math.inf, np.float64("nan")])
def test_item_non_finite_score(score: Any) -> None:
    with pytest.raises(ValueError) as info:
        MemoryItem("c", "s", score)
    assert isinstance(info.value, AgentkitError)
    assert _names(info.value, "score")


@pytest.mark.parametrize("score", ["0.5", [0.5], object()])
def test_item_non_number_score(score: Any) -> None:
    with pytest.raises(TypeError) as info:
        MemoryItem("c", "s", score)
    assert _names(info.value, "score")


def test_item_non_mapping_metadata() -> None:
    with pytest.raises(TypeError) as info:
        MemoryItem("c", "s", None, [("a", 1)])  # type: ignore[arg-type]
    assert _names(info.value, "metadata")


# --- policy values at construction ----------------------------------------------------


@pytest.mark.parametrize("dedupe", ["ids", "ID", "", "both", 1])
def test_unknown_dedupe_rejected_at_construction(dedupe: Any) -> None:
    with pytest.raises(ValueError) as info:
        CompositeMemory([FakeSource("a")], dedupe=dedupe)
    assert isinstance(info.value, AgentkitError)
    assert _names(info.value, "dedupe")


@pytest.mark.parametrize("on_write", ["drop", "REFUSE", "", None])
def test_unknown_on_write_rejected_naming_allowed_values(on_write: Any) -> None:
    inner = FakeSource("a")
    with pytest.raises(ValueError) as info:
        ReadOnlyMemory(inner, on_write=on_write)
    assert isinstance(info.value, AgentkitError)
    msg = str(info.value)
    assert "refuse" in msg and "ignore" in msg
    assert inner.queries == [] and inner.writes == []


# --- writes that fail lose nothing -----------------------------------------------------


async def _rows(store: InMemoryVectorStore, scope: Scope) -> dict[str, str]:
    return {c.id: c.text for _, c in await store.search("anything", k=100, scope=scope)}


async def test_refused_write_loses_nothing_stored_before() -> None:
    store = InMemoryVectorStore(HashingEmbedder())
    c = ctx()
    vm = VectorMemory(store, name="kb")
    await vm.write([MemoryItem("kept fact", "x", metadata={"id": "1"})], ctx=c)
    ro = ReadOnlyMemory(vm)
    with pytest.raises(MemoryWriteRefused):
        await ro.write([MemoryItem("overwrite", "kb", id="1")], ctx=c)
    ignoring = ReadOnlyMemory(vm, on_write="ignore")
    await ignoring.write([MemoryItem("overwrite", "kb", id="1")], ctx=c)
    assert await _rows(store, c.scope) == {"1": "kept fact"}


class FlakyEmbedder:
    """Fails on any batch containing BOOM; otherwise a real HashingEmbedder."""

    def __init__(self) -> None:
        self._inner = HashingEmbedder()
        self.dim = self._inner.dim

    async def embed(self, texts: Sequence[str]) -> Any:
        if any("BOOM" in t for t in texts):
            raise RuntimeError("embedding service down")
        return await self._inner.embed(texts)


async def test_failed_store_write_loses_nothing_stored_before() -> None:
    store = InMemoryVectorStore(FlakyEmbedder())
    s = Scope("a", "b")
    await store.upsert([Chunk("1", "alpha"), Chunk("2", "beta")], scope=s)
    with pytest.raises(RuntimeError):
        await store.upsert([Chunk("1", "BOOM replacement"), Chunk("3", "gamma")], scope=s)
    rows = await _rows(store, s)
    assert rows["1"] == "alpha" and rows["2"] == "beta"


async def test_failed_composite_write_keeps_other_members_data() -> None:
    store = InMemoryVectorStore(HashingEmbedder())
    c = ctx()
    vm = VectorMemory(store)
    await vm.write([MemoryItem("kept", "x", metadata={"id": "1"})], ctx=c)
    down = FakeSource("down", fail_write=RuntimeError("down"))
    with pytest.raises(AgentkitError):
        await CompositeMemory([vm, ReadOnlyMemory(FakeSource("ro")), down]).write(
            [MemoryItem("new", "x", metadata={"id": "2"})], ctx=c
        )
    assert await _rows(store, c.scope) == {"1": "kept", "2": "new"}


async def test_escaping_file_write_is_refused_and_loses_nothing(tmp_path: Any) -> None:
    from agentkit.state.files import LocalFiles

    root = tmp_path / "root"
    root.mkdir()
    files = LocalFiles(root)
    await files.create("/keep.md", "kept")
    fm = FileMemory(files)
    with pytest.raises(AgentkitError):
        await fm.write([MemoryItem("evil", "x", metadata={"path": "/../../evil.md"})], ctx=ctx())
    assert not (tmp_path / "evil.md").exists()
    assert await files.view("/keep.md") == "kept"


@pytest.mark.parametrize("kind", KINDS)
async def test_any_mapping_is_an_acceptable_where(kind: str) -> None:
    from types import MappingProxyType

    src, _ = _make(kind)
    where: Any = MappingProxyType({"path_prefix": "/"} if kind == "files" else {})
    if kind == "journal":
        where = MappingProxyType({"role": "user"})
    out = await src.query("q", k=2, ctx=ctx(), where=where)
    assert isinstance(out, list)


@pytest.mark.parametrize("adapter", ["as_grounder", "as_grounding_source"])
@pytest.mark.parametrize("k", [0, -3, "5"])
async def test_grounding_adapters_refuse_bad_k_before_touching_memory(adapter: str, k: Any) -> None:
    import agentkit.state.memory as memory

    fake = FakeSource("kb", [MemoryItem("x", "kb")])
    with pytest.raises((TypeError, ValueError)) as info:
        fn = getattr(memory, adapter)(fake, k=k)
        await fn(ctx(), "task")
    assert _names(info.value, "k")
    assert fake.queries == []
