"""`--where` and `--filter` on `query` and `forget`, run as a user runs them.

The BEIR fixture's twelve records carry ``doc_id`` "d1".."d12" and ``position`` 0, so
operator filters on them have answers a reader can check by eye.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

BEIR = Path(__file__).parent / "fixtures" / "beir_tiny"


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTKIT_")}
    env["AGENTKIT_EMBEDDER"] = "hashing"
    return subprocess.run(
        [sys.executable, "-m", "agentkit.cli", *args],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=120,
    )


def ok(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("cli_filter")
    shutil.copytree(BEIR, folder / "beir")
    ok(run("--store", "m.db", "ingest", "beir", cwd=folder))
    return folder


def query(folder: Path, *args: str) -> list[dict[str, Any]]:
    out = ok(run("--store", "m.db", "query", "vitamin coffee exercise sleep", "-k", "20",
                 "--json", *args, cwd=folder))
    results: list[dict[str, Any]] = json.loads(out)["results"]
    return results


@pytest.mark.parametrize("mode", ["--dense", "--lexical", "--hybrid"])
def test_query_filter_takes_the_whole_language(store: Path, mode: str) -> None:
    flags = () if mode == "--hybrid" else (mode,)
    wanted = {"d1", "d2", "d3"}
    hits = query(store, *flags, "--filter",
                 '{"$or": [{"doc_id": {"$in": ["d1", "d2"]}}, {"doc_id": "d3"}],'
                 ' "position": {"$gte": 0}}')
    assert {h["metadata"]["doc_id"] for h in hits} == wanted
    none = query(store, *flags, "--filter", '{"position": {"$gt": 0}}')
    assert none == []


def test_query_where_and_filter_both_hold(store: Path) -> None:
    hits = query(store, "--where", "doc_id=d1", "--where", "doc_id=d2",
                 "--filter", '{"doc_id": {"$ne": "d2"}}')
    assert [h["metadata"]["doc_id"] for h in hits] == ["d1"]


@pytest.mark.parametrize(
    ("text", "needles"),
    [
        ('{"year": {"$gte": [1]}}', ("'year'", "$gte")),
        ('{"doc_id": {"$regex": "d"}}', ("'doc_id'", "$regex")),
        ('{"$or": {"doc_id": "d1"}}', ("$or",)),
        ("[1, 2]", ("JSON object",)),
        ("{not json", ("JSON object",)),
    ],
)
def test_bad_filter_is_a_usage_error_naming_key_and_operator(
    store: Path, text: str, needles: tuple[str, ...]
) -> None:
    for verb in (("query", "x"), ("forget",)):
        result = run("--store", "m.db", *verb, "--filter", text, cwd=store)
        assert result.returncode == 2, result.stderr
        assert "Traceback" not in result.stderr
        for needle in needles:
            assert needle in result.stderr, (needle, result.stderr)


def test_forget_filter_deletes_exactly_what_query_finds(tmp_path: Path) -> None:
    shutil.copytree(BEIR, tmp_path / "beir")
    ok(run("--store", "m.db", "ingest", "beir", cwd=tmp_path))
    flt = '{"doc_id": {"$nin": ["d1", "d2", "d3"]}, "title": {"$exists": true}}'
    found = {h["metadata"]["doc_id"] for h in query(tmp_path, "--lexical", "--filter", flt)}
    assert found and not found & {"d1", "d2", "d3"}
    out = ok(run("--store", "m.db", "forget", "--filter", flt, "--json", cwd=tmp_path))
    assert json.loads(out)["forgot"] == 12 - 3
    left = {h["metadata"]["doc_id"] for h in query(tmp_path, "--lexical")}
    assert left == {"d1", "d2", "d3"}
