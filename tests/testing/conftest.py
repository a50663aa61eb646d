"""A scratch directory for the kit's file-backed stores: tmpfs where the machine has one.

The kit checks the contract (ids, scopes, counts), not durability; on the shared disk
each SQLite commit's fsync costs 70-150 ms, and the kit makes a few hundred of them.
Durability is tested on disk elsewhere (tests/reliability, tests/test_sqlite_store.py).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

_SHM = Path("/dev/shm")


@pytest.fixture
def scratch(tmp_path: Path) -> Iterator[Path]:
    """A fresh empty directory, on tmpfs when /dev/shm is writable, else ``tmp_path``."""
    if not (_SHM.is_dir() and os.access(_SHM, os.W_OK)):
        yield tmp_path
        return
    path = Path(tempfile.mkdtemp(prefix="agentkit-kit-", dir=_SHM))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
