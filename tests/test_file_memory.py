"""FileMemory over InMemoryFiles and real directories through LocalFiles."""

from __future__ import annotations

import asyncio
import hashlib
import os
from pathlib import Path
from typing import Any

import pytest

from agentkit.kernel import Ctx, InvalidArgument, InvalidArgumentType, PathEscapeError
from agentkit.state.files import InMemoryFiles, LocalFiles
from agentkit.state.memory import FileMemory, MemoryItem, MemorySource


async def seeded(files: Any = None) -> FileMemory:
    memory = FileMemory(files)
    await memory.files.create("/notes/refunds.md", "Refunds: a refund takes 30 days. REFUND early.")
    await memory.files.create("/notes/shipping.md", "Shipping takes 5 days; refund if lost.")
    await memory.files.create("/notesX/decoy.md", "refund refund refund refund")
    await memory.files.create("/readme.md", "nothing relevant here")
    return memory


def test_defaults_to_a_fresh_in_memory_tree() -> None:
    a, b = FileMemory(), FileMemory()
    assert a.name == "files"
    assert isinstance(a.files, InMemoryFiles)
    assert a.files is not b.files
    assert isinstance(a, MemorySource)


async def test_scores_by_case_insensitive_substring_count_best_first() -> None:
    items = await (await seeded()).query("refund", k=10, ctx=Ctx())
    assert [(i.metadata["path"], i.score) for i in items] == [
        ("/notesX/decoy.md", 4.0),
        ("/notes/refunds.md", 3.0),
        ("/notes/shipping.md", 1.0),
    ]
    assert all(i.source == "files" and i.id == i.metadata["path"] for i in items)
    assert items[1].content == "Refunds: a refund takes 30 days. REFUND early."


async def test_multi_word_queries_sum_term_counts_and_k_cuts() -> None:
    items = await (await seeded()).query("days shipping", k=1, ctx=Ctx())
    assert [(i.metadata["path"], i.score) for i in items] == [("/notes/shipping.md", 2.0)]


async def test_zero_match_files_are_dropped_and_empty_queries_match_nothing() -> None:
    memory = await seeded()
    assert await memory.query("kubernetes", k=5, ctx=Ctx()) == []
    assert await memory.query("   ", k=5, ctx=Ctx()) == []


async def test_path_prefix_is_a_directory_prefix() -> None:
    memory = await seeded()
    for prefix in ("/notes", "/notes/", "//notes"):
        items = await memory.query("refund", k=10, ctx=Ctx(), where={"path_prefix": prefix})
        assert sorted(i.metadata["path"] for i in items) == [
            "/notes/refunds.md",
            "/notes/shipping.md",
        ]
    exact = await memory.query(
        "refund", k=10, ctx=Ctx(), where={"path_prefix": "/notes/refunds.md"}
    )
    assert [i.metadata["path"] for i in exact] == ["/notes/refunds.md"]
    everything = await memory.query("refund", k=10, ctx=Ctx(), where={"path_prefix": "/"})
    assert len(everything) == 3


async def test_where_keys_match_item_metadata_and_bad_values_are_errors() -> None:
    memory = await seeded()
    # A key files do not carry matches nothing: never ignored, never a crash in a fan-out.
    assert await memory.query("refund", k=3, ctx=Ctx(), where={"tag": "x"}) == []
    hits = await memory.query("refund", k=3, ctx=Ctx())
    assert len(hits) >= 2
    one = hits[-1].metadata["path"]
    picked = await memory.query("refund", k=3, ctx=Ctx(), where={"path": one})
    assert [i.metadata["path"] for i in picked] == [one]
    with pytest.raises(InvalidArgumentType, match="path_prefix"):
        await memory.query("refund", k=3, ctx=Ctx(), where={"path_prefix": 3})
    with pytest.raises(PathEscapeError):
        await memory.query("refund", k=3, ctx=Ctx(), where={"path_prefix": "/../etc"})


class CountingFiles(InMemoryFiles):
    def __init__(self) -> None:
        super().__init__()
        self.views = 0

    async def view(self, path: str) -> str:
        self.views += 1
        return await super().view(path)


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"k": 0}, InvalidArgument),
        ({"k": "1"}, InvalidArgumentType),
        ({"query": 1}, InvalidArgumentType),
        ({"where": 1}, InvalidArgumentType),
        ({"ctx": "ctx"}, InvalidArgumentType),
    ],
)
async def test_bad_arguments_fail_before_any_file_is_read(
    kwargs: dict[str, Any], error: type
) -> None:
    files = CountingFiles()
    await files.create("/a.md", "a")
    call: dict[str, Any] = {"query": "a", "k": 1, "ctx": Ctx(), **kwargs}
    with pytest.raises(error):
        await FileMemory(files).query(call.pop("query"), **call)
    assert files.views == 0


async def test_write_uses_the_metadata_path_or_a_content_hash() -> None:
    memory = FileMemory()
    await memory.write(
        [
            MemoryItem("pinned", "agent", metadata={"path": "/notes/pin.md"}),
            MemoryItem("loose", "agent"),
        ],
        ctx=Ctx(),
    )
    assert await memory.files.view("/notes/pin.md") == "pinned"
    digest = hashlib.sha1(b"loose").hexdigest()
    assert await memory.files.view(f"/{digest}.md") == "loose"
    (hit,) = await memory.query("loose", k=1, ctx=Ctx())
    assert hit.id == f"/{digest}.md"


