"""InMemoryFiles and LocalFiles: one surface, and no path out of the root."""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

import agentkit.state.files as files_mod
from agentkit.kernel import AgentkitError, InvalidArgument, InvalidArgumentType, PathEscapeError
from agentkit.state.files import InMemoryFiles, LocalFiles


@pytest.fixture(params=["memory", "local"])
async def fs(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Any]:
    if request.param == "memory":
        yield InMemoryFiles()
    else:
        root = tmp_path / "root"
        root.mkdir()
        yield LocalFiles(root)


async def test_create_then_view_round_trips_text(fs: Any) -> None:
    await fs.create("/notes/today.md", "héllo ✓\nsecond line")
    assert await fs.view("/notes/today.md") == "héllo ✓\nsecond line"


async def test_create_overwrites(fs: Any) -> None:
    await fs.create("/a.md", "one")
    await fs.create("/a.md", "two")
    assert await fs.view("/a.md") == "two"


async def test_directories_list_entries_with_a_trailing_slash(fs: Any) -> None:
    await fs.create("/notes/deep/x.md", "x")
    await fs.create("/notes/a.md", "a")
    await fs.create("/top.md", "t")
    assert (await fs.view("/")).splitlines() == ["notes/", "top.md"]
    assert (await fs.view("/notes")).splitlines() == ["a.md", "deep/"]
    assert await fs.view("/notes/") == await fs.view("/notes")
    assert await fs.view("/notes/deep") == "x.md"


async def test_empty_root_lists_nothing(fs: Any) -> None:
    assert await fs.view("/") == ""


async def test_paths_are_normalised(fs: Any) -> None:
    await fs.create("//notes/./a.md", "a")
    assert await fs.view("/notes/a.md") == "a"
    assert await fs.view("/notes//a.md/") == "a"


async def test_missing_paths_raise_file_not_found(fs: Any) -> None:
    with pytest.raises(FileNotFoundError):
        await fs.view("/nope.md")
    with pytest.raises(FileNotFoundError):
        await fs.delete("/nope.md")


async def test_delete_removes_a_file_and_empty_directories(fs: Any) -> None:
    await fs.create("/d/a.md", "a")
    with pytest.raises(OSError):
        await fs.delete("/d")  # not empty
    await fs.delete("/d/a.md")
    with pytest.raises(FileNotFoundError):
        await fs.view("/d/a.md")
    assert await fs.view("/d") == ""
    await fs.delete("/d")
    assert await fs.view("/") == ""


async def test_the_root_cannot_be_deleted(fs: Any) -> None:
    with pytest.raises(InvalidArgument, match="root"):
        await fs.delete("/")


async def test_file_and_directory_collisions_are_errors(fs: Any) -> None:
    await fs.create("/d/a.md", "a")
    with pytest.raises(IsADirectoryError):
        await fs.create("/d", "text over a directory")
    with pytest.raises(NotADirectoryError):
        await fs.create("/d/a.md/child.md", "under a file")
    assert await fs.view("/d/a.md") == "a"


HOSTILE = [
    ("/../escape.md", PathEscapeError),
    ("/notes/../../escape.md", PathEscapeError),
    ("/..", PathEscapeError),
    ("/a/b/../../../etc/passwd", PathEscapeError),
    ("/a\x00.md", PathEscapeError),
    ("/..\\..\\escape.md", PathEscapeError),
    ("\\windows\\system32", PathEscapeError),
    ("relative.md", InvalidArgument),
    ("../escape.md", PathEscapeError),
    ("", InvalidArgument),
    (b"/bytes.md", InvalidArgumentType),
    (None, InvalidArgumentType),
]


