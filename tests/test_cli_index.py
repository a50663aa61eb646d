"""``agentkit-memory index check|rebuild`` and ``query --exact``, run as a user runs them."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

NOTES = Path(__file__).parent / "fixtures" / "notes"


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTKIT_")}
    env["AGENTKIT_EMBEDDER"] = "hashing"
    return subprocess.run(
        [sys.executable, "-m", "agentkit.cli", *args],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=120,
    )


def ok(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    return result.stdout


def one_line_error(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode != 0
    assert "Traceback" not in result.stderr + result.stdout
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


def _states(cwd: Path) -> dict[str, str]:
    found = json.loads(ok(run("index", "check", "--json", "--store", "s.db", cwd=cwd)))
    return {row["index"]: row["state"] for row in found}


def test_check_says_where_each_index_stands_and_rebuild_brings_them_current(
    tmp_path: Path,
) -> None:
    ok(run("ingest", str(NOTES), "--store", "s.db", cwd=tmp_path))
    # Ingest keeps the word index current; no dense query has built the dense one yet.
    assert _states(tmp_path) == {"lexical": "current", "dense": "missing"}
    ok(run("query", "tomatoes", "--dense", "--store", "s.db", cwd=tmp_path))
    # A read-only query never writes beside the file: still missing on disk.
    assert _states(tmp_path)["dense"] == "missing"
    out = ok(run("index", "rebuild", "--store", "s.db", cwd=tmp_path))
    assert "rebuilt the lexical and dense indexes of 1 scope" in out
    assert _states(tmp_path) == {"lexical": "current", "dense": "current"}
    # Damage the dense base: check names it, the next query still answers, rebuild mends.
    dense = tmp_path / "s.db.dense"
    for path in dense.rglob("base-*.vectors.npy"):
        path.write_bytes(b"garbage")
    assert _states(tmp_path)["dense"] == "damaged"
    exact = ok(run("query", "tomatoes", "--dense", "--exact", "--store", "s.db", cwd=tmp_path))
    approx = ok(run("query", "tomatoes", "--dense", "--store", "s.db", cwd=tmp_path))
    assert exact == approx and "tomato" in exact.lower()
    ok(run("index", "rebuild", "--store", "s.db", cwd=tmp_path))
    assert _states(tmp_path)["dense"] == "current"
    shutil.rmtree(dense)
    assert _states(tmp_path)["dense"] == "missing"


def test_index_on_a_missing_store_is_one_clear_error(tmp_path: Path) -> None:
    line = one_line_error(run("index", "check", "--store", "nope.db", cwd=tmp_path))
    assert "nope.db" in line
