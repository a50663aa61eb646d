"""The examples that need PostgreSQL run, against the test server.

docs/bridges.md shows excerpts of them (tests/test_doc_snippets.py checks that the
excerpts are verbatim); here the whole files run, each in a database of its own.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples" / "postgres").glob("*.py"))


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_postgres_example_runs(path: Path, db_url: str, tmp_path: Path) -> None:
    paths = [ROOT / "src", ROOT / "bridges/langchain/src", ROOT / "bridges/llamaindex/src"]
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([*map(str, paths), os.environ.get("PYTHONPATH", "")]),
    }
    proc = subprocess.run(
        [sys.executable, str(path), db_url],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    # each store answered the tenant's query with the note it was given
    assert proc.stdout.count("('n1', 'acme refunds go to store credit')") == 2, proc.stdout