@pytest.mark.parametrize(("path", "error"), HOSTILE)
async def test_hostile_paths_are_refused_on_every_verb(fs: Any, path: Any, error: type) -> None:
    await fs.create("/keep.md", "kept")
    calls = (lambda: fs.view(path), lambda: fs.create(path, "x"), lambda: fs.delete(path))
    for call in calls:
        with pytest.raises(error) as info:
            await call()
        assert isinstance(info.value, AgentkitError)
        if isinstance(path, str) and path:
            assert repr(path)[1:-1] in str(info.value) or "start with" in str(info.value)
    assert (await fs.view("/")).splitlines() == ["keep.md"]


async def test_text_must_be_a_str(fs: Any) -> None:
    with pytest.raises(InvalidArgumentType, match="text"):
        await fs.create("/a.md", b"bytes")
    with pytest.raises(FileNotFoundError):
        await fs.view("/a.md")


# ---- LocalFiles on a real disk -------------------------------------------------


@pytest.fixture
def layout(tmp_path: Path) -> tuple[Path, Path]:
    root = tmp_path / "root"
    outside = tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (outside / "secret.txt").write_text("TOP SECRET")
    return root, outside


async def test_parent_traversal_never_reads_outside(layout: tuple[Path, Path]) -> None:
    root, _ = layout
    files = LocalFiles(root)
    with pytest.raises(PathEscapeError):
        await files.view("/../outside/secret.txt")


async def test_absolute_looking_paths_stay_under_the_root(layout: tuple[Path, Path]) -> None:
    root, outside = layout
    files = LocalFiles(root)
    with pytest.raises(FileNotFoundError):
        await files.view(str(outside / "secret.txt"))  # /tmp/.../outside under root: absent
    with pytest.raises(FileNotFoundError):
        await files.view("//etc/passwd")
    await files.create(str(outside / "new.txt"), "inside")
    assert (root / str(outside).lstrip("/") / "new.txt").read_text() == "inside"
    assert not (outside / "new.txt").exists()


async def test_symlinks_pointing_out_are_refused(layout: tuple[Path, Path]) -> None:
    root, outside = layout
    (root / "leak.txt").symlink_to(outside / "secret.txt")
    (root / "leakdir").symlink_to(outside, target_is_directory=True)
    files = LocalFiles(root)
    for path in ("/leak.txt", "/leakdir", "/leakdir/secret.txt"):
        with pytest.raises(PathEscapeError, match="outside"):
            await files.view(path)
    with pytest.raises(PathEscapeError):
        await files.create("/leakdir/planted.txt", "x")
    with pytest.raises(PathEscapeError):
        await files.create("/leak.txt", "overwrite the secret")
    with pytest.raises(PathEscapeError):
        await files.delete("/leakdir/secret.txt")
    assert (outside / "secret.txt").read_text() == "TOP SECRET"
    assert sorted(os.listdir(outside)) == ["secret.txt"]
    # Listed by name only, never as a directory the walk would descend into.
    assert (await files.view("/")).splitlines() == ["leak.txt", "leakdir"]


async def test_symlinks_inside_the_root_work(layout: tuple[Path, Path]) -> None:
    root, _ = layout
    files = LocalFiles(root)
    await files.create("/real/a.md", "alpha")
    (root / "alias").symlink_to(root / "real", target_is_directory=True)
    (root / "link.md").symlink_to(root / "real" / "a.md")
    assert await files.view("/alias/a.md") == "alpha"
    assert await files.view("/link.md") == "alpha"
    assert "alias/" in (await files.view("/")).splitlines()
    await files.delete("/link.md")
    assert not (root / "link.md").exists()
    assert (root / "real" / "a.md").read_text() == "alpha"  # the link went, not the target


async def test_a_symlinked_root_is_resolved(layout: tuple[Path, Path], tmp_path: Path) -> None:
    root, _ = layout
    (tmp_path / "via").symlink_to(root, target_is_directory=True)
    files = LocalFiles(tmp_path / "via")
    await files.create("/a.md", "a")
    assert (root / "a.md").read_text() == "a"


