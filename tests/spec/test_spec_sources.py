"""memory.md: the first-party sources — Vector, File, Journal, Scratchpad, Tool."""

from __future__ import annotations

import dataclasses
import hashlib
from typing import Any

import pytest
from spec_support import Bare, Entry, RecordingPort, RecordingTool, ctx

from agentkit.kernel import Ctx, Scope
from agentkit.state.memory import (
    FileMemory,
    JournalMemory,
    MemoryItem,
    MemorySource,
    ScratchpadMemory,
    ToolMemory,
    VectorMemory,
    default_parse,
)
from agentkit.vector import Chunk, HashingEmbedder, InMemoryVectorStore

# --- VectorMemory ----------------------------------------------------------------------


def store() -> InMemoryVectorStore:
    return InMemoryVectorStore(HashingEmbedder())


async def all_chunks(s: InMemoryVectorStore, scope: Scope) -> dict[str, Chunk]:
    return {c.id: c for _, c in await s.search("anything at all", k=1000, scope=scope)}


def test_vector_defaults() -> None:
    port = store()
    vm = VectorMemory(port)
    assert vm.vector is port
    assert vm.name == "vector"
    assert vm.where is None
    assert isinstance(vm, MemorySource)


async def test_vector_query_adapts_chunks_and_carries_id() -> None:
    port = RecordingPort(
        [(0.8, Chunk("c1", "alpha text", {"lang": "en"})), (0.3, Chunk("c2", "b"))]
    )
    out = await VectorMemory(port, name="kb").query("alpha", k=2, ctx=ctx())
    assert [(i.content, i.source, i.score, i.id) for i in out] == [
        ("alpha text", "kb", 0.8, "c1"),
        ("b", "kb", 0.3, "c2"),
    ]
    assert out[0].metadata["lang"] == "en"
    assert port.searches[0]["query"] == "alpha" and port.searches[0]["k"] == 2


async def test_vector_query_and_write_use_ctx_scope() -> None:
    port = RecordingPort()
    vm = VectorMemory(port)
    c = ctx("acme", "support")
    await vm.query("q", k=3, ctx=c)
    await vm.write([MemoryItem("x", "other")], ctx=c)
    assert port.searches[0]["scope"] == Scope("acme", "support")
    assert port.upserts[0]["scope"] == Scope("acme", "support")


async def test_vector_tenant_isolation() -> None:
    s = store()
    vm = VectorMemory(s)
    await vm.write([MemoryItem("tenant a secret plan", "x")], ctx=ctx("acme", "a"))
    assert await vm.query("secret plan", k=5, ctx=ctx("acme", "b")) == []
    assert await vm.query("secret plan", k=5, ctx=ctx("globex", "a")) == []
    hits = await vm.query("secret plan", k=5, ctx=ctx("acme", "a"))
    assert [i.content for i in hits] == ["tenant a secret plan"]


async def test_vector_where_merges_call_wins() -> None:
    port = RecordingPort()
    default = {"kind": "fact", "lang": "en"}
    vm = VectorMemory(port, where=default)
    await vm.query("q", k=1, ctx=ctx(), where={"lang": "fr", "topic": "x"})
    await vm.query("q", k=1, ctx=ctx())
    assert dict(port.searches[0]["where"]) == {"kind": "fact", "lang": "fr", "topic": "x"}
    assert dict(port.searches[1]["where"]) == {"kind": "fact", "lang": "en"}
    assert default == {"kind": "fact", "lang": "en"}  # the wired-in default is not mutated


async def test_vector_where_filters_real_store() -> None:
    s = store()
    vm = VectorMemory(s, where={"lang": "en"})
    c = ctx()
    await vm.write(
        [
            MemoryItem("hello english", "x", metadata={"lang": "en", "id": "1"}),
            MemoryItem("hello french", "x", metadata={"lang": "fr", "id": "2"}),
        ],
        ctx=c,
    )
    assert [i.id for i in await vm.query("hello", k=5, ctx=c)] == ["1"]
    assert [i.id for i in await vm.query("hello", k=5, ctx=c, where={"lang": "fr"})] == ["2"]


async def test_vector_constructor_where_is_not_attached_at_write() -> None:
    s = store()
    vm = VectorMemory(s, where={"kind": "fact"})
    c = ctx()
    await vm.write([MemoryItem("untagged", "x", metadata={"id": "u"})], ctx=c)
    chunks = await all_chunks(s, c.scope)
    assert "kind" not in chunks["u"].metadata
    await vm.write([MemoryItem("tagged", "x", metadata={"id": "t", "kind": "fact"})], ctx=c)
    assert [i.id for i in await vm.query("tagged", k=5, ctx=c)] == ["t"]


