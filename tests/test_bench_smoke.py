"""Every benchmark script still runs, at its smallest, and still reports its numbers.

Nothing else runs the benches day to day (a full ``make bench`` takes most of an hour),
so a renamed field once kept ``bench/vector_search.py`` crashing for weeks, and two
scripts printed numbers ``run_all.py`` could not read. Here each script runs the way
``run_all.py`` runs it (its own process, from the repository root) with the smallest
sizes its options allow, and must exit 0 and print only well-formed ``RESULT`` lines,
at least one. Whether the numbers meet a target is the benches' business, not this one.

The SciFact scripts get the repository's tiny BEIR fixture in the layout they read
(``corpus.jsonl.gz``, ``qrels/train.tsv``): SciFact itself lives outside the repository
and must not be copied into it, and a clean clone may have no ``../shared`` next to it.
Their caches go to a temporary folder (``AGENTKIT_BENCH_CACHE``), never into
``bench/.cache``, where the real runs keep the SciFact store. Models load offline.
"""

from __future__ import annotations

import gzip
import importlib.util
import math
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "bench"
BEIR_TINY = ROOT / "tests" / "fixtures" / "beir_tiny"
TIMEOUT = 300.0  # seconds per script: only a hang gets near it

# Script -> arguments. "{beir}" is the tiny BEIR folder, "{tmp}" a folder of the run's own.
# The smallest sizes each script accepts; where one is larger than it looks, why:
SMOKE: dict[str, tuple[str, ...]] = {
    "conformance_kit": ("--rounds", "1"),
    # sentence-transformers is left out: loading torch three times is the slow part.
    "default_embedder": (
        "{beir}", "--n", "5", "--queries", "3", "--cold-runs", "1", "--eval-limit", "3",
        "--skip-st",
    ),
    # Enough records that the 0.1% filter still matches some.
    "filtered_search": ("--n", "2000", "--queries", "3", "--lc-n", "200", "--rounds", "2"),
    "import_rate": ("--n", "20", "--n-embed", "8", "--n-hashing", "20", "--rounds", "1"),
    "ingest_query": ("{beir}", "--n", "5", "--queries", "3", "--big", "30"),
    "langchain_fanout": ("--repeat", "1", "--delay", "0.001"),
    # _paired's spread needs two rounds (quartiles of one ratio do not exist).
    "langchain_overhead": ("--rounds", "2", "--calls", "1"),
    "langgraph_store": ("--items", "20", "--rounds", "1", "--calls", "1"),
    # The first ten passes over queries[:10] + queries only warm up: six queries at least.
    "lexical_engines": ("{beir}", "--n", "30", "--queries", "7"),
    "llamaindex_fanout": ("--rounds", "1"),
    "llamaindex_overhead": ("--rounds", "2", "--calls", "1"),
    "load": ("--seed-docs", "50", "--burst", "20", "--soak", "100"),
    # The model-free embedder only: the MiniLM line starts six processes that each load it.
    "mcp_latency": ("--embedders", "hashing", "--calls", "1", "--cli-runs", "1"),
    "merge": ("--rounds", "1"),
    # Ten tenants that must each hold the top 4.
    "port_overhead": ("--n", "50", "--rounds", "1"),
    "postgres": ("--n", "50", "--queries", "5", "--online", "10", "--ef", "40"),
    "postgres_bm25": ("{beir}", "--n", "30", "--queries", "3"),
    "quality": ("{beir}", "--store", "{tmp}/quality.db"),
    "query_cost": ("--rows", "100"),
    "reader_hop": ("--rounds", "1"),
    # One engine: each builds its own graph, and the MiniLM sentences are encoded once.
    # LanceDB (a bench-only dependency) is left out; three tenants of 100 in one file.
    "scale": (
        "{beir}", "--sizes", "300", "--engines", "usearch_i8", "--queries", "5",
        "--foreign-writes", "2", "--tenants", "3", "--tenant-size", "100",
    ),
    "tracing_overhead": (
        "--rounds", "2", "--calls", "1", "--chunks", "50", "--hot-calls", "10",
        "--hot-rounds", "1",
    ),
    "vector_search": ("--n", "1000", "--rounds", "1"),
    "write_contention": ("--n", "20", "--batch", "10", "--rounds", "1"),
}


def _run_all() -> ModuleType:
    """bench/run_all.py, loaded by path (bench/ is not a package): its script list and
    its RESULT parsing are the ones this test holds the scripts to."""
    spec = importlib.util.spec_from_file_location("agentkit_bench_run_all", BENCH / "run_all.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


RUN_ALL = _run_all()


def test_every_bench_script_has_a_smoke_run() -> None:
    """A new script without an entry here fails, instead of going unrun."""
    ran = {path.stem for path in RUN_ALL.scripts([], [])}
    assert ran, "run_all.py found no bench scripts"
    assert sorted(ran - SMOKE.keys()) == [], "bench scripts with no smoke run: add them to SMOKE"
    assert sorted(SMOKE.keys() - ran) == [], "smoke runs for scripts run_all.py does not run"


@pytest.fixture(scope="module")
def beir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny BEIR fixture as the SciFact scripts read it: gzipped corpus, train split."""
    folder = tmp_path_factory.mktemp("beir")
    (folder / "qrels").mkdir()
    with gzip.open(folder / "corpus.jsonl.gz", "wb") as out:
        out.write((BEIR_TINY / "corpus.jsonl").read_bytes())
    shutil.copyfile(BEIR_TINY / "queries.jsonl", folder / "queries.jsonl")
    shutil.copyfile(BEIR_TINY / "qrels" / "test.tsv", folder / "qrels" / "train.tsv")
    return folder


def _env(tmp: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        ANONYMIZED_TELEMETRY="False",
        OPENBLAS_NUM_THREADS="1",
        OMP_NUM_THREADS="1",
        HF_HUB_OFFLINE="1",  # the bundled MiniLM only; nothing fetched
        TRANSFORMERS_OFFLINE="1",
        AGENTKIT_BENCH_CACHE=str(tmp / "cache"),
        TMPDIR=str(tmp),  # whatever a script leaves in a temp folder goes with tmp_path
        PYTHONUNBUFFERED="1",
    )
    return env


def _run(argv: list[str], env: dict[str, str]) -> tuple[int, str, str]:
    """Run to completion; on a hang kill the script's whole process group (servers too)."""
    proc = subprocess.Popen(
        argv, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        err += f"\n[killed: still running after {TIMEOUT:.0f}s]"
    return proc.returncode, out, err


@pytest.mark.parametrize("script", sorted(SMOKE))
def test_bench_script_runs_and_reports(script: str, beir: Path, tmp_path: Path) -> None:
    args = [a.format(beir=beir, tmp=tmp_path) for a in SMOKE[script]]
    code, out, err = _run([sys.executable, str(BENCH / f"{script}.py"), *args], _env(tmp_path))
    tail = f"\n--- stdout (end) ---\n{out[-3000:]}\n--- stderr (end) ---\n{err[-3000:]}"
    assert code == 0, f"{script}.py {' '.join(args)} exited {code}{tail}"
    claimed = [line.strip() for line in out.splitlines() if line.startswith("RESULT")]
    malformed = [
        line for line in claimed
        if not (m := RUN_ALL.RESULT.match(line)) or not _finite(m.group(2))
    ]
    assert not malformed, f"RESULT lines run_all.py cannot read: {malformed}{tail}"
    assert RUN_ALL.parse_results(out), f"{script}.py printed no RESULT line{tail}"


def _finite(text: str) -> bool:
    try:
        return math.isfinite(float(text))
    except ValueError:
        return False
