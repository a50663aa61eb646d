"""Reading input files: regular files only, line by line with exact line numbers.

A path named ``notes.txt`` can be a FIFO (reading it waits forever for a writer) and a
``.md`` symlink can point at ``/dev/zero`` (reading it never ends). Such a path is
refused by name before anything is written: it is checked with ``stat`` when the
command line is planned, and again on the open descriptor, which is opened
non-blocking so that even a FIFO swapped in between the two checks cannot hang us.
"""

from __future__ import annotations

import gzip
import os
import stat
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import BinaryIO

from agentkit.kernel.errors import InvalidArgument

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def _kind(mode: int) -> str:
    for test, name in _KINDS:
        if test(mode):
            return name
    return "not a plain file"


def _refuse(path: Path, mode: int) -> InvalidArgument:
    return InvalidArgument(
        f"{str(path)!r} is not a regular file ({_kind(mode)}); only regular files are read"
    )


def check_regular(path: Path) -> os.stat_result:
    """``stat`` (through symlinks) and refuse anything but a regular file."""
    try:
        info = path.stat()
    except OSError as exc:
        raise InvalidArgument(f"cannot read {str(path)!r}: {exc.strerror or exc}") from None
    if not stat.S_ISREG(info.st_mode):
        raise _refuse(path, info.st_mode)
    return info


def open_regular(path: Path) -> BinaryIO:
    """Open for reading, refusing anything that is not a regular file once opened."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise InvalidArgument(f"cannot read {str(path)!r}: {exc.strerror or exc}") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise _refuse(path, mode)
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_bytes(path: Path, limit: int) -> bytes:
    """The whole file, refused when it holds more than ``limit`` bytes (never truncated)."""
    with open_regular(path) as fh:
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise InvalidArgument(
            f"{str(path)!r} is too large to ingest as one document (over {limit} bytes)"
        )
    return data


def lines(path: Path) -> Iterator[tuple[int, str]]:
    """(line number, text) for a UTF-8 file, gzip-compressed when its name ends in .gz."""
    with open_regular(path) as raw:
        gz = path.name.endswith(".gz")
        fh: Iterable[bytes] = gzip.GzipFile(fileobj=raw, mode="rb") if gz else raw
        try:
            for lineno, line in enumerate(fh, 1):
                try:
                    yield lineno, line.decode("utf-8")
                except UnicodeDecodeError as exc:
                    raise InvalidArgument(
                        f"{path}:{lineno}: not UTF-8 text (byte {exc.start + 1} of the line)"
                    ) from None
        except (OSError, EOFError) as exc:  # a corrupt or truncated .gz
            raise InvalidArgument(f"cannot read {str(path)!r}: {exc}") from None
