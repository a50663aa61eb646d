"""FileMemory: lexical recall over a file tree (a memory tool's read side)."""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from agentkit.kernel.ctx import Ctx
from agentkit.kernel.errors import InvalidArgument, InvalidArgumentType, PathEscapeError
from agentkit.kernel.validate import check_k, check_query, check_where
from agentkit.observability import traced_memory
from agentkit.state.files import InMemoryFiles, normalise_path
from agentkit.state.memory._item import MemoryItem
from agentkit.state.memory._sources._args import check_ctx, check_items
from agentkit.vector.port import matches_where

# Files read at once during a walk: enough to overlap disk latency on a
# thread-backed store without flooding the default executor.
_READ_CONCURRENCY = 16
# Deeper than this is almost certainly a cycle in a backend's links, not notes.
_MAX_DEPTH = 64


@traced_memory
@dataclass
class FileMemory:
    """A MemorySource that walks every file and counts query-term hits.

    The score is, for each lower-cased whitespace-separated query term, how
    often it occurs in the lower-cased text, summed (for a one-word query, the
    substring count). Files with no hit are dropped; an empty query therefore
    matches nothing. Ties break by path so results are repeatable. Each item
    has ``metadata={"path": p}`` and ``id=p``: the path is the file's key.

    ``where={"path_prefix": "/notes"}`` limits the walk to that directory (it
    matches ``/notes/a.md``, not ``/notesX/a.md``); every other key is matched
    against the item metadata, so ``{"path": p}`` picks one file and an unknown
    key matches nothing, like a vector store's filter would.

    A file that cannot be read as text (not UTF-8, too big, not a regular
    file, a symlink out of the root), a listing entry that is not a plain name,
    or a directory nested deeper than 64 levels is skipped rather than failing
    recall for the whole tree, and recorded on the timeline as
    ``memory.file_skipped`` with ``source``, ``path`` and ``reason``.

    ``files`` is duck-typed (async ``view``/``create``/``delete``); None means
    a fresh InMemoryFiles.

    Args:
        files: The file system to search (``InMemoryFiles``, ``LocalFiles`` or
            anything with the same async methods); ``None`` starts an empty one.
        name: The name items and traces carry.
    """

    files: Any = None
    name: str = "files"

    def __post_init__(self) -> None:
        if self.files is None:
            self.files = InMemoryFiles()

    async def query(
        self,
        query: str,
        *,
        k: int,
        ctx: Ctx,
        where: dict[str, Any] | None = None,
    ) -> list[MemoryItem]:
        """Walk the files (under ``path_prefix`` if given); the ``k`` highest term-hit counts.

        Unreadable files are skipped and observed rather than failing the whole walk.
        """
        query = check_query(query)
        k = check_k(k)
        filters = check_where(where)
        ctx = check_ctx(ctx)
        prefix = _prefix(filters)
        rest = {key: v for key, v in (filters or {}).items() if key != "path_prefix"}
        terms = query.lower().split()
        if not terms:
            return []
        scored: list[tuple[float, str, str]] = []
        for path, text in await self._walk(prefix, ctx):
            if rest and not matches_where({"path": path}, rest):
                continue
            lowered = text.lower()
            score = sum(lowered.count(term) for term in terms)
            if score:
                scored.append((float(score), path, text))
        scored.sort(key=lambda hit: (-hit[0], hit[1]))
        return [
            MemoryItem(text, self.name, score, {"path": path}, id=path)
            for score, path, text in scored[:k]
        ]

    async def _walk(self, prefix: str, ctx: Ctx) -> list[tuple[str, str]]:
        """Every readable file under ``prefix`` as (path, text)."""
        paths: list[str] = []
        pending = [("/", 0)]
        while pending:
            directory, depth = pending.pop()
            if depth > _MAX_DEPTH:
                ctx.observe(
                    "memory.file_skipped",
                    source=self.name,
                    path=directory,
                    reason=f"directory deeper than {_MAX_DEPTH} levels",
                )
                continue
            try:
                listing = await self.files.view(directory)
            except FileNotFoundError:
                continue  # removed while we walked
            base = directory.rstrip("/")
            for line in listing.splitlines():
                if not line:
                    continue
                bare = line[:-1] if line.endswith("/") else line
                if bare in ("", ".", "..") or "/" in bare or "\x00" in bare:
                    ctx.observe(
                        "memory.file_skipped",
                        source=self.name,
                        path=f"{base}/{line}",
                        reason="listing entry is not a plain name",
                    )
                    continue
                if line.endswith("/"):
                    child = f"{base}/{line[:-1]}"
                    if _overlaps(child, prefix):
                        pending.append((child, depth + 1))
                else:
                    child = f"{base}/{line}"
                    if _within(child, prefix):
                        paths.append(child)
        gate = asyncio.Semaphore(_READ_CONCURRENCY)

        async def read(path: str) -> tuple[str, str] | None:
            async with gate:
                try:
                    text = await self.files.view(path)
                except FileNotFoundError:
                    return None
                except (UnicodeDecodeError, InvalidArgument, PathEscapeError) as exc:
                    ctx.observe(
                        "memory.file_skipped",
                        source=self.name,
                        path=path,
                        reason=f"{type(exc).__name__}: {exc}",
                    )
                    return None
            if not isinstance(text, str):
                ctx.observe(
                    "memory.file_skipped",
                    source=self.name,
                    path=path,
                    reason=f"view returned {type(text).__name__}, not str",
                )
                return None
            return path, text

        results = await asyncio.gather(*(read(p) for p in sorted(paths)))
        return [r for r in results if r is not None]

    async def write(self, items: Iterable[MemoryItem], *, ctx: Ctx) -> None:
        """Create one file per item, at ``metadata["path"]`` or ``/<sha1>.md``.

        Every target is read before the first file is written: that validates
        each path through the backend (a symlink out of the root fails here) and
        keeps what was there, so a write failing mid-batch is undone and the
        tree is left as it was.
        """
        batch = check_items(items)
        check_ctx(ctx)
        targets: list[tuple[str, str]] = []
        for i, item in enumerate(batch):
            path = item.metadata.get("path")
            if path is None:
                path = "/" + hashlib.sha1(item.content.encode("utf-8")).hexdigest() + ".md"
            elif not isinstance(path, str):
                raise InvalidArgumentType(
                    f"items[{i}].metadata['path'] must be a str, got {type(path).__name__}"
                )
            targets.append((normalise_path(path), item.content))
        previous: dict[str, str | None] = {}
        for path, _ in targets:
            if path not in previous:
                previous[path] = await _current(self.files, path)
        written: list[str] = []
        try:
            for path, text in targets:
                await self.files.create(path, text)
                written.append(path)
        except BaseException:
            await _restore(self.files, written, previous)
            raise


async def _current(files: Any, path: str) -> str | None:
    try:
        text = await files.view(path)
    except FileNotFoundError:
        return None
    return str(text)


async def _restore(files: Any, written: list[str], previous: dict[str, str | None]) -> None:
    """Best-effort undo of a half-written batch, newest first."""
    for path in reversed(dict.fromkeys(written)):
        old = previous[path]
        try:
            if old is None:
                await files.delete(path)
            else:
                await files.create(path, old)
        except Exception:
            continue


def _prefix(filters: dict[str, Any] | None) -> str:
    if not filters:
        return "/"
    prefix = filters.get("path_prefix", "/")
    if not isinstance(prefix, str):
        raise InvalidArgumentType(
            f"where['path_prefix'] must be a str, got {type(prefix).__name__}"
        )
    return normalise_path(prefix)


def _within(path: str, prefix: str) -> bool:
    """``path`` is ``prefix`` or below it, as a directory: ``/notes`` excludes ``/notesX``."""
    return prefix == "/" or path == prefix or path.startswith(prefix + "/")


def _overlaps(directory: str, prefix: str) -> bool:
    """Descend into ``directory`` only if it leads to or lies under ``prefix``."""
    return _within(directory, prefix) or _within(prefix, directory)
