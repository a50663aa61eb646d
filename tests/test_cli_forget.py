"""`agentkit-memory forget` and `agentkit-memory stats`, run as a user runs them."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

FIXTURES = Path(__file__).parent / "fixtures"
NOTES = FIXTURES / "notes"
BEIR = FIXTURES / "beir_tiny"
LONG = "# Walruses\n\n" + "\n\n".join(
    f"Paragraph {i} about walrus tusks and ice floes. " + "more words " * 30 for i in range(8)
)


def run(*args: str, cwd: Path, hashing: bool = True) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTKIT_")}
    if hashing:
        env["AGENTKIT_EMBEDDER"] = "hashing"
    return subprocess.run(
        [sys.executable, "-m", "agentkit.cli", *args],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=120,
    )


def ok(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    return result.stdout


def error(result: subprocess.CompletedProcess[str], code: int) -> str:
    assert result.returncode == code, (result.returncode, result.stdout, result.stderr)
    assert "Traceback" not in result.stderr + result.stdout
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("agentkit-memory: error: "), result.stderr
    return lines[0]


def snapshot(folder: Path) -> dict[str, tuple[bytes, int]]:
    return {p.name: (p.read_bytes(), p.stat().st_mtime_ns)
            for p in sorted(folder.iterdir()) if p.is_file()}


def stats(cwd: Path) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(ok(run("--store", "m.db", "stats", "--json", cwd=cwd)))
    return doc


def per_scope(doc: dict[str, Any]) -> dict[str, tuple[int, int]]:
    return {s["scope"]: (s["documents"], s["chunks"]) for s in doc["scopes"]}


def chunk_rows(db: Path, org: str) -> list[tuple[str, str]]:
    with sqlite3.connect(db) as conn:
        return conn.execute(
            "SELECT id, metadata FROM chunks WHERE org = ? ORDER BY id", (org,)
        ).fetchall()


def hits(cwd: Path, query: str, scope: str, *mode: str) -> set[str]:
    out = ok(run("--store", "m.db", "--scope", scope, "query", query, "-k", "50", "--json",
                 *mode, cwd=cwd))
    return {r["id"] for r in json.loads(out)["results"]}


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """Two tenants holding the same notes plus one long (many-chunk) document."""
    shutil.copytree(NOTES, tmp_path / "notes")
    (tmp_path / "notes" / "walrus.md").write_text(LONG)
    for scope in ("acme/support", "globex/support"):
        ok(run("--store", "m.db", "--scope", scope, "ingest", "notes", "--chunk-size", "300",
               "--overlap", "0", cwd=tmp_path))
    return tmp_path


def test_forget_ids_prints_the_exact_count_and_the_records_are_gone(folder: Path) -> None:
    found = hits(folder, "walrus tusks", "acme/support", "--lexical")  # in both indexes
    assert len(found) > 2
    gone = sorted(found)[:2]
    # An id naming nothing is a mistake, not "already gone": the run deletes nothing.
    line = error(run("--store", "m.db", "--scope", "acme/support", "forget", *gone, "nope",
                     cwd=folder), 1)
    assert "no record has id 'nope'" in line and "nothing was deleted" in line
    assert set(gone) <= hits(folder, "walrus tusks", "acme/support", "--lexical")
    out = ok(run("--store", "m.db", "--scope", "acme/support", "forget", *gone, cwd=folder))
    assert out.strip() == "forgot 2 records (2 id(s) named; scope acme/support)"
    for mode in ("--dense", "--lexical"):
        assert not set(gone) & hits(folder, "walrus tusks", "acme/support", mode)
        assert set(gone) <= hits(folder, "walrus tusks", "globex/support", mode)
    again = run("--store", "m.db", "--scope", "acme/support", "forget", gone[0], cwd=folder)
    assert f"no record has id {gone[0]!r}" in error(again, 1)


def test_forget_where_removes_a_whole_document(folder: Path) -> None:
    rows = chunk_rows(folder / "m.db", "acme")
    paths = [json.loads(m)["path"] for _, m in rows]
    path = next(p for p in paths if p.endswith("walrus.md"))
    n = paths.count(path)
    assert n > 3
    before = per_scope(stats(folder))
    out = ok(run("--store", "m.db", "--scope", "acme/support", "forget", "--where",
                 f"path={path}", "--json", cwd=folder))
    assert json.loads(out) == {"forgot": n, "scope": "acme/support", "mode": "where"}
    after = per_scope(stats(folder))
    docs, chunks = before["acme/support"]
    assert after["acme/support"] == (docs - 1, chunks - n)
    assert after["globex/support"] == before["globex/support"]
    left = [json.loads(m)["path"] for _, m in chunk_rows(folder / "m.db", "acme")]
    assert left and path not in left


def test_forget_where_matches_text_or_the_number_it_spells(tmp_path: Path) -> None:
    shutil.copytree(BEIR, tmp_path / "beir")
    ok(run("--store", "m.db", "ingest", "beir", cwd=tmp_path))
    total = per_scope(stats(tmp_path))["-"][1]
    out = ok(run("--store", "m.db", "forget", "--where", "doc_id=d1", "--where", "doc_id=d2",
                 cwd=tmp_path))
    assert out.strip() == "forgot 2 records (scope -)"
    # position is stored as the integer 0: "0" still finds it (every record is one chunk)
    out = ok(run("--store", "m.db", "forget", "--where", "position=0", "--where",
                 "doc_id=d3", cwd=tmp_path))
    assert out.startswith("forgot 1 record ")
    assert per_scope(stats(tmp_path))["-"][1] == total - 3


def test_forget_all_needs_yes_and_spares_other_scopes(folder: Path) -> None:
    before = snapshot(folder)
    line = error(run("--store", "m.db", "--scope", "acme/support", "forget", "--all",
                     cwd=folder), 2)
    assert "--yes" in line and "acme/support" in line
    assert snapshot(folder) == before
    n = per_scope(stats(folder))["acme/support"][1]
    out = ok(run("--store", "m.db", "--scope", "acme/support", "forget", "--all", "--yes",
                 cwd=folder))
    assert out.strip() == f"forgot {n} records (scope acme/support)"
    assert chunk_rows(folder / "m.db", "acme") == []
    assert hits(folder, "walrus", "acme/support") == set()
    scopes = per_scope(stats(folder))
    assert scopes["acme/support"] == (0, 0)
    assert scopes["globex/support"][1] == n


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        ((), "needs chunk IDs"),
        (("a", "--where", "k=v"), "one of"),
        (("--where", "k=v", "--all", "--yes"), "one of"),
        (("--where", "novalue"), "KEY=VALUE"),
        (("--where", "=v"), "KEY=VALUE"),
        (("a", "--yes"), "--yes only confirms --all"),
    ],
)
def test_forget_usage_errors_exit_2_and_touch_nothing(
    folder: Path, args: tuple[str, ...], needle: str
) -> None:
    before = snapshot(folder)
    assert needle in error(run("--store", "m.db", "forget", *args, cwd=folder), 2)
    assert snapshot(folder) == before


def test_forget_never_creates_a_store(tmp_path: Path) -> None:
    line = error(run("--store", "none.db", "forget", "x", cwd=tmp_path), 1)
    assert "no store" in line
    (tmp_path / "text.db").write_text("not a database at all, just text" * 10)
    assert "not an agentkit store" in error(
        run("--store", "text.db", "forget", "--where", "k=v", cwd=tmp_path), 1
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["text.db"]


def test_stats_reports_each_scope_and_the_store(folder: Path) -> None:
    started = time.time()
    doc = stats(folder)
    db = folder / "m.db"
    assert doc["kind"] == "sqlite" and doc["store"] == "m.db"
    assert "HashingEmbedder" in doc["embedder"] and doc["dim"] == 256
    # The size counts the file and the lexical indexes beside it, plus the -wal/-shm
    # side files, which exist only while a connection (the command's own) holds the
    # file: their size then is not observable from here (test_sqlite_stats_size is exact).
    lexical = sum(p.stat().st_size for p in (folder / "m.db.lexical").rglob("*") if p.is_file())
    assert lexical > 0
    assert 0 <= doc["bytes_on_disk"] - (db.stat().st_size + lexical) <= 1 << 20
    scopes = per_scope(doc)
    n_acme = len(chunk_rows(db, "acme"))
    assert scopes == {"acme/support": (4, n_acme), "globex/support": (4, n_acme)}
    assert (doc["documents"], doc["chunks"]) == (8, 2 * n_acme)
    for s in doc["scopes"]:
        written = time.mktime(time.strptime(s["last_write"], "%Y-%m-%dT%H:%M:%SZ")) - time.timezone
        assert started - 300 <= written <= time.time() + 1
    text = ok(run("--store", "m.db", "stats", cwd=folder))
    assert "HashingEmbedder (dim 256)" in text
    assert any(line.split()[:3] == ["acme/support", "4", str(n_acme)]
               for line in text.splitlines())


def test_stats_changes_nothing_and_creates_nothing(folder: Path, tmp_path: Path) -> None:
    before = snapshot(folder)
    ok(run("--store", "m.db", "stats", cwd=folder))
    ok(run("--store", "m.db", "stats", "--json", cwd=folder))
    assert snapshot(folder) == before
    empty = tmp_path / "elsewhere"
    empty.mkdir()
    assert "no store" in error(run("--store", "none.db", "stats", cwd=empty), 1)
    assert "no store" in error(run("--store", "sub/none.db", "stats", cwd=empty), 1)
    assert list(empty.iterdir()) == []


# --- ids as the query table prints them ------------------------------------------------


def forget(capsys: pytest.CaptureFixture[str], store: str, *args: str) -> tuple[int, str, str]:
    """``agentkit-memory --store STORE forget ARGS`` in this process: (status, out, err)."""
    from agentkit.cli import main

    code = main(["--store", store, *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_forget_takes_the_shortened_id_the_query_table_shows(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    table = ok(run("--store", "m.db", "--scope", "acme/support", "query", "walrus", cwd=folder))
    shown = table.splitlines()[1].split()[3]  # rank, score, source(s), id, ...
    full = [cid for cid, _ in chunk_rows(folder / "m.db", "acme") if cid.startswith(shown)]
    assert len(shown) == 12 and len(full) == 1 and full[0] != shown
    code, out, _ = forget(
        capsys, str(folder / "m.db"), "--scope", "acme/support", "forget", shown, "--json"
    )
    assert code == 0
    assert json.loads(out) == {"forgot": 1, "scope": "acme/support", "mode": "ids", "ids": full}
    assert full[0] not in {cid for cid, _ in chunk_rows(folder / "m.db", "acme")}
    # The same chunk id in the other tenant is theirs: untouched.
    assert full[0] in {cid for cid, _ in chunk_rows(folder / "m.db", "globex")}


async def _ids_store(db: Path) -> None:
    from agentkit.kernel.ctx import Scope
    from agentkit.vector import Chunk, HashingEmbedder
    from agentkit.vector.sqlite import SQLiteVectorStore

    async with SQLiteVectorStore(db, embedder=HashingEmbedder()) as store:
        ids = ["a%c", "a_c", "ab", "abc", "a*c", "a?c", "zz"]
        await store.upsert([Chunk(i, f"text {i}") for i in ids], scope=Scope("acme", "x"))
        await store.upsert([Chunk("a%d", "other tenant")], scope=Scope("globex", "x"))


def test_forget_refuses_unknown_and_ambiguous_ids_and_deletes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import asyncio

    db = tmp_path / "ids.db"
    asyncio.run(_ids_store(db))
    store = str(db)

    def held(org: str = "acme") -> list[str]:
        return [cid for cid, _ in chunk_rows(db, org)]

    before = held()
    code, out, err = forget(capsys, store, "--scope", "acme/x", "forget", "a")
    assert code == 1 and out == ""
    assert "'a' starts more than one id" in err and "nothing was deleted" in err
    assert "a%c, a*c, a?c, a_c, ab, ..." in err  # the first candidates, in id order
    for args in (["nope"], ["zz", "nope"], ["%"], ["*"], ["a%d"], ["zz", "a", "--json"]):
        code, out, err = forget(capsys, store, "--scope", "acme/x", "forget", *args)
        assert code == 1 and out == "", args
        assert len(err.strip().splitlines()) == 1 and "nothing was deleted" in err, args
    assert held() == before  # every refusal came before any delete
    # An exact id wins over the longer ids it is a prefix of; wildcards are characters.
    for given, gone in [("ab", "ab"), ("a_", "a_c"), ("a%", "a%c"), ("a*", "a*c"), ("zz", "zz")]:
        code, out, _ = forget(capsys, store, "--scope", "acme/x", "forget", given)
        assert (code, out.strip()) == (0, "forgot 1 record (1 id(s) named; scope acme/x)")
        assert gone not in held()
    assert held() == ["a?c", "abc"]
    # Another scope's ids are never candidates, and its own prefix finds its own record.
    assert held("globex") == ["a%d"]
    code, out, _ = forget(capsys, store, "--scope", "globex/x", "forget", "a")
    assert code == 0 and held("globex") == []


def test_after_a_forget_later_commands_still_need_no_embedder_flag(tmp_path: Path) -> None:
    """docs/cli.md: the store remembers its embedder. A forget makes the next ingest
    write (and so embed) again; that must use the recorded embedder, not the default."""
    shutil.copytree(NOTES, tmp_path / "notes")
    ok(run("--store", "m.db", "--hashing", "ingest", "notes", cwd=tmp_path, hashing=False))
    ok(run("--store", "m.db", "forget", "--where", "path=notes/gardening.txt", cwd=tmp_path))
    again = run("--store", "m.db", "ingest", "notes", cwd=tmp_path, hashing=False)
    ok(again)
    assert "1 written, 2 unchanged" in again.stderr
    out = ok(run("--store", "m.db", "query", "tomatoes", "--dense", cwd=tmp_path, hashing=False))
    assert "notes/gardening.txt" in out.splitlines()[1]
    assert "HashingEmbedder (dim 256)" in ok(run("--store", "m.db", "stats", cwd=tmp_path))
