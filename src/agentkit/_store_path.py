"""Where the default store lives: one definition for the CLI and the bridges.

Its own tiny module so the command line can name the default without importing the
interop layer (and numpy with it) before it knows what it will run.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["DEFAULT_STORE_PATH", "default_store_path"]

DEFAULT_STORE_PATH = os.path.join(".agentkit", "memory.db")
"""The CLI's default store, so ``agentkit-memory query`` reads what a bridge wrote."""


def default_store_path(path: str | Path | None) -> str | Path:
    """``path``, else ``$AGENTKIT_STORE``, else the CLI's default file."""
    if path is not None:
        return path
    return os.environ.get("AGENTKIT_STORE") or DEFAULT_STORE_PATH
