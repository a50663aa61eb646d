"""The command line under crashes and bad input: what a user is promised when things go wrong.

A crash between writing a document's new chunks and removing its old ones is repaired by
the next run; a bad BEIR line refuses the whole run before anything is written and names
its file and line; only regular files are read; an empty ``--scope`` is refused; and read
commands never create or change the file they are pointed at.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agentkit.cli._ingest import chunk_id, ingest
from agentkit.kernel.ctx import Scope
from agentkit.vector import HashingEmbedder, SQLiteVectorStore

FIXTURES = Path(__file__).parent / "fixtures"
NOTES = FIXTURES / "notes"
BEIR = FIXTURES / "beir_tiny"


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTKIT_")}
    env["AGENTKIT_EMBEDDER"] = "hashing"
    env.update(extra)
    return env


def run(
    *args: str, cwd: Path, env: dict[str, str] | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    # The timeout turns a hang (a FIFO read forever) into a failure, not a stuck suite.
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


def error_line(result: subprocess.CompletedProcess[str], code: int = 1) -> str:
    assert result.returncode == code, (result.returncode, result.stderr)
    assert "Traceback" not in result.stderr + result.stdout
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("agentkit-memory: error: ")
    assert "internal error" not in lines[0]
    return lines[0]


def all_rows(db: Path) -> list[tuple[Any, ...]]:
    with sqlite3.connect(db) as conn:
        query = "SELECT org, domain, id, text, metadata FROM chunks ORDER BY rowid"
        return conn.execute(query).fetchall()


def snapshot(folder: Path) -> dict[str, tuple[bytes, int]]:
    """Every file in ``folder`` with its bytes and mtime: what "nothing changed" means."""
    return {
        p.name: (p.read_bytes(), p.stat().st_mtime_ns)
        for p in sorted(folder.iterdir())
        if p.is_file() and not p.is_symlink()
    }


# --- 2. a crash between the upsert and the stale-chunk delete ----------------------------


LONG = "# Long\n\n" + "\n\n".join(f"Paragraph {i} " + "word " * 60 for i in range(12))


async def test_a_crash_before_the_stale_delete_is_repaired_by_the_next_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    doc = tmp_path / "long.md"
    doc.write_text(LONG)
    key = str(doc.resolve())
    scope = Scope("acme", "docs")
    async with SQLiteVectorStore(tmp_path / "m.db", embedder=HashingEmbedder(64)) as store:
        first = await ingest(store, scope, [str(doc)], size=400, overlap=50)
        n_old = first.chunks
        assert n_old > 3

        doc.write_text("# Long\n\nNow it is short.")

        async def crash(ids: Any, *, scope: Scope) -> None:
            raise RuntimeError("killed between the upsert and the delete")

        monkeypatch.setattr(store, "delete", crash)
        with pytest.raises(RuntimeError, match="killed"):
            await ingest(store, scope, [str(doc)], size=400, overlap=50)
        monkeypatch.undo()
        # The crash left the new first chunk and every old one after it.
        assert await store.count(scope=scope) == n_old

        again = await ingest(store, scope, [str(doc)], size=400, overlap=50)
        assert again.stale == n_old - 1
        assert await store.count(scope=scope) == 1
        kept = await store.get([chunk_id(key, p) for p in range(n_old)], scope=scope)
        assert [(c.id, c.text) for c in kept] == [(chunk_id(key, 0), "# Long\n\nNow it is short.")]

        clean = await ingest(store, scope, [str(doc)], size=400, overlap=50)
        assert (clean.stale, clean.written, clean.unchanged) == (0, 0, 1)


async def test_stale_chunks_left_by_several_crashed_versions_are_all_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    doc = tmp_path / "long.md"
    doc.write_text(LONG)
    key = str(doc.resolve())
    scope = Scope()

    async def crash(ids: Any, *, scope: Scope) -> None:
        raise RuntimeError("crash")

    async with SQLiteVectorStore(tmp_path / "m.db", embedder=HashingEmbedder(64)) as store:
        n_old = (await ingest(store, scope, [str(doc)], size=200, overlap=20)).chunks
        monkeypatch.setattr(store, "delete", crash)
        # Two shrinking versions, each crashing before its delete.
        doc.write_text(LONG[: len(LONG) // 2])
        with pytest.raises(RuntimeError):
            await ingest(store, scope, [str(doc)], size=200, overlap=20)
        doc.write_text(LONG[: len(LONG) // 4])
        with pytest.raises(RuntimeError):
            await ingest(store, scope, [str(doc)], size=200, overlap=20)
        monkeypatch.undo()
        doc.write_text("tiny")
        again = await ingest(store, scope, [str(doc)], size=200, overlap=20)
        assert again.stale == n_old - 1
        assert await store.count(scope=scope) == 1
        assert await store.get([chunk_id(key, p) for p in range(1, n_old + 1)], scope=scope) == []


def test_reingest_after_a_killed_run_reports_and_removes_stale_chunks(tmp_path: Path) -> None:
    """The same repair seen from the shell: a child that dies right after the upsert."""
    doc = tmp_path / "long.md"
    doc.write_text(LONG)
    ok(run("ingest", "long.md", "--chunk-size", "400", "--overlap", "50", cwd=tmp_path))
    db = tmp_path / ".agentkit" / "memory.db"
    n_old = len(all_rows(db))
    doc.write_text("# Long\n\nNow it is short.")
    killer = (
        "import os, sys\n"
        "from agentkit.vector.sqlite import SQLiteVectorStore\n"
        "async def die(self, ids, *, scope):\n"
        "    os._exit(9)\n"
        "SQLiteVectorStore.delete = die\n"
        "from agentkit.cli import main\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )
    died = subprocess.run(
        [sys.executable, "-c", killer, "ingest", "long.md", "--chunk-size", "400",
         "--overlap", "50"],
        cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=60,
    )
    assert died.returncode == 9, died.stderr
    assert len(all_rows(db)) == n_old
    again = run("ingest", "long.md", "--chunk-size", "400", "--overlap", "50", cwd=tmp_path)
    ok(again)
    assert f"{n_old - 1} stale removed" in again.stderr
    assert [r[3] for r in all_rows(db)] == ["# Long\n\nNow it is short."]


# --- 3. a BEIR line that parses but cannot be stored -------------------------------------


def _corpus(path: Path, bad_line: int, field: str, n: int = 600) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as fh:
        for i in range(1, n + 1):
            record = {"_id": f"d{i}", "title": f"Doc {i}", "text": f"record {i} about topic"}
            if i == bad_line:
                record[field] = "broken \ud800 half"  # valid JSON: written as the escape \\ud800
            fh.write(json.dumps(record) + "\n")


@pytest.mark.parametrize("field", ["text", "title", "_id"])
def test_an_unstorable_beir_line_refuses_the_whole_run_and_names_file_and_line(
    tmp_path: Path, field: str
) -> None:
    corpus = tmp_path / "late" / "corpus.jsonl"
    _corpus(corpus, 500, field)
    assert "\\ud800" in corpus.read_text(encoding="utf-8").splitlines()[499]
    ok(run("--store", "m.db", "ingest", str(NOTES / "gardening.txt"), cwd=tmp_path))
    before = all_rows(tmp_path / "m.db")
    line = error_line(
        run("--store", "m.db", "ingest", "late", "--batch", "50", cwd=tmp_path)
    )
    assert "corpus.jsonl:500" in line
    assert "surrogate" in line
    assert all_rows(tmp_path / "m.db") == before  # not one of the 499 good rows landed


def test_a_refused_beir_run_does_not_even_create_the_store(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus.jsonl"
    _corpus(corpus, 500, "text")
    line = error_line(run("--store", "fresh.db", "ingest", "corpus.jsonl", cwd=tmp_path))
    assert "corpus.jsonl:500" in line
    assert not (tmp_path / "fresh.db").exists()


def test_a_nul_character_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    # PostgreSQL cannot store NUL; the CLI refuses it up front for every store alike.
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(
        json.dumps({"_id": "a", "text": "fine"}) + "\n"
        + json.dumps({"_id": "b", "text": "nul \x00 here"}) + "\n"
    )
    line = error_line(run("--store", "m.db", "ingest", "corpus.jsonl", cwd=tmp_path))
    assert "corpus.jsonl:2" in line and "NUL" in line
    assert not (tmp_path / "m.db").exists()


# --- 4. only regular files are read -------------------------------------------------------


def test_ingest_refuses_a_fifo_by_name_instead_of_hanging(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "notes.txt")
    ok(run("--store", "m.db", "ingest", str(NOTES / "gardening.txt"), cwd=tmp_path))
    before = all_rows(tmp_path / "m.db")
    line = error_line(run("--store", "m.db", "ingest", "notes.txt", cwd=tmp_path, timeout=30))
    assert "notes.txt" in line and "not a regular file" in line
    assert all_rows(tmp_path / "m.db") == before


def test_ingest_refuses_a_symlink_to_a_device(tmp_path: Path) -> None:
    (tmp_path / "zero.md").symlink_to("/dev/zero")
    line = error_line(run("--store", "m.db", "ingest", "zero.md", cwd=tmp_path, timeout=30))
    assert "zero.md" in line and "not a regular file" in line
    assert not (tmp_path / "m.db").exists()


def test_ingest_refuses_a_fifo_beir_corpus(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "corpus.jsonl")
    line = error_line(run("--store", "m.db", "ingest", "corpus.jsonl", cwd=tmp_path, timeout=30))
    assert "corpus.jsonl" in line and "not a regular file" in line
    assert not (tmp_path / "m.db").exists()


def test_a_fifo_among_good_arguments_refuses_them_all(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "late.md")
    shutil.copy(NOTES / "gardening.txt", tmp_path / "good.txt")
    line = error_line(
        run("--store", "m.db", "ingest", "good.txt", "late.md", cwd=tmp_path, timeout=30)
    )
    assert "late.md" in line
    assert not (tmp_path / "m.db").exists()


def test_a_fifo_inside_an_ingested_folder_is_skipped(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    shutil.copy(NOTES / "gardening.txt", folder / "good.txt")
    os.mkfifo(folder / "pipe.md")
    (folder / "zero.md").symlink_to("/dev/zero")
    result = run("--store", "m.db", "ingest", "docs", cwd=tmp_path, timeout=30)
    ok(result)
    assert "1 doc(s)" in result.stderr


def test_eval_refuses_a_fifo_qrels_file(tmp_path: Path) -> None:
    data = tmp_path / "beir"
    shutil.copytree(BEIR, data)
    qrels = data / "qrels" / "test.tsv"
    qrels.unlink()
    os.mkfifo(qrels)
    line = error_line(run("--store", "m.db", "eval", "beir", cwd=tmp_path, timeout=30))
    assert "test.tsv" in line and "not a regular file" in line


# --- 5. an empty --scope ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["--scope", "", "query", "x"],
        ["query", "x", "--scope", ""],
        ["--scope=", "query", "x"],
        ["--scope", "", "ingest", "notes"],
        ["ingest", "notes", "--scope", ""],
        ["--scope", "", "eval", "beir"],
        ["eval", "beir", "--scope", ""],
    ],
)
def test_an_empty_scope_is_refused_like_any_other_malformed_scope(
    tmp_path: Path, args: list[str]
) -> None:
    shutil.copytree(NOTES, tmp_path / "notes")
    shutil.copytree(BEIR, tmp_path / "beir")
    ok(run("ingest", "notes", cwd=tmp_path))  # an unscoped bucket that must not be served
    store = tmp_path / ".agentkit" / "memory.db"
    before = all_rows(store)
    line = error_line(run(*args, cwd=tmp_path), code=2)
    assert "--scope must look like ORG/DOMAIN" in line and "''" in line
    assert all_rows(store) == before


# --- 6. read commands never create or change a file ----------------------------------------


def _plain_env() -> dict[str, str]:
    env = _env()
    del env["AGENTKIT_EMBEDDER"]  # the store's own record must decide, as for a user
    return env


@pytest.fixture(scope="module")
def hashing_store(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    """The bytes of a store written with --hashing, large enough to cut in places."""
    root = tmp_path_factory.mktemp("hashing-store")
    shutil.copytree(NOTES, root / "notes")
    big = root / "notes" / "more.md"
    big.write_text("\n\n".join(f"Paragraph {i} about tomatoes " + "word " * 80 for i in range(60)))
    ok(run("--store", "store.db", "--hashing", "ingest", "notes", cwd=root))
    return (root / "store.db").read_bytes()


@pytest.mark.parametrize("keep", [0.5, 0.9])
@pytest.mark.parametrize("mode", [[], ["--lexical"], ["--dense"], ["--hashing"]])
def test_query_on_a_truncated_store_names_the_file_and_leaves_it_alone(
    tmp_path: Path, hashing_store: bytes, keep: float, mode: list[str]
) -> None:
    db = tmp_path / "store.db"
    db.write_bytes(hashing_store[: int(len(hashing_store) * keep) // 4096 * 4096])
    before = snapshot(tmp_path)
    line = error_line(
        run("--store", "store.db", "query", "tomatoes", *mode, cwd=tmp_path, env=_plain_env())
    )
    assert "store.db" in line
    assert "damaged" in line
    assert "sentence-transformers" not in line
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize(
    ("name", "content", "needle"),
    [
        ("empty.db", b"", "empty"),
        ("notes.db", b"these are my notes, not a database\n" * 50, "not an agentkit store"),
        ("other.db", None, "not an agentkit store"),
    ],
)
@pytest.mark.parametrize("mode", [[], ["--lexical"]])
def test_query_on_a_file_that_is_not_a_store_changes_nothing(
    tmp_path: Path, name: str, content: bytes | None, needle: str, mode: list[str]
) -> None:
    path = tmp_path / name
    if content is None:  # somebody else's SQLite database
        with sqlite3.connect(path) as conn:
            conn.execute("CREATE TABLE accounts (id INTEGER PRIMARY KEY, owner TEXT)")
            conn.execute("INSERT INTO accounts(owner) VALUES ('alice')")
        conn.close()
    else:
        path.write_bytes(content)
    before = snapshot(tmp_path)
    line = error_line(
        run("--store", name, "query", "tomatoes", *mode, cwd=tmp_path, env=_plain_env())
    )
    assert name in line and needle in line, line
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("target", ["missing.db", "no/such/dir/missing.db"])
def test_query_on_a_missing_store_creates_nothing(tmp_path: Path, target: str) -> None:
    line = error_line(run("--store", target, "query", "x", cwd=tmp_path))
    assert "no store" in line and "missing.db" in line
    assert list(tmp_path.iterdir()) == []


def test_ingest_into_a_file_that_is_not_a_store_is_refused_untouched(tmp_path: Path) -> None:
    path = tmp_path / "notes.db"
    path.write_bytes(b"these are my notes, not a database\n" * 50)
    before = snapshot(tmp_path)
    line = error_line(run("--store", "notes.db", "ingest", str(NOTES), cwd=tmp_path))
    assert "notes.db" in line and "not an agentkit store" in line
    assert snapshot(tmp_path) == before


def test_query_on_a_good_store_leaves_it_byte_for_byte_unchanged(tmp_path: Path) -> None:
    ok(run("--store", "store.db", "ingest", str(NOTES), cwd=tmp_path))
    before = snapshot(tmp_path)
    for mode in ([], ["--lexical"], ["--dense"]):
        assert "tenancy.md" in ok(
            run("--store", "store.db", "query", "tenants", *mode, cwd=tmp_path, env=_plain_env())
        )
    assert snapshot(tmp_path) == before


async def test_a_read_only_store_serves_reads_and_refuses_writes(tmp_path: Path) -> None:
    from agentkit.kernel.errors import StoreError
    from agentkit.vector.port import Chunk

    db = tmp_path / "m.db"
    async with SQLiteVectorStore(db, embedder=HashingEmbedder(64)) as store:
        await store.upsert([Chunk("a", "tomatoes need sun")], scope=Scope())
    before = snapshot(tmp_path)
    async with SQLiteVectorStore(db, embedder=HashingEmbedder(64), read_only=True) as store:
        assert [c.id for _, c in await store.search("tomatoes", k=1, scope=Scope())] == ["a"]
        assert [c.id for _, c in await store.lexical_search("sun", k=1, scope=Scope())] == ["a"]
        with pytest.raises(StoreError, match="read_only"):
            await store.upsert([Chunk("b", "x")], scope=Scope())
        with pytest.raises(StoreError, match="read_only"):
            await store.delete(["a"], scope=Scope())
    assert snapshot(tmp_path) == before
    (tmp_path / "blank.db").write_bytes(b"")
    blank = SQLiteVectorStore(tmp_path / "blank.db", embedder=None, read_only=True)
    with pytest.raises(StoreError, match="not an agentkit store"):
        await blank.open()
    await blank.close()
    assert (tmp_path / "blank.db").read_bytes() == b""
