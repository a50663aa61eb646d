"""The main job on PostgreSQL: `agentkit-memory --store postgresql://... ingest/query/eval`."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
NOTES = FIXTURES / "notes"
BEIR = FIXTURES / "beir_tiny"


def run(*args: str, cwd: Path, hashing: bool = True) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTKIT_")}
    if hashing:
        env["AGENTKIT_EMBEDDER"] = "hashing"
    return subprocess.run(
        [sys.executable, "-m", "agentkit.cli", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def ok(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    return result.stdout


def rows(url: str, table: str = "agentkit_chunks") -> int:
    with psycopg.connect(url) as conn:
        row = conn.execute(sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(table)))
        return int(row.fetchone()[0])  # type: ignore[index]


def test_ingest_query_and_reingest_on_postgres(db_url: str, tmp_path: Path) -> None:
    shutil.copytree(NOTES, tmp_path / "notes")
    first = run("--store", db_url, "ingest", "notes", cwd=tmp_path)
    ok(first)
    assert rows(db_url) == 3
    assert "3 written" in first.stderr

    out = ok(run("--store", db_url, "query", "tomatoes need sunlight", "-k", "2", cwd=tmp_path))
    header, top, *_ = out.strip().splitlines()
    assert header.split()[:3] == ["rank", "score", "source(s)"]
    assert "notes/gardening.txt#0" in top and "dense+lexical" in top

    doc = json.loads(
        ok(run("--store", db_url, "query", "keep tenants apart", "--json", cwd=tmp_path))
    )
    assert doc["results"][0]["path"] == "notes/tenancy.md"
    assert doc["results"][0]["sources"] == ["dense", "lexical"]

    for mode in ("--dense", "--lexical"):
        doc = json.loads(
            ok(run("--store", db_url, "query", "search operators", mode, "--json", cwd=tmp_path))
        )
        assert doc["results"][0]["path"] == "notes/fts_syntax.md"
    syntax = run("--store", db_url, "query", 'NEAR( "AND * -x OR', "--lexical", cwd=tmp_path)
    assert "fts_syntax.md" in ok(syntax)

    again = run("--store", db_url, "ingest", "notes", cwd=tmp_path)
    ok(again)
    assert rows(db_url) == 3
    assert "3 unchanged" in again.stderr and "0 written" in again.stderr


def test_later_commands_use_the_embedder_the_server_recorded(db_url: str, tmp_path: Path) -> None:
    """ingest --hashing, forget, then ingest and query with no flag: the registry's
    embedder is used (it used to be the bundled MiniLM, refused as 384 vs 256 wide)."""
    shutil.copytree(NOTES, tmp_path / "notes")
    ok(run("--store", db_url, "--hashing", "ingest", "notes", cwd=tmp_path, hashing=False))
    forgot = run("--store", db_url, "forget", "--where", "path=notes/gardening.txt", cwd=tmp_path)
    assert ok(forgot).startswith("forgot 1 record ")
    again = run("--store", db_url, "ingest", "notes", cwd=tmp_path, hashing=False)
    ok(again)
    assert "1 written, 2 unchanged" in again.stderr
    out = ok(run("--store", db_url, "query", "tomatoes", "--dense", cwd=tmp_path, hashing=False))
    assert "notes/gardening.txt" in out.splitlines()[1]
    # An explicit, different choice is refused before a model loads, naming the record.
    env_model = run("--store", db_url, "--model", "some/other-model", "query", "x", "--dense",
                    cwd=tmp_path, hashing=False)
    assert env_model.returncode == 1
    assert "HashingEmbedder" in env_model.stderr and "refusing to mix in" in env_model.stderr
    assert rows(db_url) == 3


def test_forget_takes_a_shortened_id_within_the_scope_on_postgres(
    db_url: str, tmp_path: Path
) -> None:
    shutil.copytree(NOTES, tmp_path / "notes")
    for scope in ("acme/support", "globex/support"):  # the same chunk ids in both
        ok(run("--store", db_url, "--scope", scope, "ingest", "notes", cwd=tmp_path))
    table = ok(run("--store", db_url, "--scope", "acme/support", "query", "tomatoes",
                   cwd=tmp_path))
    shown = table.splitlines()[1].split()[3]
    assert len(shown) == 12
    doc = json.loads(ok(run("--store", db_url, "--scope", "acme/support", "forget", shown,
                            "--json", cwd=tmp_path)))
    assert doc["forgot"] == 1 and len(doc["ids"]) == 1 and doc["ids"][0].startswith(shown)
    assert rows(db_url) == 5  # globex keeps its copy of the same id
    gone = run("--store", db_url, "--scope", "acme/support", "forget", shown, cwd=tmp_path)
    assert gone.returncode == 1 and f"no record has id {shown!r}" in gone.stderr
    for wildcard in ("%", "_", "*"):
        refused = run("--store", db_url, "--scope", "globex/support", "forget", wildcard,
                      cwd=tmp_path)
        assert refused.returncode == 1 and "no record has id" in refused.stderr
    assert rows(db_url) == 5


def test_scopes_on_postgres(db_url: str, tmp_path: Path) -> None:
    shutil.copytree(NOTES, tmp_path / "notes")
    ok(run("--store", db_url, "--scope", "acme/support", "ingest", "notes", cwd=tmp_path))
    acme = run("--store", db_url, "query", "tenants", "--scope", "acme/support", cwd=tmp_path)
    assert "tenancy.md" in ok(acme)
    other = run("--store", db_url, "query", "tenants", "--scope", "globex/support", cwd=tmp_path)
    assert ok(other).strip() == "no results"


def test_eval_on_postgres(db_url: str, tmp_path: Path) -> None:
    out = ok(run("--store", db_url, "eval", str(BEIR), cwd=tmp_path))
    lines = out.strip().splitlines()
    assert lines[1].split() == ["mode", "nDCG@10", "recall@100", "ms/query"]
    scores = {line.split()[0]: float(line.split()[1]) for line in lines[2:]}
    assert set(scores) == {"dense", "lexical", "hybrid"}
    assert scores["lexical"] > 0.8 and scores["hybrid"] > 0.8
    assert rows(db_url) == 12


def test_unreachable_server_is_one_clear_line(tmp_path: Path) -> None:
    result = run(
        "--store", "postgresql://nobody@127.0.0.1:1/none", "query", "x", cwd=tmp_path
    )
    assert result.returncode != 0
    assert "Traceback" not in result.stderr + result.stdout
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("agentkit-memory: error: ")
    assert "cannot connect" in lines[0]


async def test_a_crash_before_the_stale_delete_is_repaired_on_postgres(
    make_store: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agentkit.cli._ingest import chunk_id, ingest
    from agentkit.kernel.ctx import Scope

    doc = tmp_path / "long.md"
    doc.write_text("# Long\n\n" + "\n\n".join(f"Paragraph {i} " + "word " * 60 for i in range(12)))
    scope = Scope("acme", "docs")
    store = make_store()
    n_old = (await ingest(store, scope, [str(doc)], size=400, overlap=50)).chunks
    doc.write_text("# Long\n\nNow it is short.")

    async def crash(ids: Any, *, scope: Scope) -> None:
        raise RuntimeError("killed between the upsert and the delete")

    monkeypatch.setattr(store, "delete", crash)
    with pytest.raises(RuntimeError, match="killed"):
        await ingest(store, scope, [str(doc)], size=400, overlap=50)
    monkeypatch.undo()
    assert await store.count(scope=scope) == n_old

    again = await ingest(store, scope, [str(doc)], size=400, overlap=50)
    assert again.stale == n_old - 1
    key = str(doc.resolve())
    kept = await store.get([chunk_id(key, p) for p in range(n_old)], scope=scope)
    assert [c.text for c in kept] == ["# Long\n\nNow it is short."]
    assert await store.count(scope=scope) == 1


def test_a_collection_from_before_engines_were_recorded_needs_no_flag(
    db_url: str, tmp_path: Path
) -> None:
    """Issue 27: a collection written by sentence-transformers (recorded as the model name
    alone) is extended by the ONNX fp32 default with no flag and no re-embedding; int8
    is refused there in one line naming the store's own --embedder."""
    import asyncio

    from agentkit.kernel.ctx import Scope
    from agentkit.vector import Chunk, OnnxEmbedder, PostgresVectorStore
    from agentkit.vector._embedder_id import DEFAULT_MODEL

    class Legacy:  # as agentkit wrote it before: the model name only, fp32 vectors
        model_name = DEFAULT_MODEL
        dim = 384

        def __init__(self) -> None:
            self.inner = OnnxEmbedder("fp32")

        async def embed(self, texts: list[str]) -> Any:
            return await self.inner.embed(texts)

    async def seed() -> None:
        async with PostgresVectorStore(db_url, embedder=Legacy(), create=True) as store:
            await store.upsert([Chunk("old-1", "Tomatoes need six hours of sun.")],
                               scope=Scope())

    asyncio.run(seed())
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTKIT_")}

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "agentkit.cli", "--store", db_url, *args],
                              cwd=tmp_path, env=env, capture_output=True, text=True,
                              timeout=300)

    def vector_of(record: str) -> str:
        with psycopg.connect(db_url) as conn:
            row = conn.execute("SELECT embedding::text FROM agentkit_chunks WHERE id = %s",
                               (record,)).fetchone()
            return str(row[0])  # type: ignore[index]

    before = vector_of("old-1")
    shutil.copytree(NOTES, tmp_path / "notes")
    added = cli("ingest", "notes")
    assert added.returncode == 0, added.stderr
    assert vector_of("old-1") == before and rows(db_url) == 4
    out = cli("query", "how much sun do tomatoes need", "--dense", "-k", "1", "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["results"][0]["id"] == "old-1"
    refused = cli("ingest", "notes", "--embedder", "onnx")
    assert refused.returncode == 1 and len(refused.stderr.strip().splitlines()) == 1
    assert "--embedder onnx:fp32" in refused.stderr
    password = psycopg.conninfo.conninfo_to_dict(db_url).get("password")
    assert not password or str(password) not in refused.stderr
    assert rows(db_url) == 4
