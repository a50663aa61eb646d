"""Whether a path found in a user's folder stays in it once its symlinks are followed.

One check for every command that reads a folder: ``ingest`` skips a linked file that
leaves the tree it walks, and ``import`` refuses a store folder holding such a link, so
neither pulls in a file from somewhere the user did not point at.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

__all__ = ["links_out", "stays_inside"]


def stays_inside(path: Path, root: Path) -> bool:
    """``path``, with every symlink on the way followed, lies under ``root`` (resolved)."""
    return path.resolve().is_relative_to(root)


def links_out(folder: Path) -> Iterator[tuple[Path, Path]]:
    """(link, where it leads) for every symlink under ``folder``, to a file or a folder,
    whose target lies outside it. Linked folders are not entered."""
    top = folder.resolve()
    for dirpath, dirnames, filenames in os.walk(folder):
        for name in sorted(dirnames + filenames):
            entry = Path(dirpath) / name
            if entry.is_symlink() and not stays_inside(entry, top):
                yield entry, entry.resolve()
