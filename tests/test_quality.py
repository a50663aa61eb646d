"""The quality bar of issue 2, enforced: ruff-clean everywhere, mypy --strict on shipped code."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ["src", "bridges/langchain/src", "bridges/llamaindex/src"]


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, timeout=600
    )


def test_ruff_is_clean() -> None:
    proc = _run("ruff", "check", "src", "bridges", "tests", "bench")
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]


def test_mypy_strict_is_clean_on_shipped_code() -> None:
    proc = _run("mypy", "--strict", *SHIPPED)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]


def test_every_distribution_ships_py_typed() -> None:
    for package in (
        "src/agentkit",
        "bridges/langchain/src/agentkit_langchain",
        "bridges/llamaindex/src/agentkit_llamaindex",
    ):
        assert (ROOT / package / "py.typed").is_file(), package