async def test_vector_write_without_ids_creates_distinct_rows_and_keeps_metadata() -> None:
    s = store()
    vm = VectorMemory(s)
    c = ctx()
    await vm.write([MemoryItem("one", "x", metadata={"tag": "a"}), MemoryItem("two", "x")], ctx=c)
    chunks = await all_chunks(s, c.scope)
    assert len(chunks) == 2
    assert {ch.text for ch in chunks.values()} == {"one", "two"}
    one = next(ch for ch in chunks.values() if ch.text == "one")
    assert one.metadata.get("tag") == "a"


async def test_vector_round_trip_updates_in_place() -> None:
    s = store()
    vm = VectorMemory(s)
    c = ctx()
    await vm.write(
        [MemoryItem("cats purr", "x", metadata={"id": "a"}), MemoryItem("dogs bark", "x")], ctx=c
    )
    [recalled] = await vm.query("cats purr", k=1, ctx=c)
    assert recalled.id == "a" and recalled.source == "vector"
    edited = dataclasses.replace(recalled, content="cats purr loudly")
    await vm.write([edited], ctx=c)
    chunks = await all_chunks(s, c.scope)
    assert len(chunks) == 2  # updated, not a second copy
    assert chunks["a"].text == "cats purr loudly"


async def test_vector_round_trip_works_under_a_custom_name() -> None:
    s = store()
    vm = VectorMemory(s, name="kb")
    c = ctx()
    await vm.write([MemoryItem("row text", "x")], ctx=c)
    [recalled] = await vm.query("row text", k=1, ctx=c)
    await vm.write([dataclasses.replace(recalled, content="row text v2")], ctx=c)
    chunks = await all_chunks(s, c.scope)
    assert [ch.text for ch in chunks.values()] == ["row text v2"]
    assert list(chunks) == [recalled.id]


async def test_vector_provenance_guard_foreign_id_never_overwrites() -> None:
    s = store()
    vm = VectorMemory(s)
    c = ctx()
    await vm.write([MemoryItem("vector fact three", "x", metadata={"id": "3"})], ctx=c)
    foreign = MemoryItem("journal row three", "journal", id="3")
    await vm.write([foreign], ctx=c)
    chunks = await all_chunks(s, c.scope)
    assert chunks["3"].text == "vector fact three"
    assert len(chunks) == 2
    assert any(ch.text == "journal row three" for ch in chunks.values())


async def test_vector_metadata_id_instructs_and_is_popped() -> None:
    s = store()
    vm = VectorMemory(s)
    c = ctx()
    await vm.write([MemoryItem("original", "x", metadata={"id": "3", "tag": "t"})], ctx=c)
    # A foreign item that INSTRUCTS the row via metadata["id"] wins over the missing provenance.
    await vm.write([MemoryItem("replacement", "journal", metadata={"id": "3"}, id="9")], ctx=c)
    chunks = await all_chunks(s, c.scope)
    assert set(chunks) == {"3"}
    assert chunks["3"].text == "replacement"
    assert "id" not in chunks["3"].metadata
    [hit] = await vm.query("replacement", k=1, ctx=c)
    assert hit.id == "3"
    assert "id" not in hit.metadata


async def test_vector_own_item_id_outranks_metadata_id_which_is_still_popped() -> None:
    s = store()
    vm = VectorMemory(s)
    c = ctx()
    await vm.write([MemoryItem("row three", "x", metadata={"id": "3"})], ctx=c)
    [recalled] = await vm.query("row three", k=1, ctx=c)
    clash = dataclasses.replace(
        recalled, content="row three v2", metadata={**recalled.metadata, "id": "5"}
    )
    await vm.write([clash], ctx=c)
    chunks = await all_chunks(s, c.scope)
    assert set(chunks) == {"3"}
    assert chunks["3"].text == "row three v2"
    assert "id" not in chunks["3"].metadata


async def test_vector_write_does_not_mutate_callers_item() -> None:
    vm = VectorMemory(store())
    item = MemoryItem("x", "x", metadata={"id": "1", "tag": "t"})
    await vm.write([item], ctx=ctx())
    assert item.metadata == {"id": "1", "tag": "t"}


# --- FileMemory ------------------------------------------------------------------------


async def test_file_memory_defaults_to_fresh_in_memory_files() -> None:
    from agentkit.state.files import InMemoryFiles

    a, b = FileMemory(), FileMemory(files=None)
    assert a.name == "files"
    assert isinstance(a.files, InMemoryFiles)
    assert a.files is not b.files
    c = ctx()
    await a.write([MemoryItem("hello", "x", metadata={"path": "/h.md"})], ctx=c)
    assert await b.query("hello", k=5, ctx=c) == []


