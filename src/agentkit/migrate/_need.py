"""Framework and store packages are optional: imported when a reader needs them."""

from __future__ import annotations

import importlib
from types import ModuleType

from agentkit.kernel.errors import StoreError


def need(module: str, package: str, what: str) -> ModuleType:
    """``module``, or a StoreError telling the user which package to install."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise StoreError(
            f"reading {what} needs the {package!r} package, which is not installed "
            f"({exc}); install it with: pip install {package} "
            "(or: pip install 'agentkit-memory[import]')"
        ) from None
