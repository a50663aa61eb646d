"""Makes the helpers this folder's tests share importable: ``lc_chroma_oracle``.

Tests run with --import-mode=importlib, which puts no test folder on sys.path, so the
helper file is loaded by path here (conftest runs before the folder's tests import).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path


def _load(file: str, name: str) -> None:
    spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name(file))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)


_load("_chroma_oracle.py", "lc_chroma_oracle")