async def _seed(files: Any) -> None:
    await files.create("/notes/a.md", "Cat and cat and CAT")
    await files.create("/notes/sub/b.md", "one cat here")
    await files.create("/notesX/c.md", "cat cat cat cat cat")
    await files.create("/other/d.md", "no felines at all")


@pytest.fixture(params=["memory", "local"])
def files(request: Any, tmp_path: Any) -> Any:
    from agentkit.state.files import InMemoryFiles, LocalFiles

    return InMemoryFiles() if request.param == "memory" else LocalFiles(tmp_path)


async def test_file_memory_scores_by_substring_count_and_drops_zero(files: Any) -> None:
    await _seed(files)
    fm = FileMemory(files)
    out = await fm.query("cat", k=10, ctx=ctx())
    assert [i.metadata["path"] for i in out] == ["/notesX/c.md", "/notes/a.md", "/notes/sub/b.md"]
    assert [i.score for i in out] == [5, 3, 1]
    assert all(i.source == "files" for i in out)
    assert out[1].content == "Cat and cat and CAT"
    assert "/other/d.md" not in [i.metadata["path"] for i in out]
    assert await fm.query("zebra", k=10, ctx=ctx()) == []


async def test_file_memory_top_k(files: Any) -> None:
    await _seed(files)
    out = await FileMemory(files).query("CAT", k=2, ctx=ctx())
    assert [i.metadata["path"] for i in out] == ["/notesX/c.md", "/notes/a.md"]


async def test_file_memory_path_prefix_is_a_directory(files: Any) -> None:
    await _seed(files)
    fm = FileMemory(files, name="notes")
    out = await fm.query("cat", k=10, ctx=ctx(), where={"path_prefix": "/notes"})
    assert sorted(i.metadata["path"] for i in out) == ["/notes/a.md", "/notes/sub/b.md"]
    assert all(i.source == "notes" for i in out)


async def test_file_memory_write_path_from_metadata_or_sha1(files: Any) -> None:
    fm = FileMemory(files)
    c = ctx()
    await fm.write(
        [
            MemoryItem("explicit path text", "x", metadata={"path": "/mem/explicit.md"}),
            MemoryItem("hashed text body", "x"),
        ],
        ctx=c,
    )
    assert await files.view("/mem/explicit.md") == "explicit path text"
    digest = hashlib.sha1(b"hashed text body").hexdigest()
    out = await fm.query("hashed", k=5, ctx=c)
    assert len(out) == 1
    assert digest in out[0].metadata["path"]
    assert await files.view(out[0].metadata["path"]) == "hashed text body"


class DictFiles:
    """A third-party files backend: only the duck-typed surface kernel.md fixes."""

    def __init__(self) -> None:
        self.data: dict[str, str] = {}

    async def view(self, path: str) -> str:
        if path in self.data:
            return self.data[path]
        prefix = path.rstrip("/") + "/"
        entries: set[str] = set()
        for p in self.data:
            if p.startswith(prefix):
                head, sep, _ = p[len(prefix) :].partition("/")
                entries.add(head + ("/" if sep else ""))
        if not entries:
            raise FileNotFoundError(path)
        return "\n".join(sorted(entries))

    async def create(self, path: str, text: str) -> None:
        self.data[path] = text

    async def delete(self, path: str) -> None:
        del self.data[path]


async def test_file_memory_over_a_duck_typed_backend() -> None:
    files = DictFiles()
    await _seed(files)
    fm = FileMemory(files)
    out = await fm.query("cat", k=10, ctx=ctx(), where={"path_prefix": "/notes"})
    assert [i.metadata["path"] for i in out] == ["/notes/a.md", "/notes/sub/b.md"]
    await fm.write([MemoryItem("written", "x", metadata={"path": "/w/x.md"})], ctx=ctx())
    assert files.data["/w/x.md"] == "written"


# --- JournalMemory ---------------------------------------------------------------------


def journal_of(*entries: Any) -> Any:
    from agentkit.state.journal import MutationJournal

    j: MutationJournal[Any] = MutationJournal()
    for e in entries:
        j.record(e)
    return j


def test_journal_defaults() -> None:
    jm = JournalMemory(journal_of(), render=str)
    assert jm.name == "journal"


async def test_journal_k_most_recent_newest_first_score_none() -> None:
    j = journal_of(*[Entry("user", f"msg {i}") for i in range(6)])
    jm = JournalMemory(j, render=lambda e: f"{e.role}: {e.text}")
    out = await jm.query("", k=3, ctx=ctx())
    assert [i.content for i in out] == ["user: msg 5", "user: msg 4", "user: msg 3"]
    assert all(i.score is None for i in out)
    assert all(i.source == "journal" for i in out)


