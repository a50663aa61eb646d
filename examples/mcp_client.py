"""An MCP client writing and searching agentkit memory over HTTP, with a bearer token.

Starts `agentkit-memory mcp --http` on a free port (a scratch store, the model-free
`--hashing` embedder, one token for acme/support), then talks to it with the official
`mcp` SDK (`pip install 'agentkit-memory[mcp]'`). docs/mcp.md shows the client part.
"""

import asyncio
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx2  # the HTTP client the mcp SDK is built on
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

CLI = [sys.executable, "-m", "agentkit.cli"]  # the agentkit-memory command


async def remember_and_search(url: str, token: str) -> None:
    headers = {"Authorization": f"Bearer {token}"}
    transport = streamable_http_client(
        url,  # "http://127.0.0.1:8765/mcp"
        http_client=httpx2.AsyncClient(headers=headers),
    )
    async with Client(transport) as client:
        note = {"content": "Refunds are issued within 14 days.", "id": "refund-policy"}
        await client.call_tool("memory_write", {"items": [note]})
        found = await client.call_tool("memory_search", {"query": "refund policy", "k": 5})
        for item in found.structured_content["items"]:
            print(item["score"], item["content"])


def serve(folder: Path) -> tuple[subprocess.Popen[bytes], str, str]:
    """Start the server; return it, its URL and a token for acme/support."""
    tokens = folder / "tokens"
    added = subprocess.run(
        [*CLI, "mcp", "token", "add", "acme/support", "--tokens", str(tokens)],
        capture_output=True,
        text=True,
        check=True,
    )
    token = added.stdout.strip().splitlines()[-1]  # the last line is the token
    log = folder / "server.log"
    with log.open("wb") as err:
        server = subprocess.Popen(
            [
                *CLI,
                "--store",
                str(folder / "memory.db"),
                "--hashing",
                "mcp",
                "--http",
                "0",
                "--tokens",
                str(tokens),
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=err,
        )
    deadline = time.monotonic() + 60
    while "serving http://" not in log.read_text():  # printed once it listens
        if server.poll() is not None or time.monotonic() > deadline:
            server.kill()
            sys.exit(f"the server did not start:\n{log.read_text()}")
        time.sleep(0.1)
    url = log.read_text().split("serving ", 1)[1].split()[0]
    return server, url, token


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as scratch:
        server, url, token = serve(Path(scratch))
        try:
            asyncio.run(remember_and_search(url, token))
        finally:
            server.terminate()
            server.wait(timeout=15)