async def test_non_utf8_files_raise_a_clear_error(layout: tuple[Path, Path]) -> None:
    root, _ = layout
    (root / "latin1.txt").write_bytes("café".encode("latin-1"))
    with pytest.raises(InvalidArgument, match=r"/latin1.txt.*UTF-8"):
        await LocalFiles(root).view("/latin1.txt")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
async def test_a_fifo_is_refused_instead_of_hanging(layout: tuple[Path, Path]) -> None:
    root, _ = layout
    os.mkfifo(root / "pipe")
    with pytest.raises(InvalidArgument, match="regular file"):
        await asyncio.wait_for(LocalFiles(root).view("/pipe"), timeout=5)


async def test_errors_name_the_virtual_path_not_the_host_path(layout: tuple[Path, Path]) -> None:
    root, _ = layout
    with pytest.raises(FileNotFoundError) as info:
        await LocalFiles(root).view("/missing.md")
    assert "/missing.md" in str(info.value)
    assert str(root) not in str(info.value)


async def test_writes_are_atomic_and_keep_the_file_mode(layout: tuple[Path, Path]) -> None:
    root, _ = layout
    files = LocalFiles(root)
    await files.create("/a.md", "one")
    os.chmod(root / "a.md", 0o640)
    await files.create("/a.md", "two")
    assert (root / "a.md").stat().st_mode & 0o777 == 0o640
    assert sorted(os.listdir(root)) == ["a.md"]  # no temp files left behind


async def test_root_must_be_an_existing_directory(tmp_path: Path) -> None:
    with pytest.raises(NotADirectoryError):
        LocalFiles(tmp_path / "missing")
    with pytest.raises(InvalidArgumentType):
        LocalFiles(42)  # type: ignore[arg-type]


async def test_disk_io_runs_off_the_event_loop(
    layout: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    root, _ = layout
    files = LocalFiles(root)
    seen: list[int] = []
    real_open = files_mod.os.open

    def spy(*args: Any, **kwargs: Any) -> int:
        seen.append(threading.get_ident())
        return real_open(*args, **kwargs)

    await files.create("/a.md", "a")
    monkeypatch.setattr(files_mod.os, "open", spy)
    assert await files.view("/a.md") == "a"
    assert seen and threading.get_ident() not in seen


async def test_files_over_max_bytes_are_refused(layout: tuple[Path, Path]) -> None:
    root, _ = layout
    (root / "big.txt").write_text("x" * 2000)
    (root / "small.txt").write_text("x" * 10)
    files = LocalFiles(root, max_bytes=1000)
    with pytest.raises(InvalidArgument, match=r"/big.txt.*max_bytes"):
        await files.view("/big.txt")
    assert await files.view("/small.txt") == "x" * 10
    assert await LocalFiles(root, max_bytes=None).view("/big.txt") == "x" * 2000
    with pytest.raises(InvalidArgument, match="max_bytes"):
        LocalFiles(root, max_bytes=-1)


async def test_directory_symlink_loops_are_left_out_of_listings(layout: tuple[Path, Path]) -> None:
    root, _ = layout
    (root / "a" / "b").mkdir(parents=True)
    (root / "a" / "b" / "note.md").write_text("n")
    (root / "a" / "b" / "up").symlink_to(root / "a", target_is_directory=True)
    (root / "a" / "self").symlink_to(root / "a", target_is_directory=True)
    (root / "a" / "rootlink").symlink_to(root, target_is_directory=True)
    files = LocalFiles(root)
    assert (await files.view("/a")).splitlines() == ["b/"]
    assert (await files.view("/a/b")).splitlines() == ["note.md"]
    assert await files.view("/a/b/up/b/note.md") == "n"  # still reachable by name


async def test_temp_files_of_writes_in_flight_are_not_listed(layout: tuple[Path, Path]) -> None:
    root, _ = layout
    (root / ".agentkit-abc123.tmp").write_text("half written")
    (root / ".hidden.md").write_text("a real dotfile")
    assert (await LocalFiles(root).view("/")).splitlines() == [".hidden.md"]