async def test_journal_filters_first_then_takes_k_most_recent() -> None:
    texts = ["apple pie", "banana", "Apple juice", "cherry", "pineAPPLE", "date", "fig"]
    jm = JournalMemory(journal_of(*[Entry("user", t) for t in texts]), render=lambda e: e.text)
    out = await jm.query("APPLE", k=2, ctx=ctx())
    assert [i.content for i in out] == ["pineAPPLE", "Apple juice"]
    out = await jm.query("apple", k=10, ctx=ctx())
    assert [i.content for i in out] == ["pineAPPLE", "Apple juice", "apple pie"]


async def test_journal_role_filter_skips_entries_without_role() -> None:
    j = journal_of(Entry("user", "u1"), Entry("assistant", "a1"), Bare("bare"), Entry("user", "u2"))
    jm = JournalMemory(j, render=lambda e: e.text)
    out = await jm.query("", k=10, ctx=ctx(), where={"role": "user"})
    assert [i.content for i in out] == ["u2", "u1"]
    out = await jm.query("", k=10, ctx=ctx())
    assert [i.content for i in out] == ["u2", "bare", "a1", "u1"]


async def test_journal_write_is_a_no_op_and_says_so() -> None:
    j = journal_of(Entry("user", "u1"))
    jm = JournalMemory(j, render=lambda e: e.text)
    assert await jm.write([MemoryItem("injected", "x")], ctx=ctx()) is None
    assert len(j) == 1
    assert getattr(jm, "accepts_writes", True) is False


# --- ScratchpadMemory ------------------------------------------------------------------


async def test_scratchpad_items_carry_key_metadata() -> None:
    from agentkit.state.context import WorkingContext

    wc = WorkingContext()
    wc.scratchpad.update({"plan": "buy milk today", "count": 42, "other": "unrelated"})
    sp = ScratchpadMemory(wc)
    assert sp.name == "scratchpad"
    out = await sp.query("milk", k=5, ctx=ctx())
    assert len(out) == 1
    assert out[0].metadata == {"key": "plan"}
    assert "buy milk today" in out[0].content
    assert out[0].source == "scratchpad"
    # Non-str values are matched via str(value).
    out = await sp.query("42", k=5, ctx=ctx())
    assert [i.metadata["key"] for i in out] == ["count"]


async def test_scratchpad_reads_live_state() -> None:
    from agentkit.state.context import WorkingContext

    wc = WorkingContext()
    sp = ScratchpadMemory(wc, name="pad")
    assert await sp.query("late", k=5, ctx=ctx()) == []
    wc.scratchpad["note"] = "added late"
    out = await sp.query("late", k=5, ctx=ctx())
    assert [(i.source, i.metadata["key"]) for i in out] == [("pad", "note")]


# --- ToolMemory ------------------------------------------------------------------------


def test_tool_memory_defaults() -> None:
    tool = RecordingTool([])
    tm = ToolMemory(tool)
    assert tm.tool is tool
    assert tm.query_arg == "query"
    assert tm.result_to_items is None
    assert tm.name == "tool"


async def test_tool_memory_builds_args_and_passes_ctx() -> None:
    tool = RecordingTool(["r1"])
    c = ctx()
    await ToolMemory(tool).query("weather", k=4, ctx=c, where={"site": "bbc.co.uk"})
    args, seen_ctx = tool.calls[0]
    assert args == {"query": "weather", "limit": 4, "site": "bbc.co.uk"}
    assert seen_ctx is c
    await ToolMemory(tool, query_arg="q").query("x", k=1, ctx=c)
    assert tool.calls[1][0] == {"q": "x", "limit": 1}


async def test_tool_memory_default_parse_and_source_stamp() -> None:
    tool = RecordingTool({"results": [{"text": "a", "url": "u"}, {"snippet": "b"}]})
    out = await ToolMemory(tool, name="web").query("q", k=5, ctx=ctx())
    assert [i.content for i in out] == ["a", "b"]
    assert all(i.source == "web" for i in out)
    assert out[0].metadata["url"] == "u"


async def test_tool_memory_custom_parser_is_called_and_restamped() -> None:
    tool = RecordingTool("raw")
    seen: list[tuple[Any, str]] = []

    def parse(result: Any, query: str) -> list[MemoryItem]:
        seen.append((result, query))
        return [MemoryItem(f"parsed {result}", "someone-else", 0.4)]

    out = await ToolMemory(tool, result_to_items=parse, name="probe").query("qq", k=2, ctx=ctx())
    assert seen == [("raw", "qq")]
    assert [(i.content, i.source, i.score) for i in out] == [("parsed raw", "probe", 0.4)]


