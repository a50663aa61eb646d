"""kernel.md: the supporting types at their documented import paths."""

from __future__ import annotations

import asyncio
import dataclasses
import os
import threading
import time

import numpy as np
import pytest

from agentkit.kernel import AgentkitError, Ctx, Message, Observation, Scope, Timeline

# --- Scope -------------------------------------------------------------------------


def test_scope_defaults_are_unset_and_incomplete() -> None:
    s = Scope()
    assert s.org_id is None and s.domain_id is None
    assert not s.complete


def test_scope_is_frozen_and_hashable() -> None:
    s = Scope("acme", "support")
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.org_id = "other"  # type: ignore[misc]
    assert {s: 1}[Scope("acme", "support")] == 1
    assert hash(s) == hash(Scope("acme", "support"))


def test_scope_complete_only_when_both_ids_set() -> None:
    assert Scope("a", "b").complete
    assert not Scope("a", None).complete
    assert not Scope(None, "b").complete


def test_scope_empty_string_is_unset() -> None:
    # "A Scope id that is None or "" is unset."
    assert not Scope("", "b").complete
    assert not Scope("a", "").complete
    assert Scope("", "") == Scope(None, None) == Scope()


# --- Ctx / Timeline / Observation -------------------------------------------------------


def test_ctx_defaults() -> None:
    c = Ctx()
    assert c.scope == Scope()
    assert isinstance(c.run_id, str) and c.run_id
    assert isinstance(c.timeline, Timeline)
    assert len(c.timeline) == 0


def test_ctx_run_id_fresh_and_timeline_not_shared() -> None:
    a, b = Ctx(), Ctx()
    assert a.run_id != b.run_id
    assert a.timeline is not b.timeline
    a.observe("x.y")
    assert len(b.timeline) == 0


def test_ctx_run_id_and_timeline_are_keyword_only() -> None:
    tl = Timeline()
    c = Ctx(Scope("a", "b"), run_id="r1", timeline=tl)
    assert c.run_id == "r1" and c.timeline is tl
    with pytest.raises(TypeError):
        Ctx(Scope("a", "b"), "r1")  # type: ignore[misc]


def test_observe_appends_and_returns_observation() -> None:
    c = Ctx()
    before = time.time()
    obs = c.observe("memory.write_refused", source="kb", n=2)
    after = time.time()
    assert isinstance(obs, Observation)
    assert obs.kind == "memory.write_refused"
    assert dict(obs.data) == {"source": "kb", "n": 2}
    assert before - 1 <= obs.at <= after + 1
    assert list(c.timeline) == [obs]


def test_timeline_order_len_and_of() -> None:
    c = Ctx()
    o1 = c.observe("a.one", i=1)
    o2 = c.observe("b.two", i=2)
    o3 = c.observe("a.one", i=3)
    assert len(c.timeline) == 3
    assert list(c.timeline) == [o1, o2, o3]
    assert c.timeline.of("a.one") == [o1, o3]
    assert c.timeline.of("missing.kind") == []


def test_message_is_frozen_dataclass() -> None:
    m = Message("user", "hi")
    assert (m.role, m.content) == ("user", "hi")
    assert dataclasses.is_dataclass(m)
    with pytest.raises(dataclasses.FrozenInstanceError):
        m.content = "bye"  # type: ignore[misc]


# --- error tree ----------------------------------------------------------------------


def test_error_tree() -> None:
    from agentkit.state.memory import CompositeWriteError, MemoryWriteRefused

    assert issubclass(AgentkitError, Exception)
    assert issubclass(CompositeWriteError, AgentkitError)
    assert issubclass(CompositeWriteError, RuntimeError)
    assert issubclass(MemoryWriteRefused, AgentkitError)
    assert not issubclass(MemoryWriteRefused, PermissionError)
    assert not issubclass(MemoryWriteRefused, ValueError)


def test_composite_write_error_is_keyword_only_with_refused_default() -> None:
    from agentkit.state.memory import CompositeWriteError

    boom = RuntimeError("down")
    err = CompositeWriteError(accepted=["a"], failed={"b": boom})
    assert err.accepted == ["a"]
    assert err.failed == {"b": boom}
    assert not err.refused  # backward compatible: no refused bucket given
    err2 = CompositeWriteError(accepted=[], failed={"b": boom}, refused=["ro"])
    assert list(err2.refused) == ["ro"]
    with pytest.raises(TypeError):
        CompositeWriteError(["a"], {"b": boom})  # type: ignore[misc]


def test_memory_write_refused_attributes() -> None:
    from agentkit.state.memory import MemoryWriteRefused

    err = MemoryWriteRefused(source="registry", n=0)
    assert err.source == "registry" and err.n == 0
    assert "registry" in str(err)
    with pytest.raises(TypeError):
        MemoryWriteRefused("registry", 0)  # type: ignore[misc]


# --- journal / context ----------------------------------------------------------------


