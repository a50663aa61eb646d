"""The agentkit-memory command, driven the way a user drives it: as a process."""

from __future__ import annotations

import itertools
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentkit.state.memory import HYBRID_RRF_CONSTANT as RRF_CONSTANT

FIXTURES = Path(__file__).parent / "fixtures"
NOTES = FIXTURES / "notes"
BEIR = FIXTURES / "beir_tiny"


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTKIT_")}
    env["AGENTKIT_EMBEDDER"] = "hashing"
    env.update(extra)
    return env


def run(
    *args: str, cwd: Path, env: dict[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agentkit.cli", *args],
        cwd=cwd,
        env=_env() if env is None else env,
        capture_output=True,
        text=True,
        timeout=timeout,
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
    assert lines[0].startswith("agentkit-memory: error: ")
    return lines[0]


def rows(db: Path) -> int:
    with sqlite3.connect(db) as conn:
        return int(conn.execute("SELECT count(*) FROM chunks").fetchone()[0])


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A folder with a copy of the notes, already ingested into the default store."""
    root = tmp_path_factory.mktemp("cli")
    shutil.copytree(NOTES, root / "notes")
    ok(run("ingest", "notes", cwd=root))
    yield root


def test_ingest_creates_the_default_store_and_reports(tmp_path: Path) -> None:
    shutil.copytree(NOTES, tmp_path / "notes")
    result = run("ingest", "notes", cwd=tmp_path)
    ok(result)
    db = tmp_path / ".agentkit" / "memory.db"
    assert db.is_file()
    assert rows(db) == 3
    assert "3 doc(s)" in result.stderr and "3 written" in result.stderr


def test_query_prints_a_table(workdir: Path) -> None:
    out = ok(run("query", "tomatoes need sunlight", "-k", "2", cwd=workdir))
    header, first, *rest = out.strip().splitlines()
    assert header.split()[:6] == ["rank", "score", "source(s)", "id", "path", "snippet"]
    assert "notes/gardening.txt#0" in first
    assert "dense+lexical" in first
    assert len(rest) == 1


def test_query_json_is_machine_readable(workdir: Path) -> None:
    doc = json.loads(ok(run("query", "keep tenants apart", "-k", "3", "--json", cwd=workdir)))
    assert doc["mode"] == "hybrid"
    assert doc["scope"] == {"org_id": None, "domain_id": None}
    first = doc["results"][0]
    assert first["rank"] == 1
    assert first["path"] == "notes/tenancy.md"
    assert first["title"] == "Keeping tenants apart"
    assert first["sources"] == ["dense", "lexical"]
    assert first["score"] == pytest.approx(2 / (RRF_CONSTANT + 1))
    assert len({r["id"] for r in doc["results"]}) == len(doc["results"])


def test_query_explain_shows_both_halves_merges_and_timings(workdir: Path) -> None:
    out = ok(run("query", "tenants scope", "-k", "2", "--explain", cwd=workdir))
    assert "[dense]" in out and "[lexical]" in out
    assert "ms" in out and "own ranks and scores" in out
    assert "dedupe (by id)" in out
    doc = json.loads(ok(run("query", "tenants scope", "--explain", "--json", cwd=workdir)))
    explain = doc["explain"]
    assert [s["source"] for s in explain["sources"]] == ["dense", "lexical"]
    assert all(s["ms"] >= 0 and s["results"] for s in explain["sources"])
    merged = {m["id"]: m["ranks"] for m in explain["merged"]}
    assert doc["results"][0]["id"] in merged
    assert set(merged[doc["results"][0]["id"]]) == {"dense", "lexical"}


@pytest.mark.parametrize("mode", ["--dense", "--lexical"])
def test_one_half_only(workdir: Path, mode: str) -> None:
    doc = json.loads(ok(run("query", "search operators", mode, "--json", cwd=workdir)))
    assert {tuple(r["sources"]) for r in doc["results"]} == {(mode[2:],)}
    assert doc["results"][0]["path"] == "notes/fts_syntax.md"


@pytest.fixture(scope="module")
def many(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Ten short notes that all share a word, two of them with the very same text."""
    root = tmp_path_factory.mktemp("many")
    notes = root / "notes"
    notes.mkdir()
    for i, topic in enumerate(["tomatoes", "basil", "peppers", "onions", "garlic",
                               "carrots", "beans", "leeks"]):
        (notes / f"{topic}.txt").write_text(f"Garden note {i}: water the {topic} at dawn.\n")
    for twin in ("twin-a.txt", "twin-b.txt"):
        (notes / twin).write_text("Garden rule: compost the weeds, never the seeds.\n")
    ok(run("ingest", "notes", cwd=root))
    return root


@pytest.mark.parametrize("mode", ["--dense", "--lexical", "--hybrid"])
def test_k_is_how_many_rows_every_mode_prints(many: Path, mode: str) -> None:
    flags = [] if mode == "--hybrid" else [mode]
    table = ok(run("query", "garden note water", "-k", "3", *flags, cwd=many))
    header, *body = table.strip().splitlines()
    assert header.split()[0] == "rank" and len(body) == 3
    doc = json.loads(ok(run("query", "garden note water", "-k", "3", "--json", *flags, cwd=many)))
    assert [r["rank"] for r in doc["results"]] == [1, 2, 3]
    assert len({r["id"] for r in doc["results"]}) == 3


def test_records_sharing_their_text_are_two_results(many: Path) -> None:
    for flags in ([], ["--dense"], ["--lexical"]):
        doc = json.loads(ok(run("query", "compost the weeds never the seeds", "-k", "2",
                                "--json", *flags, cwd=many)))
        assert sorted(r["path"] for r in doc["results"]) == ["notes/twin-a.txt",
                                                              "notes/twin-b.txt"], flags
    out = ok(run("query", "compost weeds", "-k", "2", "--explain", "--lexical", cwd=many))
    assert "[lexical]" in out and "[dense]" not in out and "dedupe" not in out


def test_query_text_with_search_syntax_is_safe(workdir: Path) -> None:
    out = ok(run("query", 'NEAR( "AND * -x OR', "--lexical", cwd=workdir))
    assert "fts_syntax.md" in out


def test_lexical_query_needs_no_embedder_and_store_remembers_its_embedder(
    workdir: Path,
) -> None:
    plain = _env()
    del plain["AGENTKIT_EMBEDDER"]
    # No --hashing: --lexical opens without a model; hybrid reuses the recorded embedder.
    assert "tenancy.md" in ok(run("query", "tenants", "--lexical", cwd=workdir, env=plain))
    assert "tenancy.md" in ok(run("query", "tenants", cwd=workdir, env=plain))


def test_reingest_adds_no_duplicates_and_drops_stale_chunks(tmp_path: Path) -> None:
    doc = tmp_path / "long.md"
    doc.write_text("# Long\n\n" + "\n\n".join(f"Paragraph {i} " + "word " * 60 for i in range(12)))
    ok(run("ingest", "long.md", "--chunk-size", "400", "--overlap", "50", cwd=tmp_path))
    db = tmp_path / ".agentkit" / "memory.db"
    first = rows(db)
    assert first > 3
    again = run("ingest", "long.md", "--chunk-size", "400", "--overlap", "50", cwd=tmp_path)
    ok(again)
    assert rows(db) == first
    assert f"{first} unchanged" in again.stderr and "0 written" in again.stderr
    doc.write_text("# Long\n\nNow it is short.")
    shrunk = run("ingest", "long.md", "--chunk-size", "400", "--overlap", "50", cwd=tmp_path)
    ok(shrunk)
    assert rows(db) == 1
    assert f"{first - 1} stale removed" in shrunk.stderr


def test_scopes_keep_tenants_apart(tmp_path: Path) -> None:
    shutil.copytree(NOTES, tmp_path / "notes")
    ok(run("--scope", "acme/support", "ingest", "notes", cwd=tmp_path))
    assert "tenancy.md" in ok(run("query", "tenants", "--scope", "acme/support", cwd=tmp_path))
    assert ok(run("query", "tenants", "--scope", "globex/support", cwd=tmp_path)).strip() == (
        "no results"
    )


def test_store_from_environment(tmp_path: Path) -> None:
    env = _env(AGENTKIT_STORE=str(tmp_path / "elsewhere.db"))
    ok(run("ingest", str(NOTES / "gardening.txt"), cwd=tmp_path, env=env))
    assert (tmp_path / "elsewhere.db").is_file()
    assert not (tmp_path / ".agentkit").exists()
    assert "gardening.txt" in ok(run("query", "tomatoes", cwd=tmp_path, env=env))


def test_eval_on_a_beir_folder(tmp_path: Path) -> None:
    out = ok(run("eval", str(BEIR), "--store", "bench.db", cwd=tmp_path))
    lines = out.strip().splitlines()
    assert lines[0].startswith("beir_tiny (test split, 6 judged queries)")
    assert lines[1].split() == ["mode", "nDCG@10", "recall@100", "ms/query"]
    scores = {line.split()[0]: float(line.split()[1]) for line in lines[2:]}
    assert set(scores) == {"dense", "lexical", "hybrid"}
    assert scores["lexical"] > 0.8 and scores["hybrid"] > 0.8
    assert rows(tmp_path / "bench.db") == 12
    # second run: corpus already there, nothing re-ingested, same numbers
    again = run("eval", str(BEIR), "--store", "bench.db", "--modes", "lexical", cwd=tmp_path)
    assert float(ok(again).strip().splitlines()[2].split()[1]) == scores["lexical"]
    assert rows(tmp_path / "bench.db") == 12


def test_a_second_process_reads_while_one_writes(tmp_path: Path) -> None:
    corpus = tmp_path / "big" / "corpus.jsonl"
    corpus.parent.mkdir()
    with corpus.open("w") as fh:
        for i in range(3000):
            fh.write(json.dumps({"_id": str(i), "title": f"Doc {i}",
                                 "text": f"record number {i} about topic {i % 17}"}) + "\n")
    ok(run("ingest", str(NOTES / "tenancy.md"), cwd=tmp_path))
    writer = subprocess.Popen(
        [sys.executable, "-m", "agentkit.cli", "ingest", str(corpus), "--batch", "100"],
        cwd=tmp_path, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        reads = 0
        seen: set[int] = set()
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            running = writer.poll() is None
            doc = json.loads(ok(run("query", "topic 3", "--lexical", "--json", "-k", "3",
                                    cwd=tmp_path)))
            seen.add(len(doc["results"]))
            reads += 1
            if not running:
                break
        _, err = writer.communicate(timeout=120)
    finally:
        if writer.poll() is None:
            writer.kill()
    assert writer.returncode == 0, err
    assert reads >= 2
    assert rows(tmp_path / ".agentkit" / "memory.db") == 3001


BAD_INPUTS = [
    (["--store", "missing/none.db", "query", "x"], "no store"),
    (["--store", "nothere.db", "query", "x"], "no store"),
    (["--scope", "a", "query", "x"], "ORG/DOMAIN"),
    (["--scope", "a/b/c", "ingest", "x.md"], "ORG/DOMAIN"),
    (["ingest", "does-not-exist.md"], "no such file"),
    (["ingest", "notes.pdf"], "no such file"),
    (["query", "x", "-k", "0"], "positive integer"),
    (["frobnicate"], "invalid choice"),
    (["eval", "."], "corpus.jsonl"),
    (["--hashing", "--model", "m", "query", "x"], "mutually exclusive"),
]


def test_bad_input_is_one_line_and_non_zero(tmp_path: Path) -> None:
    # All at once: each is its own process, and startup dominates.
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "agentkit.cli", *args], cwd=tmp_path, env=_env(),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        for args, _ in BAD_INPUTS
    ]
    for proc, (args, needle) in zip(procs, BAD_INPUTS, strict=True):
        out, err = proc.communicate(timeout=120)
        done = subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
        assert needle in one_line_error(done), args
    assert not (tmp_path / ".agentkit").exists()  # a failed read created nothing


def test_unsupported_file_type_and_bad_model(tmp_path: Path) -> None:
    (tmp_path / "slides.pdf").write_bytes(b"%PDF-1.4")
    assert "cannot ingest" in one_line_error(run("ingest", "slides.pdf", cwd=tmp_path))
    plain = _env()
    del plain["AGENTKIT_EMBEDDER"]
    line = one_line_error(
        run("--model", str(tmp_path / "no-such-model"), "ingest", str(NOTES), cwd=tmp_path,
            env=plain)
    )
    assert "no-such-model" in line


def test_mismatched_embedder_is_refused_clearly(workdir: Path) -> None:
    env = _env(AGENTKIT_MODEL="some/other-model")
    del env["AGENTKIT_EMBEDDER"]
    line = one_line_error(run("query", "x", "--dense", cwd=workdir, env=env))
    assert "refusing to mix in 'some/other-model (sentence-transformers fp32)'" in line
    assert "--embedder hashing" in line  # says how to use the store's own
    # a different hashing width is a different embedder
    result = subprocess.run(
        [sys.executable, "-c",
         "import asyncio; from agentkit.vector import SQLiteVectorStore, HashingEmbedder;"
         f"asyncio.run(SQLiteVectorStore({str(workdir / '.agentkit' / 'memory.db')!r},"
         " embedder=HashingEmbedder(32)).open())"],
        capture_output=True, text=True, timeout=60,
    )
    assert "refusing to mix" in result.stderr


def test_chunks_overlap_and_respect_word_boundaries() -> None:
    from agentkit.cli._ingest import Doc, chunks_of, split_text

    text = " ".join(f"Sentence number {i} ends here." for i in range(200))
    pieces = split_text(text, 300, 60)
    assert len(pieces) > 10
    assert all(len(p) <= 300 for p in pieces)
    for a, b in itertools.pairwise(pieces):
        assert a.split()[-1].endswith(".")  # cut at a sentence end
        assert b.split()[0] in a  # the next chunk starts inside the previous one
    doc = Doc(key="/k", path="k.md", doc_id="k.md", title="K", text=text)
    first, second = chunks_of(doc, 300, 60), chunks_of(doc, 300, 60)
    assert [c.id for c in first] == [c.id for c in second]  # deterministic ids
    assert len({c.id for c in first}) == len(first)
    assert first[3].metadata == {
        "path": "k.md", "doc_id": "k.md", "title": "K", "position": 3, "n_chunks": len(first)
    }
    assert split_text("   ", 300, 60) == []
    assert split_text("short", 300, 60) == ["short"]


# --- the first hour: finding the command, its version, its flags ------------------------


def test_version_and_python_dash_m_agentkit(workdir: Path) -> None:
    import agentkit

    for module in ("agentkit", "agentkit.cli"):
        done = subprocess.run(
            [sys.executable, "-m", module, "--version"],
            cwd=workdir, env=_env(), capture_output=True, text=True, timeout=120,
        )
        assert ok(done) == f"agentkit-memory {agentkit.__version__}\n"
    # python -m agentkit is the whole command, not just --version
    by_module = subprocess.run(
        [sys.executable, "-m", "agentkit", "query", "tenants", "--lexical", "--json"],
        cwd=workdir, env=_env(), capture_output=True, text=True, timeout=120,
    )
    assert ok(by_module) == ok(run("query", "tenants", "--lexical", "--json", cwd=workdir))


TYPOS = [
    (["qurey", "x"], "did you mean query?"),
    (["query", "x", "--lexcal"], "did you mean --lexical?"),
    (["query", "x", "--denes"], "did you mean --dense?"),
    (["query", "x", "--scpoe", "a/b"], "did you mean --scope?"),
    (["ingest", "notes", "--chunk-sise", "300"], "did you mean --chunk-size?"),
    (["forget", "--wehre", "k=v"], "did you mean --where?"),
    (["stats", "--jsn"], "did you mean --json?"),
    (["mcp", "tokn"], "did you mean token?"),
    (["--hasing", "stats"], "did you mean --hashing?"),
]


@pytest.mark.parametrize(("argv", "hint"), TYPOS)
def test_a_typo_gets_the_nearest_real_name(
    argv: list[str],
    hint: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from agentkit.cli import main

    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    line = capsys.readouterr().err.strip()
    assert len(line.splitlines()) == 1 and line.startswith("agentkit-memory: error: ")
    assert hint in line
    assert not (tmp_path / ".agentkit").exists()


def test_nothing_close_gets_no_suggestion(capsys: pytest.CaptureFixture[str]) -> None:
    from agentkit.cli import main

    assert main(["query", "x", "--zzzzzz"]) == 2
    assert main(["zzzzzz"]) == 2
    assert "did you mean" not in capsys.readouterr().err


def test_every_query_flag_says_what_it_does(capsys: pytest.CaptureFixture[str]) -> None:
    from agentkit.cli import main

    with pytest.raises(SystemExit):
        main(["query", "--help"])
    text = capsys.readouterr().out
    options = text[text.index("options:"):].splitlines()[1:]
    for flag in ("--dense", "--lexical", "--json", "--explain"):
        (line,) = [o for o in options if o.strip().startswith(flag)]
        assert line.strip() != flag, f"{flag} has no help text"


def test_a_missing_embedding_model_names_the_extra_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from agentkit.cli import main

    monkeypatch.delenv("AGENTKIT_EMBEDDER", raising=False)
    monkeypatch.delenv("AGENTKIT_MODEL", raising=False)
    # As without the extra: neither the runtime nor the model package can be imported.
    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    monkeypatch.setitem(sys.modules, "agentkit_minilm_onnx", None)
    db = tmp_path / "m.db"
    assert main(["--store", str(db), "ingest", str(NOTES / "gardening.txt")]) == 1
    line = capsys.readouterr().err.strip()
    assert "pip install 'agentkit-memory[embeddings]'" in line and "--hashing" in line
    assert "torch" not in line
    assert not db.exists()


# --- an empty scope says where the records are ------------------------------------------


def test_a_query_on_an_empty_scope_names_the_scopes_that_hold_records(tmp_path: Path) -> None:
    shutil.copytree(NOTES, tmp_path / "notes")
    ok(run("--scope", "acme/support", "ingest", "notes", cwd=tmp_path))
    ok(run("ingest", "notes/tenancy.md", cwd=tmp_path))
    empty = run("--scope", "globex/support", "query", "tenants", cwd=tmp_path)
    assert ok(empty).strip() == "no results"
    note = empty.stderr.strip()
    assert note.startswith("note: scope globex/support holds no records")
    assert "acme/support (3 chunks)" in note and "- (1 chunk, no --scope)" in note
    as_json = run("--scope", "globex/support", "query", "tenants", "--json", cwd=tmp_path)
    assert json.loads(ok(as_json))["results"] == []  # stdout stays pure JSON
    assert "acme/support" in as_json.stderr
    # A scope that holds records but matches nothing is just "no results".
    nothing = run("--scope", "acme/support", "query", "zzqqxx", "--lexical", cwd=tmp_path)
    assert ok(nothing).strip() == "no results" and nothing.stderr == ""
    ok(run("--scope", "acme/support", "forget", "--all", "--yes", cwd=tmp_path))
    ok(run("forget", "--all", "--yes", cwd=tmp_path))
    bare = run("query", "tenants", "--lexical", cwd=tmp_path)
    assert ok(bare).strip() == "no results"
    assert "holds no records, and no other scope does" in bare.stderr