async def test_tool_memory_with_a_real_function_tool() -> None:
    from agentkit.tools import FunctionTool

    def search(query: str, limit: int, site: str = "any") -> list[str]:
        return [f"{query}@{site}#{i}" for i in range(limit)]

    out = await ToolMemory(FunctionTool(search)).query("x", k=2, ctx=ctx(), where={"site": "s"})
    assert [i.content for i in out] == ["x@s#0", "x@s#1"]
    assert all(i.source == "tool" for i in out)


async def test_tool_memory_write_is_a_no_op_and_says_so() -> None:
    tool = RecordingTool([])
    tm = ToolMemory(tool)
    assert await tm.write([MemoryItem("x", "y")], ctx=ctx()) is None
    assert tool.calls == []
    assert tm.accepts_writes is False


# --- LexicalMemory (design: any LexicalPort) -------------------------------------------


class CannedLexical:
    def __init__(self, hits: list[tuple[float, Chunk]]) -> None:
        self.hits = hits
        self.calls: list[dict[str, Any]] = []

    async def lexical_search(
        self, query: str, *, k: int, scope: Scope, where: Any = None
    ) -> list[tuple[float, Chunk]]:
        self.calls.append({"query": query, "k": k, "scope": scope, "where": where})
        return self.hits[:k]


async def test_lexical_memory_adapts_any_lexical_port() -> None:
    from agentkit.state.memory import LexicalMemory

    port = CannedLexical([(12.3, Chunk("r1", "bm25 hit", {"t": 1})), (4.0, Chunk("r2", "weaker"))])
    lm = LexicalMemory(port)
    assert lm.name == "lexical"
    c = ctx("o", "d")
    out = await lm.query("hit", k=2, ctx=c, where={"t": 1})
    assert [(i.content, i.source, i.score, i.id) for i in out] == [
        ("bm25 hit", "lexical", 12.3, "r1"),
        ("weaker", "lexical", 4.0, "r2"),
    ]
    assert port.calls[0]["scope"] == Scope("o", "d")
    assert dict(port.calls[0]["where"]) == {"t": 1}


# --- default_parse ---------------------------------------------------------------------


def test_default_parse_dict_with_results_recurses() -> None:
    out = default_parse({"results": ["a", "b"], "total": 2}, "q")
    assert [i.content for i in out] == ["a", "b"]


def test_default_parse_list_of_dicts() -> None:
    out = default_parse(
        [
            {"content": "c", "score": 0.5, "metadata": {"m": 1}, "url": "u"},
            {"text": "t", "rank": 3},
            {"snippet": "s"},
        ],
        "q",
    )
    assert [i.content for i in out] == ["c", "t", "s"]
    assert out[0].score == 0.5
    assert out[0].metadata["m"] == 1 and out[0].metadata["url"] == "u"
    assert out[1].metadata["rank"] == 3
    assert out[1].score is None
    assert all(isinstance(i, MemoryItem) and i.source for i in out)


def test_default_parse_list_of_str() -> None:
    assert [i.content for i in default_parse(["x", "y"], "q")] == ["x", "y"]


def test_default_parse_str_splits_on_blank_lines() -> None:
    out = default_parse("para one\nstill one\n\npara two", "q")
    assert [i.content for i in out] == ["para one\nstill one", "para two"]
    assert [i.content for i in default_parse("single paragraph", "q")] == ["single paragraph"]


@pytest.mark.parametrize("value", [42, 3.5, None, object])
def test_default_parse_anything_else_is_one_str_item(value: Any) -> None:
    out = default_parse(value, "q")
    assert [i.content for i in out] == [str(value)]


def test_default_parse_ignores_query() -> None:
    shape = [{"text": "a", "score": 0.1, "url": "u"}]
    a = [(i.content, i.score, dict(i.metadata)) for i in default_parse(shape, "one")]
    b = [(i.content, i.score, dict(i.metadata)) for i in default_parse(shape, "two")]
    assert a == b


async def test_sources_are_memory_sources() -> None:
    from agentkit.state.context import WorkingContext

    for src in (
        VectorMemory(store()),
        FileMemory(),
        JournalMemory(journal_of(), render=str),
        ScratchpadMemory(WorkingContext()),
        ToolMemory(RecordingTool([])),
    ):
        assert isinstance(src, MemorySource)
        assert await src.query("q", k=1, ctx=Ctx(Scope("a", "b"))) == []