def test_mutation_journal_records_in_order() -> None:
    from agentkit.state.journal import MutationJournal

    j: MutationJournal[str] = MutationJournal()
    assert len(j) == 0
    j.record("a")
    j.record("b")
    j.record("c")
    assert j.entries() == ["a", "b", "c"]
    assert len(j) == 3


def test_working_context_scratchpad_is_plain_mutable_dict() -> None:
    from agentkit.state.context import WorkingContext

    a, b = WorkingContext(), WorkingContext()
    assert isinstance(a.scratchpad, dict)
    a.scratchpad["k"] = 1
    assert a.scratchpad == {"k": 1}
    assert b.scratchpad == {}


# --- files ---------------------------------------------------------------------------


@pytest.mark.parametrize("impl", ["memory", "local"])
async def test_files_create_view_delete(impl: str, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from agentkit.state.files import InMemoryFiles, LocalFiles

    files = InMemoryFiles() if impl == "memory" else LocalFiles(tmp_path)
    await files.create("/notes/sub/a.md", "alpha")  # parents are made
    assert await files.view("/notes/sub/a.md") == "alpha"
    await files.create("/notes/sub/a.md", "beta")  # overwrite
    assert await files.view("/notes/sub/a.md") == "beta"
    await files.create("/notes/b.md", "b")
    listing = (await files.view("/notes")).splitlines()
    assert sorted(listing) == ["b.md", "sub/"]
    root = (await files.view("/")).splitlines()
    assert root == ["notes/"]
    await files.delete("/notes/b.md")
    with pytest.raises(FileNotFoundError):
        await files.view("/notes/b.md")
    with pytest.raises(FileNotFoundError):
        await files.view("/nowhere.md")


async def test_local_files_writes_real_files(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from agentkit.state.files import LocalFiles

    files = LocalFiles(tmp_path)
    await files.create("/d/x.txt", "on disk")
    assert (tmp_path / "d" / "x.txt").read_text() == "on disk"
    (tmp_path / "d" / "y.txt").write_text("from outside")
    assert await files.view("/d/y.txt") == "from outside"


@pytest.mark.parametrize(
    "path", ["/../escape.txt", "../escape.txt", "/a/../../escape.txt", "/a/b/../../../escape.txt"]
)
async def test_local_files_refuses_escape(tmp_path, path: str) -> None:  # type: ignore[no-untyped-def]
    from agentkit.state.files import LocalFiles

    root = tmp_path / "root"
    root.mkdir()
    files = LocalFiles(root)
    with pytest.raises(AgentkitError):
        await files.create(path, "x")
    assert not (tmp_path / "escape.txt").exists()
    (tmp_path / "escape.txt").write_text("secret")
    with pytest.raises(AgentkitError):
        await files.view(path)
    with pytest.raises(AgentkitError):
        await files.delete(path)
    assert (tmp_path / "escape.txt").read_text() == "secret"


async def test_local_files_absolute_trick_stays_inside(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from agentkit.state.files import LocalFiles

    root = tmp_path / "root"
    root.mkdir()
    outside = tmp_path / "outside.txt"
    outside.write_text("secret")
    files = LocalFiles(root)
    # The outside file's absolute path, handed over as a "/"-rooted path.
    try:
        text = await files.view(str(outside))
    except (AgentkitError, FileNotFoundError):
        text = None
    assert text != "secret"
    try:
        await files.create(str(outside), "overwritten")
    except AgentkitError:
        pass
    assert outside.read_text() == "secret"


async def test_local_files_refuses_symlink_out(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from agentkit.state.files import LocalFiles

    root = tmp_path / "root"
    root.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("secret")
    os.symlink(outside, root / "link")
    files = LocalFiles(root)
    with pytest.raises(AgentkitError):
        await files.view("/link/secret.txt")
    with pytest.raises(AgentkitError):
        await files.create("/link/new.txt", "x")
    assert not (outside / "new.txt").exists()


# --- vector --------------------------------------------------------------------------


def test_chunk_shape() -> None:
    from agentkit.vector import Chunk

    c = Chunk("1", "text")
    assert (c.id, c.text, dict(c.metadata)) == ("1", "text", {})
    c2 = Chunk("2", "t", {"a": 1})
    assert dict(c2.metadata) == {"a": 1}


async def test_hashing_embedder_defaults_and_shape() -> None:
    from agentkit.vector import Embedder, HashingEmbedder

    e = HashingEmbedder()
    assert e.dim == 256
    assert isinstance(e, Embedder)
    out = await e.embed(["hello world", "another text", "hello world"])
    assert isinstance(out, np.ndarray)
    assert out.shape == (3, 256)
    assert out.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, atol=1e-5)
    np.testing.assert_array_equal(out[0], out[2])  # deterministic
    again = await HashingEmbedder().embed(["hello world"])
    np.testing.assert_array_equal(out[0], again[0])
    small = await HashingEmbedder(dim=32).embed(["x"])
    assert small.shape == (1, 32)


async def test_in_memory_store_is_a_vector_port_best_first() -> None:
    from agentkit.vector import Chunk, HashingEmbedder, InMemoryVectorStore, VectorPort

    store = InMemoryVectorStore(HashingEmbedder())
    assert isinstance(store, VectorPort)
    s = Scope("a", "b")
    await store.upsert(
        [
            Chunk("1", "the cat sat on the mat"),
            Chunk("2", "stock markets fell sharply today"),
            Chunk("3", "a cat and a dog"),
        ],
        scope=s,
    )
    hits = await store.search("cat sat mat", k=2, scope=s)
    assert len(hits) == 2
    assert hits[0][1].id == "1"
    assert hits[0][0] >= hits[1][0]
    assert all(isinstance(score, float) for score, _ in hits)


async def test_in_memory_store_default_embedder() -> None:
    from agentkit.vector import Chunk, InMemoryVectorStore

    store = InMemoryVectorStore()
    s = Scope("a", "b")
    await store.upsert([Chunk("1", "alpha beta")], scope=s)
    hits = await store.search("alpha beta", k=1, scope=s)
    assert [c.id for _, c in hits] == ["1"]


async def test_in_memory_store_scope_isolation_upsert_delete() -> None:
    from agentkit.vector import Chunk, InMemoryVectorStore

    store = InMemoryVectorStore()
    a, b = Scope("org", "a"), Scope("org", "b")
    await store.upsert([Chunk("1", "tenant a secret")], scope=a)
    await store.upsert([Chunk("1", "tenant b note")], scope=b)
    hits_a = await store.search("secret note", k=10, scope=a)
    hits_b = await store.search("secret note", k=10, scope=b)
    assert [c.text for _, c in hits_a] == ["tenant a secret"]
    assert [c.text for _, c in hits_b] == ["tenant b note"]
    assert await store.search("secret", k=10, scope=Scope()) == []
    # upsert replaces by id within the bucket
    await store.upsert([Chunk("1", "tenant a replaced")], scope=a)
    hits_a = await store.search("replaced", k=10, scope=a)
    assert [c.text for _, c in hits_a] == ["tenant a replaced"]
    # delete only touches its bucket
    await store.delete(["1"], scope=a)
    assert await store.search("anything", k=10, scope=a) == []
    assert [c.text for _, c in await store.search("note", k=10, scope=b)] == ["tenant b note"]


async def test_in_memory_store_where_semantics() -> None:
    from agentkit.vector import Chunk, InMemoryVectorStore

    store = InMemoryVectorStore()
    s = Scope("a", "b")
    await store.upsert(
        [
            Chunk("1", "doc one", {"lang": "en", "tag": "x"}),
            Chunk("2", "doc two", {"lang": "fr", "tag": "x"}),
            Chunk("3", "doc three", {"lang": "de"}),
            Chunk("4", "doc four", {}),
        ],
        scope=s,
    )

    async def ids(where):  # type: ignore[no-untyped-def]
        return sorted(c.id for _, c in await store.search("doc", k=10, scope=s, where=where))

    assert await ids({"lang": "en"}) == ["1"]
    assert await ids({"lang": ["en", "fr"]}) == ["1", "2"]
    assert await ids({"lang": ("de",)}) == ["3"]
    assert await ids({"lang": {"fr", "de"}}) == ["2", "3"]
    assert await ids({"tag": "x", "lang": "fr"}) == ["2"]
    assert await ids({"tag": "x"}) == ["1", "2"]  # missing key never matches
    assert await ids({"missing": None}) == []
    assert await ids(None) == ["1", "2", "3", "4"]


# --- tools ---------------------------------------------------------------------------


async def test_function_tool_defaults_and_invoke_async() -> None:
    from agentkit.tools import FunctionTool, Tool

    async def lookup(query: str, limit: int = 3) -> str:
        """Find things."""
        return f"{query}:{limit}"

    t = FunctionTool(lookup)
    assert t.name == "lookup"
    assert "Find things." in t.description
    assert isinstance(t, Tool)
    assert await t.invoke({"query": "q", "limit": 7}, ctx=Ctx()) == "q:7"
    named = FunctionTool(lookup, name="other", description="desc")
    assert (named.name, named.description) == ("other", "desc")


async def test_function_tool_sync_fn_runs_off_the_event_loop() -> None:
    from agentkit.tools import FunctionTool

    loop_thread = threading.get_ident()
    seen: list[int] = []
    spans: list[tuple[float, float]] = []

    def slow(x: int) -> int:
        seen.append(threading.get_ident())
        start = time.monotonic()
        time.sleep(0.2)
        spans.append((start, time.monotonic()))
        return x * 2

    t = FunctionTool(slow)
    results = await asyncio.gather(t.invoke({"x": 1}, ctx=Ctx()), t.invoke({"x": 2}, ctx=Ctx()))
    assert results == [2, 4]
    assert loop_thread not in seen
    # Two blocking calls overlapped: neither blocked the loop for the other.
    assert max(s for s, _ in spans) < min(e for _, e in spans)
