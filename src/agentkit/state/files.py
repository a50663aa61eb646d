"""The file surface FileMemory walks: InMemoryFiles and LocalFiles.

Both speak ``/``-rooted virtual paths and the same three verbs (``view``,
``create``, ``delete``). A path is checked before anything is touched: ``..``
components, NUL bytes and backslashes are refused outright rather than
normalised away, because "normalise then hope" is how ``/../etc`` gets in.
"""

from __future__ import annotations

import asyncio
import errno
import os
import stat
import tempfile

from agentkit.kernel.errors import InvalidArgument, InvalidArgumentType, PathEscapeError
from agentkit.kernel.threads import CommitGate, run_gated

_TMP_PREFIX = ".agentkit-"
_TMP_SUFFIX = ".tmp"


def normalise_path(path: object) -> str:
    """``/``-rooted canonical form: no empty or ``.`` parts, no trailing slash.

    Raises PathEscapeError for anything that could climb or smuggle (``..``,
    NUL, backslash) and InvalidArgument for a path that is not ``/``-rooted.
    """
    if not isinstance(path, str):
        raise InvalidArgumentType(f"path must be a str, got {type(path).__name__}")
    if "\x00" in path:
        raise PathEscapeError(f"path {path!r} contains a NUL byte")
    if "\\" in path:
        raise PathEscapeError(f"path {path!r} contains a backslash; use '/' separators")
    parts = [p for p in path.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise PathEscapeError(f"path {path!r} contains '..'")
    if not path.startswith("/"):
        raise InvalidArgument(f"path {path!r} must start with '/'")
    return "/" + "/".join(parts)


def _check_text(text: object) -> str:
    if not isinstance(text, str):
        raise InvalidArgumentType(f"text must be a str, got {type(text).__name__}")
    return text


def _parents(path: str) -> list[str]:
    """``/a/b/c`` -> ``["/", "/a", "/a/b"]``."""
    parts = path.strip("/").split("/")
    return ["/"] + ["/" + "/".join(parts[:i]) for i in range(1, len(parts))]


class InMemoryFiles:
    """A file tree in a dict, for tests and ephemeral runs.

    Directories exist explicitly (created as parents of files), so an empty
    directory left by a delete still lists, just as it would on disk.
    """

    def __init__(self) -> None:
        self._files: dict[str, str] = {}
        self._dirs: set[str] = {"/"}

    def __repr__(self) -> str:
        return f"InMemoryFiles({len(self._files)} files)"

    async def view(self, path: str) -> str:
        """A file's text, or a directory's entries (sub-directories end in ``/``)."""
        norm = normalise_path(path)
        if norm in self._files:
            return self._files[norm]
        if norm in self._dirs:
            return "\n".join(self._entries(norm))
        raise FileNotFoundError(errno.ENOENT, "no such file or directory", norm)

    def _entries(self, directory: str) -> list[str]:
        prefix = directory.rstrip("/") + "/"
        names: set[str] = set()
        for candidate, suffix in [(f, "") for f in self._files] + [(d, "/") for d in self._dirs]:
            if candidate != directory and candidate.startswith(prefix):
                rest = candidate[len(prefix) :]
                if "/" not in rest:
                    names.add(rest + suffix)
        return sorted(names)

    async def create(self, path: str, text: str) -> None:
        """Create or overwrite, making parent directories."""
        norm = normalise_path(path)
        _check_text(text)
        if norm in self._dirs:
            raise IsADirectoryError(errno.EISDIR, "is a directory", norm)
        parents = _parents(norm)
        for parent in parents:
            if parent in self._files:
                raise NotADirectoryError(errno.ENOTDIR, "a parent is a file", parent)
        self._dirs.update(parents)
        self._files[norm] = text

    async def delete(self, path: str) -> None:
        """Remove a file or an empty directory."""
        norm = normalise_path(path)
        if norm in self._files:
            del self._files[norm]
        elif norm == "/":
            raise InvalidArgument("the root directory cannot be deleted")
        elif norm in self._dirs:
            if self._entries(norm):
                raise OSError(errno.ENOTEMPTY, "directory not empty", norm)
            self._dirs.discard(norm)
        else:
            raise FileNotFoundError(errno.ENOENT, "no such file or directory", norm)


class LocalFiles:
    """Real files under ``root``, which no path can leave.

    Every path is normalised, joined under ``root`` and resolved with
    ``realpath``; a result outside ``root`` (a symlink pointing out, say) is a
    PathEscapeError. Files are opened with ``O_NOFOLLOW`` and must be regular,
    so a FIFO or device cannot hang or leak a read (a parent directory swapped
    for a symlink between the check and the open is not covered: the root is
    assumed not to be writable by an adversary racing us). All disk IO runs in a
    worker thread. Errors name the virtual path, never the host path under ``root``.
    Text is UTF-8; a file that does not decode, or is bigger than ``max_bytes``
    (64 MiB by default; None lifts the cap), raises InvalidArgument naming it.
    A directory symlink that loops back to one of its own ancestors is left out
    of listings so a recursive walk terminates.
    """

    def __init__(
        self, root: str | os.PathLike[str], *, max_bytes: int | None = 64 * 1024 * 1024
    ) -> None:
        if not isinstance(root, (str, os.PathLike)):
            raise InvalidArgumentType(f"root must be a path, got {type(root).__name__}")
        if max_bytes is not None and (
            isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 0
        ):
            raise InvalidArgument(
                f"max_bytes must be a non-negative int or None, got {max_bytes!r}"
            )
        self.max_bytes = max_bytes
        real = os.path.realpath(os.fspath(root))
        if not os.path.isdir(real):
            raise NotADirectoryError(errno.ENOTDIR, "root must be an existing directory", real)
        self.root = real

    def __repr__(self) -> str:
        return f"LocalFiles({self.root!r})"

    def _resolve(self, path: str) -> tuple[str, str, str]:
        """(virtual path, lexical host path, resolved host path), escape-checked."""
        norm = normalise_path(path)
        lexical = os.path.join(self.root, norm.lstrip("/")) if norm != "/" else self.root
        real = os.path.realpath(lexical)
        if not self._inside(real):
            raise PathEscapeError(f"path {norm!r} resolves outside the files root")
        return norm, lexical, real

    def _inside(self, real: str) -> bool:
        return real == self.root or real.startswith(self.root + os.sep)

    async def view(self, path: str) -> str:
        """A file's text, or a directory's entries (sub-directories end in ``/``)."""
        return await asyncio.to_thread(self._view, path)

    async def create(self, path: str, text: str) -> None:
        """Create or overwrite atomically (temp file + rename), making parents.

        A caller that gives up (timeout, cancel) before the rename leaves the file
        untouched: the thread checks a gate right before ``os.replace`` and drops
        its temp file instead. Past that point the rename is waited for and reported.
        """
        _check_text(text)
        await run_gated(lambda gate: asyncio.to_thread(self._create, path, text, gate))

    async def delete(self, path: str) -> None:
        """Remove a file, a symlink inside the root, or an empty directory.

        Gated like :meth:`create`: a caller that gave up first removes nothing.
        """
        await run_gated(lambda gate: asyncio.to_thread(self._delete, path, gate))

    def _view(self, path: str) -> str:
        norm, _, real = self._resolve(path)
        if os.path.isdir(real):
            return "\n".join(self._list(norm, real))
        try:
            fd = os.open(real, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except FileNotFoundError:
            raise FileNotFoundError(errno.ENOENT, "no such file or directory", norm) from None
        except OSError as exc:
            # ELOOP: the final component became a symlink after we resolved it.
            raise PathEscapeError(f"path {norm!r} could not be opened safely: {exc}") from None
        with os.fdopen(fd, "rb") as handle:
            info = os.fstat(handle.fileno())
            if not stat.S_ISREG(info.st_mode):
                raise InvalidArgument(f"path {norm!r} is not a regular file")
            if self.max_bytes is not None and info.st_size > self.max_bytes:
                raise InvalidArgument(
                    f"file {norm!r} is {info.st_size} bytes, over max_bytes={self.max_bytes}"
                )
            # Size the read by what fstat saw, not by the cap, so a small file never
            # reserves a cap-sized buffer; keep reading only if it grew meanwhile.
            cap = self.max_bytes
            if cap is None:
                data = handle.read()
            else:
                data = handle.read(min(info.st_size, cap) + 1)
                if len(data) > info.st_size:
                    data += handle.read(max(0, cap + 1 - len(data)))
        if self.max_bytes is not None and len(data) > self.max_bytes:
            raise InvalidArgument(f"file {norm!r} is over max_bytes={self.max_bytes}")
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidArgument(f"file {norm!r} is not valid UTF-8 text ({exc.reason})") from exc

    def _list(self, norm: str, real_dir: str) -> list[str]:
        # The real directories on the way down to this one: a symlink back to any of
        # them is a cycle, and a walker following it would never finish.
        lineage = {self.root, real_dir}
        for prefix in _parents(norm)[1:] if norm != "/" else []:
            lineage.add(os.path.realpath(os.path.join(self.root, prefix.lstrip("/"))))
        names = []
        with os.scandir(real_dir) as entries:
            for entry in entries:
                if entry.name.startswith(_TMP_PREFIX) and entry.name.endswith(_TMP_SUFFIX):
                    continue  # a write in flight; readers see the file once it is renamed
                is_dir = entry.is_dir(follow_symlinks=False)
                if entry.is_symlink():
                    target = os.path.realpath(entry.path)
                    if target in lineage:
                        continue  # a loop: its content is already reachable above
                    # Only a link that stays inside the root may read as a directory;
                    # one pointing out lists as a plain name and view refuses it.
                    is_dir = self._inside(target) and os.path.isdir(target)
                names.append(entry.name + ("/" if is_dir else ""))
        return sorted(names)

    def _create(self, path: str, text: str, gate: CommitGate | None = None) -> None:
        norm, _, real = self._resolve(path)
        if os.path.isdir(real):
            raise IsADirectoryError(errno.EISDIR, "is a directory", norm)
        parent = os.path.dirname(real)
        try:
            os.makedirs(parent, exist_ok=True)
        except (FileExistsError, NotADirectoryError):
            raise NotADirectoryError(errno.ENOTDIR, "a parent is a file", norm) from None
        if not self._inside(os.path.realpath(parent)):
            raise PathEscapeError(f"path {norm!r} resolves outside the files root")
        try:
            mode = stat.S_IMODE(os.stat(real).st_mode)
        except FileNotFoundError:
            mode = 0o644
        fd, tmp = tempfile.mkstemp(dir=parent, prefix=_TMP_PREFIX, suffix=_TMP_SUFFIX)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(text.encode("utf-8"))
            os.chmod(tmp, mode)  # mkstemp's 0600 would silently tighten the file
            if gate is not None and not gate.enter():
                os.unlink(tmp)  # the caller was told this write failed: keep it so
                return
            os.replace(tmp, real)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise

    def _delete(self, path: str, gate: CommitGate | None = None) -> None:
        norm, lexical, real = self._resolve(path)
        if real == self.root:
            raise InvalidArgument("the root directory cannot be deleted")
        if gate is not None and not gate.enter():
            return  # the caller was told this delete failed
        try:
            if os.path.islink(lexical):
                os.unlink(lexical)  # the link itself, never what it points at
            elif os.path.isdir(real):
                os.rmdir(real)
            else:
                os.unlink(real)
        except FileNotFoundError:
            raise FileNotFoundError(errno.ENOENT, "no such file or directory", norm) from None
        except OSError as exc:
            raise OSError(exc.errno, exc.strerror, norm) from None