async def test_a_batch_with_a_bad_path_writes_nothing() -> None:
    memory = FileMemory()
    batch = [
        MemoryItem("fine", "agent", metadata={"path": "/ok.md"}),
        MemoryItem("evil", "agent", metadata={"path": "/../../etc/cron.d/x"}),
    ]
    with pytest.raises(PathEscapeError):
        await memory.write(batch, ctx=Ctx())
    with pytest.raises(InvalidArgumentType, match="path"):
        await memory.write([MemoryItem("x", "agent", metadata={"path": 5})], ctx=Ctx())
    assert await memory.files.view("/") == ""


# ---- on a real disk --------------------------------------------------------------


async def test_walks_a_real_directory_tree(tmp_path: Path) -> None:
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "b" / "deep.md").write_text("the needle is deep")
    (tmp_path / "top.md").write_text("needle needle")
    items = await FileMemory(LocalFiles(tmp_path)).query("needle", k=5, ctx=Ctx())
    assert [(i.metadata["path"], i.score) for i in items] == [
        ("/top.md", 2.0),
        ("/a/b/deep.md", 1.0),
    ]


async def test_unreadable_files_are_skipped_and_observed(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    (tmp_path / "secret.md").write_text("needle outside the root")
    (root / "good.md").write_text("needle inside")
    (root / "latin1.md").write_bytes("needle café".encode("latin-1"))
    (root / "escape.md").symlink_to(tmp_path / "secret.md")
    (root / "escapedir").symlink_to(tmp_path, target_is_directory=True)
    if hasattr(os, "mkfifo"):
        os.mkfifo(root / "pipe")
    ctx = Ctx()
    items = await FileMemory(LocalFiles(root)).query("needle", k=10, ctx=ctx)
    assert [i.metadata["path"] for i in items] == ["/good.md"]
    skipped = {o.data["path"]: o.data for o in ctx.timeline.of("memory.file_skipped")}
    expected = {"/latin1.md", "/escape.md", "/escapedir"} | (
        {"/pipe"} if hasattr(os, "mkfifo") else set()
    )
    assert set(skipped) == expected
    assert all(d["source"] == "files" and d["reason"] for d in skipped.values())
    assert "UTF-8" in skipped["/latin1.md"]["reason"]


async def test_writes_land_on_disk(tmp_path: Path) -> None:
    memory = FileMemory(LocalFiles(tmp_path))
    await memory.write(
        [MemoryItem("persisted", "agent", metadata={"path": "/mem/x.md"})], ctx=Ctx()
    )
    assert (tmp_path / "mem" / "x.md").read_text() == "persisted"


async def test_a_symlink_loop_does_not_hang_the_walk(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "n.md").write_text("needle")
    (tmp_path / "a" / "loop").symlink_to(tmp_path / "a", target_is_directory=True)
    items = await FileMemory(LocalFiles(tmp_path)).query("needle", k=5, ctx=Ctx())
    assert [i.metadata["path"] for i in items] == ["/a/n.md"]


class EndlessFiles(InMemoryFiles):
    """A duck-typed backend whose every directory contains itself."""

    async def view(self, path: str) -> str:
        if path.endswith(".md"):
            return "needle"
        return "again/\nn.md"


async def test_a_backend_with_a_cycle_is_cut_at_a_depth_limit() -> None:
    ctx = Ctx()
    items = await FileMemory(EndlessFiles()).query("needle", k=3, ctx=ctx)
    assert len(items) == 3
    assert any("deeper" in o.data["reason"] for o in ctx.timeline.of("memory.file_skipped"))


async def test_too_big_files_are_skipped_and_observed(tmp_path: Path) -> None:
    (tmp_path / "big.md").write_text("needle " * 1000)
    (tmp_path / "ok.md").write_text("needle")
    ctx = Ctx()
    items = await FileMemory(LocalFiles(tmp_path, max_bytes=100)).query("needle", k=5, ctx=ctx)
    assert [i.metadata["path"] for i in items] == ["/ok.md"]
    assert [o.data["path"] for o in ctx.timeline.of("memory.file_skipped")] == ["/big.md"]


class SlowFiles(InMemoryFiles):
    """Each file read takes 50 ms; records when reads were in flight."""

    def __init__(self) -> None:
        super().__init__()
        self.active = 0
        self.peak = 0

    async def view(self, path: str) -> str:
        if not path.endswith(".md"):
            return await super().view(path)
        self.active += 1
        self.peak = max(self.peak, self.active)
        try:
            await asyncio.sleep(0.05)
            return await super().view(path)
        finally:
            self.active -= 1


async def test_files_are_read_concurrently() -> None:
    files = SlowFiles()
    for i in range(8):
        await files.create(f"/d/{i}.md", f"needle {i}")
    items = await FileMemory(files).query("needle", k=10, ctx=Ctx())
    assert len(items) == 8
    assert files.peak == 8  # all eight reads overlapped rather than running one by one


class HostileListing(InMemoryFiles):
    """A backend whose listing tries to smuggle parent and nested paths."""

    async def view(self, path: str) -> str:
        if path == "/":
            return "../\n..\na/b.md\n./\nok.md\n"
        if path == "/ok.md":
            return "needle"
        raise AssertionError(f"walk tried to open {path!r}")


async def test_listing_entries_that_are_not_plain_names_are_skipped() -> None:
    ctx = Ctx()
    items = await FileMemory(HostileListing()).query("needle", k=5, ctx=ctx)
    assert [i.metadata["path"] for i in items] == ["/ok.md"]
    assert len(ctx.timeline.of("memory.file_skipped")) == 4
