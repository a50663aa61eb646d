"""Forgetting on PostgreSQL: exact counts, gone from dense and word search in one commit,
seen by another pool at once, other scopes untouched; scan pages; stats."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agentkit.kernel import Ctx, Scope
from agentkit.kernel.errors import InvalidArgument
from agentkit.state.memory import CachedMemory, VectorMemory
from agentkit.vector import Chunk
from agentkit.vector.postgres import PostgresVectorStore

NOTES = Path(__file__).resolve().parent.parent / "fixtures" / "notes"
ACME = Scope("acme", "support")
GLOBEX = Scope("globex", "support")


def corpus() -> list[Chunk]:
    return [
        Chunk(f"c{i:02d}", f"walrus note {i} about tusks", {"doc_id": f"d{i % 3}", "i": i})
        for i in range(12)
    ]


async def fill(store: PostgresVectorStore) -> None:
    await store.upsert(corpus(), scope=ACME)
    await store.upsert(corpus(), scope=GLOBEX)


async def visible(store: PostgresVectorStore, scope: Scope) -> tuple[set[str], set[str]]:
    dense = {c.id for _, c in await store.search("walrus tusks", k=100, scope=scope)}
    words = {c.id for _, c in await store.lexical_search("walrus", k=100, scope=scope)}
    return dense, words


async def test_another_pool_sees_the_delete_at_once(
    make_store: Callable[..., PostgresVectorStore],
) -> None:
    writer, reader = make_store(), make_store()
    await fill(writer)
    assert "c05" in (await visible(reader, ACME))[0]
    await writer.delete_where({"i": 5}, scope=ACME)
    dense, words = await visible(reader, ACME)
    assert "c05" not in dense and "c05" not in words


async def test_stats_per_scope(store: PostgresVectorStore) -> None:
    before = time.time()
    await fill(store)
    await store.upsert([Chunk("loose", "no document key")], scope=ACME)
    stats = await store.stats()
    assert stats.kind == "postgres" and stats.dim == 64
    assert stats.embedder is not None and "HashingEmbedder" in stats.embedder
    assert stats.bytes_on_disk is not None and stats.bytes_on_disk > 0
    by_scope = {s.scope: s for s in stats.scopes}
    assert (by_scope[ACME].records, by_scope[ACME].documents) == (13, 4)
    assert (by_scope[GLOBEX].records, by_scope[GLOBEX].documents) == (12, 3)
    assert by_scope[ACME].last_write is not None and by_scope[ACME].last_write >= before - 5
    first = by_scope[GLOBEX].last_write
    assert first is not None
    await store.delete_scope(scope=GLOBEX)
    emptied = {s.scope: s for s in (await store.stats()).scopes}[GLOBEX]
    assert emptied.records == 0 and emptied.last_write is not None
    assert emptied.last_write >= first


async def test_cached_memory_forgets_on_postgres(store: PostgresVectorStore) -> None:
    await fill(store)
    cached = CachedMemory(VectorMemory(store))
    ctx = Ctx(scope=ACME)
    assert "c03" in {i.id for i in await cached.query("walrus tusks", k=20, ctx=ctx)}
    assert await cached.forget({"i": 3}, ctx=ctx) == 1
    assert "c03" not in {i.id for i in await cached.query("walrus tusks", k=20, ctx=ctx)}


# --- the command line on PostgreSQL ------------------------------------------------


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTKIT_")}
    env["AGENTKIT_EMBEDDER"] = "hashing"
    return subprocess.run(
        [sys.executable, "-m", "agentkit.cli", *args],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=120,
    )


def _ok(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, result.stderr
    return result.stdout


def _scopes(url: str, cwd: Path) -> dict[str, dict[str, Any]]:
    doc = json.loads(_ok(_cli("--store", url, "stats", "--json", cwd=cwd)))
    assert doc["kind"] == "postgres" and "HashingEmbedder" in doc["embedder"]
    assert doc["bytes_on_disk"] > 0
    return {s["scope"]: s for s in doc["scopes"]}


def test_cli_forget_and_stats_on_postgres(db_url: str, tmp_path: Path) -> None:
    shutil.copytree(NOTES, tmp_path / "notes")
    for scope in ("acme/support", "globex/support"):
        _ok(_cli("--store", db_url, "--scope", scope, "ingest", "notes", cwd=tmp_path))
    scopes = _scopes(db_url, tmp_path)
    assert {k: (v["documents"], v["chunks"]) for k, v in scopes.items()} == {
        "acme/support": (3, 3), "globex/support": (3, 3)
    }
    assert scopes["acme/support"]["last_write"].endswith("Z")
    out = _ok(_cli("--store", db_url, "--scope", "acme/support", "forget", "--where",
                   "path=notes/gardening.txt", cwd=tmp_path))
    assert out.strip() == "forgot 1 record (scope acme/support)"
    refused = _cli("--store", db_url, "--scope", "acme/support", "forget", "--all", cwd=tmp_path)
    assert refused.returncode == 2 and "--yes" in refused.stderr
    out = _ok(_cli("--store", db_url, "--scope", "acme/support", "forget", "--all", "--yes",
                   cwd=tmp_path))
    assert out.strip() == "forgot 2 records (scope acme/support)"
    scopes = _scopes(db_url, tmp_path)
    assert (scopes["acme/support"]["chunks"], scopes["globex/support"]["chunks"]) == (0, 3)


async def test_ids_with_prefix_is_literal_and_stays_in_its_scope(
    store: PostgresVectorStore,
) -> None:
    ids = ["a%c", "a_c", "ab", "abc", "a*c", "a?c", "a[b]c", "a\\c", "b", "é1", "é2"]
    await store.upsert([Chunk(i, f"text {i}") for i in ids], scope=ACME)
    await store.upsert([Chunk("a%z", "the other tenant's")], scope=GLOBEX)
    for prefix, expected in [
        ("a%", ["a%c"]), ("a_", ["a_c"]), ("a*", ["a*c"]), ("a?", ["a?c"]),
        ("a[", ["a[b]c"]), ("a\\", ["a\\c"]), ("ab", ["ab", "abc"]), ("é", ["é1", "é2"]),
        ("a%z", []), ("%", []), ("_", []), ("a\x00", []),
    ]:
        assert sorted(await store.ids_with_prefix(prefix, scope=ACME)) == expected, prefix
    assert len(await store.ids_with_prefix("a", scope=ACME, limit=3)) == 3
    assert await store.ids_with_prefix("a", scope=GLOBEX) == ["a%z"]
    assert await store.ids_with_prefix("a", scope=Scope("nobody", "here")) == []
    with pytest.raises(InvalidArgument):
        await store.ids_with_prefix("", scope=ACME)
