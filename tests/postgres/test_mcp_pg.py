"""`agentkit-memory --store postgresql://... mcp`: the same tools over PostgreSQL."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from mcp import Client, StdioServerParameters

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
NOTES = FIXTURES / "notes"


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTKIT_")}
    env["AGENTKIT_EMBEDDER"] = "hashing"
    return env


def ok(*args: str, cwd: Path) -> str:
    done = subprocess.run([sys.executable, "-m", "agentkit.cli", *args], cwd=cwd, env=_env(),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


async def test_mcp_serves_a_postgres_store(db_url: str, tmp_path: Path) -> None:
    shutil.copytree(NOTES, tmp_path / "notes")
    ok("--store", db_url, "--scope", "acme/support", "ingest", "notes", cwd=tmp_path)
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "agentkit.cli", "--store", db_url, "--scope", "acme/support", "mcp"],
        env=_env(), cwd=str(tmp_path),
    )
    text = "keep tenants apart"
    async with Client(params, read_timeout_seconds=60) as client:
        found = await client.call_tool("memory_search", {"query": text, "k": 3})
        wrote = await client.call_tool("memory_write", {"items": [
            {"content": "Walrus inventory", "id": "w1"}, {"content": "Walrus ledger"}]})
        assert wrote.structured_content["written"] == 2
        gone = await client.call_tool("memory_forget", {"ids": ["w1", "w1", "nope"]})
        assert gone.structured_content == {"deleted": 1}
        left = await client.call_tool("memory_search", {"query": "walrus", "k": 5})
        contents = [i["content"] for i in left.structured_content["items"]]
        assert contents[0] == "Walrus ledger" and "Walrus inventory" not in contents
    doc = json.loads(ok("--store", db_url, "--scope", "acme/support", "query", text, "-k", "3",
                        "--json", cwd=tmp_path))
    assert found.structured_content["items"] == [
        {"id": r["id"], "content": r["content"], "source": "+".join(r["sources"]),
         "score": r["score"], "metadata": r["metadata"]}
        for r in doc["results"]
    ]
