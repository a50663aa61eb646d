"""``agentkit-memory mcp``, driven by the MCP SDK's own client, as an agent drives it.

Every server here is a real subprocess: over stdio (spawned by the client) and over
streamable HTTP on a free loopback port (killed at teardown). The store is a copy of
the notes fixture ingested with the hashing embedder, so nothing downloads a model.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from agentkit.kernel.ctx import Scope
from agentkit.vector.hashing import HashingEmbedder
from agentkit.vector.sqlite import SQLiteVectorStore

FIXTURES = Path(__file__).parent / "fixtures"
NOTES = FIXTURES / "notes"
ACME, BETA = "acme/support", "beta/sales"


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTKIT_")}
    env["AGENTKIT_EMBEDDER"] = "hashing"
    return env


def cli(*args: str, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agentkit.cli", *args],
        cwd=cwd, env=_env(), capture_output=True, text=True, timeout=timeout,
    )


def ok(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    return result.stdout


def cli_query(db: Path, text: str, k: int, scope: str | None, cwd: Path) -> list[dict[str, Any]]:
    """What ``agentkit-memory query --json`` answers, as memory_search items."""
    extra = ["--scope", scope] if scope else []
    out = ok(cli("--store", str(db), *extra, "query", text, "-k", str(k), "--json", cwd=cwd))
    return [
        {"id": r["id"], "content": r["content"], "source": "+".join(r["sources"]),
         "score": r["score"], "metadata": r["metadata"]}
        for r in json.loads(out)["results"]
    ]


def add_token(tokens: Path, tenant: str, cwd: Path) -> str:
    out = ok(cli("mcp", "token", "add", tenant, "--tokens", str(tokens), cwd=cwd))
    return out.strip().splitlines()[-1]


async def count(db: Path, tenant: str) -> int:
    """Records of one tenant, read from the store file itself (read-only)."""
    org, domain = tenant.split("/")
    async with SQLiteVectorStore(db, embedder=HashingEmbedder(), read_only=True) as store:
        return await store.count(scope=Scope(org, domain))


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("mcp")
    shutil.copytree(NOTES, base / "notes")
    ok(cli("--store", "memory.db", "ingest", "notes", cwd=base))
    ok(cli("--store", "memory.db", "--scope", ACME, "ingest", "notes", cwd=base))
    return base


# ---------------------------------------------------------------------------- stdio


def stdio(db: Path, *extra: str) -> Client:
    script = Path(sys.executable).with_name("agentkit-memory")
    command, args = (str(script), []) if script.exists() else (
        sys.executable, ["-m", "agentkit.cli"])
    params = StdioServerParameters(
        command=command, args=[*args, "--store", str(db), *extra, "mcp"], env=_env(),
        cwd=str(db.parent),
    )
    return Client(params, read_timeout_seconds=60)


def error_text(result: Any) -> str:
    assert result.is_error, result
    assert result.structured_content is None
    return str(result.content[0].text)


async def test_stdio_lists_tools_with_schemas(root: Path) -> None:
    async with stdio(root / "memory.db") as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    assert set(tools) == {"memory_search", "memory_write", "memory_forget"}
    search = tools["memory_search"]
    assert search.input_schema["required"] == ["query"]
    assert search.input_schema["properties"]["k"]["maximum"] >= 100
    assert search.input_schema["additionalProperties"] is False
    assert search.output_schema is not None
    assert set(search.output_schema["properties"]["items"]["items"]["required"]) == {
        "id", "content", "source", "score", "metadata"}
    assert tools["memory_write"].output_schema["required"] == ["written", "ids"]
    assert tools["memory_forget"].output_schema["required"] == ["deleted"]


@pytest.mark.parametrize("scope", [None, ACME])
async def test_stdio_search_equals_cli_query_json(root: Path, scope: str | None) -> None:
    db = root / "memory.db"
    text = "how are tenants kept apart"
    extra = ["--scope", scope] if scope else []
    async with stdio(db, *extra) as client:
        results = {k: await client.call_tool("memory_search", {"query": text, "k": k})
                   for k in (1, 3, 100)}
    for k, result in results.items():
        assert not result.is_error
        items = result.structured_content["items"]
        assert items, "the notes answer this query"
        assert items == cli_query(db, text, k, scope, root)
        # The same data, not instructions, in the text block a client without structure reads.
        assert json.loads(result.content[0].text) == result.structured_content


async def test_stdio_write_search_forget_round_trip(root: Path) -> None:
    db = root / "memory.db"
    before = await count(db, ACME)
    async with stdio(db, "--scope", ACME) as client:
        wrote = await client.call_tool("memory_write", {"items": [
            {"content": "The zebra quartermaster counts oranges", "metadata": {"topic": "zoo"}},
            {"content": "Quartermaster zebra logs", "id": "zebra-2"},
        ]})
        assert not wrote.is_error, wrote
        ids = wrote.structured_content["ids"]
        assert wrote.structured_content["written"] == 2 and ids[1] == "zebra-2"
        assert await count(db, ACME) == before + 2
        found = await client.call_tool("memory_search", {"query": "zebra quartermaster", "k": 2})
        assert {i["id"] for i in found.structured_content["items"]} == set(ids)
        only = await client.call_tool(
            "memory_search", {"query": "zebra quartermaster", "k": 5, "where": {"topic": "zoo"}})
        assert [i["id"] for i in only.structured_content["items"]] == [ids[0]]
        assert only.structured_content["items"][0]["metadata"]["topic"] == "zoo"
        gone = await client.call_tool("memory_forget", {"ids": [*ids, "never-was"]})
        assert gone.structured_content == {"deleted": 2}
        again = await client.call_tool("memory_forget", {"ids": ids})
        assert again.structured_content == {"deleted": 0}
        after = await client.call_tool("memory_search", {"query": "zebra quartermaster", "k": 5})
        assert not set(ids) & {i["id"] for i in after.structured_content["items"]}
    assert await count(db, ACME) == before


async def test_stdio_search_on_an_empty_scope_never_names_other_scopes(root: Path) -> None:
    """The shell's query names the scopes holding records when the asked one is empty;
    an agent is served one tenant and must not learn the others exist."""
    async with stdio(root / "memory.db", "--scope", "nobody/here") as client:
        result = await client.call_tool("memory_search", {"query": "tenants", "k": 5})
    assert not result.is_error and result.structured_content["items"] == []
    shown = json.dumps(result.structured_content) + "".join(
        getattr(block, "text", "") for block in result.content
    )
    assert ACME not in shown and "acme" not in shown and "no --scope" not in shown


async def test_stdio_where_language_on_search_and_forget(root: Path) -> None:
    """The schema describes the operators; search filters with them inside the tenant,
    and forget with the same filter deletes exactly what search found."""
    db = root / "memory.db"
    before = await count(db, ACME)
    async with stdio(db, "--scope", ACME) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        for name in ("memory_search", "memory_forget"):
            described = json.dumps(tools[name].input_schema["properties"]["where"])
            for op in ("$gte", "$in", "$nin", "$exists", "$or", "$not"):
                assert op in described, (name, op)
        wrote = await client.call_tool("memory_write", {"items": [
            {"content": f"Narwhal almanac entry {year}", "id": f"n{year}",
             "metadata": {"year": year, "topic": "sea" if year % 2 else "ice"}}
            for year in range(2016, 2026)
        ]})
        assert not wrote.is_error, wrote
        flt = {"year": {"$gte": 2020, "$lt": 2024}, "$or": [{"topic": "sea"}, {"year": 2022}]}
        found = await client.call_tool(
            "memory_search", {"query": "narwhal almanac", "k": 50, "where": flt})
        assert not found.is_error, found
        ids = {i["id"] for i in found.structured_content["items"]}
        assert ids == {"n2021", "n2022", "n2023"}
        gone = await client.call_tool("memory_forget", {"where": flt})
        assert gone.structured_content == {"deleted": 3}
        left = await client.call_tool(
            "memory_search", {"query": "narwhal almanac", "k": 50,
                              "where": {"year": {"$exists": True}}})
        assert {i["id"] for i in left.structured_content["items"]} == {
            f"n{y}" for y in range(2016, 2026)} - ids
        await client.call_tool("memory_forget", {"where": {"topic": {"$in": ["sea", "ice"]}}})
    assert await count(db, ACME) == before


BAD_CALLS = [
    ("memory_search", {"query": "x", "k": 0}, "k"),
    ("memory_search", {"query": "x", "k": -3}, "k"),
    ("memory_search", {"query": "x", "k": "5"}, "k"),
    ("memory_search", {"query": "x", "k": 2.5}, "k"),
    ("memory_search", {"query": "x", "k": True}, "k"),
    ("memory_search", {"query": "x", "where": ["topic"]}, "where"),
    ("memory_search", {"query": "x", "where": "topic=zoo"}, "where"),
    ("memory_search", {"k": 3}, "query"),
    ("memory_search", {"query": 7}, "query"),
    ("memory_search", {"query": "x" * 1_000_001}, "query"),
    ("memory_search", {"query": "x", "scope": "beta/sales"}, "scope"),
    ("memory_write", {}, "items"),
    ("memory_write", {"items": "just text"}, "items"),
    ("memory_write", {"items": {"content": "x"}}, "items"),
    ("memory_write", {"items": ["just text"]}, "items[0]"),
    ("memory_write", {"items": [{"content": "ok"}, {"text": "no content"}]}, "items[1]"),
    ("memory_write", {"items": [{"content": 5}]}, "items[0].content"),
    ("memory_write", {"items": [{"content": "y" * 1_000_001}]}, "items[0].content"),
    ("memory_write", {"items": [{"content": "ok", "metadata": [1]}]}, "items[0].metadata"),
    ("memory_write", {"items": [{"content": "ok", "id": 12}]}, "items[0].id"),
    ("memory_write", {"items": [{"content": "a", "id": "d"}, {"content": "b", "id": "d"}]},
     "items[1].id"),
    ("memory_search", {"query": "x", "where": {"year": {"$gte": [2020]}}}, "'year'"),
    ("memory_search", {"query": "x", "where": {"year": {"$regex": "x"}}}, "$regex"),
    ("memory_search", {"query": "x", "where": {"$or": {"a": 1}}}, "$or"),
    ("memory_search", {"query": "x", "where": {"a": {"$in": "ab"}}}, "$in"),
    ("memory_forget", {}, "ids"),
    ("memory_forget", {"ids": ["a"], "where": {"a": 1}}, "not both"),
    ("memory_forget", {"where": {}}, "non-empty"),
    ("memory_forget", {"where": {"a": {"$gt": None}}}, "$gt"),
    ("memory_forget", {"ids": "abc"}, "ids"),
    ("memory_forget", {"ids": ["a", 3]}, "ids[1]"),
]


async def test_stdio_bad_arguments_are_tool_errors_and_the_server_goes_on(root: Path) -> None:
    db = root / "memory.db"
    before = await count(db, ACME)
    async with stdio(db, "--scope", ACME) as client:
        for name, args, culprit in BAD_CALLS:
            message = error_text(await client.call_tool(name, args))
            assert culprit in message, (name, args, message)
        # A bad item refuses the whole batch: the good one before it was not written.
        assert await count(db, ACME) == before
        unknown = error_text(await client.call_tool("memory_recall", {"query": "x"}))
        assert "memory_recall" in unknown
        k100 = await client.call_tool("memory_search", {"query": "tenants", "k": 100})
        assert not k100.is_error and len(k100.structured_content["items"]) == min(100, before)


# ----------------------------------------------------------------------------- HTTP


@dataclass
class HttpServer:
    url: str
    port: int
    db: Path
    tokens: Path
    acme: str
    beta: str
    proc: subprocess.Popen[bytes]
    root: Path


def _wait_for_line(log: Path, proc: subprocess.Popen[bytes], needle: str) -> str:
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        text = log.read_text() if log.exists() else ""
        for line in text.splitlines():
            if needle in line:
                return line
        assert proc.poll() is None, f"server exited: {text}"
        time.sleep(0.1)
    raise AssertionError(f"no {needle!r} from the server: {log.read_text()}")


def _start(args: list[str], cwd: Path, log: Path) -> tuple[subprocess.Popen[bytes], str]:
    with log.open("wb") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "agentkit.cli", *args], cwd=cwd, env=_env(),
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
        )
    try:
        line = _wait_for_line(log, proc, "serving http://")
    except BaseException:
        _stop(proc)
        raise
    return proc, line.split("serving ", 1)[1].split()[0]


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=15)


@pytest.fixture(scope="module")
def http(root: Path) -> Iterator[HttpServer]:
    base = root / "http"
    base.mkdir()
    db = base / "memory.db"
    shutil.copy(root / "memory.db", db)
    tokens = base / "tokens"
    acme, beta = add_token(tokens, ACME, base), add_token(tokens, BETA, base)
    proc, url = _start(["--store", str(db), "mcp", "--http", "0", "--tokens", str(tokens)],
                       base, base / "server.log")
    try:
        port = int(url.rsplit(":", 1)[1].split("/")[0])
        yield HttpServer(url, port, db, tokens, acme, beta, proc, base)
    finally:
        _stop(proc)


def http_client(server: HttpServer, token: str, mode: str = "auto") -> Client:
    """The SDK's client with a bearer header; ``legacy`` forces the initialize handshake
    and a stateful session, ``auto`` lets the client pick the newest protocol."""
    headers = {"Authorization": f"Bearer {token}"}
    transport = streamable_http_client(server.url, http_client=create_mcp_http_client(headers))
    return Client(transport, read_timeout_seconds=60, mode=mode)


INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {},
    "clientInfo": {"name": "raw", "version": "0"}}}
ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def raw_post(server: HttpServer, body: dict[str, Any], **headers: str) -> httpx2.Response:
    return httpx2.post(server.url, json=body, headers={**ACCEPT, **headers}, timeout=30)


def test_http_refuses_a_missing_or_wrong_token(http: HttpServer) -> None:
    assert raw_post(http, INIT).status_code == 401
    assert raw_post(http, INIT, Authorization="Bearer not-a-token").status_code == 401
    assert raw_post(http, INIT, Authorization=f"Bearer {http.acme}x").status_code == 401
    assert raw_post(http, INIT, Authorization=f"Basic {http.acme}").status_code == 401
    assert raw_post(http, INIT, Authorization=f"Bearer {http.acme}").status_code == 200
    # The file holds digests only: no token is in it in the clear.
    text = http.tokens.read_text()
    assert http.acme not in text and http.beta not in text
    assert stat.S_IMODE(http.tokens.stat().st_mode) == 0o600


def test_http_session_is_bound_to_the_token_that_opened_it(http: HttpServer) -> None:
    opened = raw_post(http, INIT, Authorization=f"Bearer {http.acme}")
    assert opened.status_code == 200
    session = opened.headers["mcp-session-id"]
    listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}
    common = {"mcp-session-id": session, "mcp-protocol-version": "2025-06-18"}
    raw_post(http, {"jsonrpc": "2.0", "method": "notifications/initialized"},
             Authorization=f"Bearer {http.acme}", **common)
    stolen = raw_post(http, listing, Authorization=f"Bearer {http.beta}", **common)
    assert stolen.status_code == 404
    assert raw_post(http, listing, **common).status_code == 401
    mine = raw_post(http, listing, Authorization=f"Bearer {http.acme}", **common)
    assert mine.status_code == 200 and "memory_search" in mine.text


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_http_two_tenants_never_see_each_other(http: HttpServer, mode: str) -> None:
    async with http_client(http, http.acme, mode) as a, http_client(http, http.beta, mode) as b:
        wa = await a.call_tool("memory_write", {"items": [
            {"content": "Pelican ledger for acme only", "id": "shared-id",
             "metadata": {"org_id": "beta", "domain_id": "sales"}}]})
        wb = await b.call_tool("memory_write", {"items": [
            {"content": "Pelican ledger for beta only", "id": "shared-id"}]})
        assert wa.structured_content["ids"] == wb.structured_content["ids"] == ["shared-id"]

        async def seen(client: Client, **extra: Any) -> list[str]:
            result = await client.call_tool(
                "memory_search", {"query": "pelican ledger", "k": 50, **extra})
            assert not result.is_error, result
            return [i["content"] for i in result.structured_content["items"]]

        assert "Pelican ledger for acme only" in await seen(a)
        assert not [c for c in await seen(a) if "beta only" in c]
        assert await seen(b) == ["Pelican ledger for beta only"]
        # A where naming scope keys filters metadata inside the tenant, never widens.
        assert await seen(b, where={"org_id": "acme", "domain_id": "support"}) == []
        assert await seen(b, where={"org_id": "beta"}) == []
        assert await seen(a, where={"org_id": "beta"}) == ["Pelican ledger for acme only"]
        # Extra arguments naming a tenant are refused, not obeyed.
        for extra in ({"scope": ACME}, {"org_id": "acme"}, {"tenant": ACME}):
            assert "tenant comes from the connection" in error_text(
                await b.call_tool("memory_search", {"query": "pelican", **extra}))
        # The other tenant's id forgets nothing of theirs.
        assert (await b.call_tool("memory_forget", {"ids": ["shared-id"]})
                ).structured_content == {"deleted": 1}
        assert "Pelican ledger for acme only" in await seen(a)
        assert await seen(b) == []
        assert (await a.call_tool("memory_forget", {"ids": ["shared-id"]})
                ).structured_content == {"deleted": 1}


async def test_http_search_equals_cli_query_json_for_the_tokens_tenant(http: HttpServer) -> None:
    text = "what does the cache invalidate"
    async with http_client(http, http.acme) as client:
        result = await client.call_tool("memory_search", {"query": text, "k": 7})
    items = result.structured_content["items"]
    assert items and items == cli_query(http.db, text, 7, ACME, http.root)


async def test_http_bad_arguments_are_tool_errors(http: HttpServer) -> None:
    async with http_client(http, http.beta) as client:
        for name, args, culprit in BAD_CALLS[:3] + BAD_CALLS[5:8] + BAD_CALLS[12:17]:
            assert culprit in error_text(await client.call_tool(name, args))
        assert not (await client.call_tool("memory_search", {"query": "x"})).is_error


async def test_http_concurrent_clients_write_exact_counts(http: HttpServer) -> None:
    tenant_token = add_token(http.tokens, "gamma/ops", http.root)  # picked up live
    clients, rounds, per = 4, 5, 10

    async def writer(n: int) -> list[str]:
        ids: list[str] = []
        async with http_client(http, tenant_token) as client:
            for r in range(rounds):
                items = [{"content": f"client {n} round {r} note {i} heron"} for i in range(per)]
                result = await client.call_tool("memory_write", {"items": items})
                assert not result.is_error, result
                assert result.structured_content["written"] == per
                ids += result.structured_content["ids"]
        return ids

    written = [i for ids in await asyncio.gather(*map(writer, range(clients))) for i in ids]
    total = clients * rounds * per
    assert len(set(written)) == total
    assert await count(http.db, "gamma/ops") == total
    async with http_client(http, tenant_token) as client:
        gone = await client.call_tool("memory_forget", {"ids": written})
    assert gone.structured_content == {"deleted": total}
    assert await count(http.db, "gamma/ops") == 0
    # Revoking is deleting the token's line: the running server refuses it at once.
    lines = http.tokens.read_text().splitlines(keepends=True)
    http.tokens.write_text("".join(line for line in lines if "gamma/ops" not in line))
    assert raw_post(http, INIT, Authorization=f"Bearer {tenant_token}").status_code == 401
    assert raw_post(http, INIT, Authorization=f"Bearer {http.acme}").status_code == 200


async def test_http_client_disconnecting_mid_call_leaves_the_server_serving(
    http: HttpServer,
) -> None:
    big = [{"content": f"heavy note {i} " + "words " * 400} for i in range(1000)]

    async def abandon() -> None:
        async with http_client(http, http.beta) as client:
            await client.call_tool("memory_write", {"items": big})

    before = await count(http.db, BETA)
    for delay in (0.05, 0.3, 1.0):
        task = asyncio.create_task(abandon())
        await asyncio.sleep(delay)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    assert http.proc.poll() is None
    # Each abandoned batch landed whole or not at all.
    assert (await count(http.db, BETA) - before) % len(big) == 0
    async with http_client(http, http.beta) as client:
        result = await client.call_tool("memory_search", {"query": "pelican", "k": 3})
    assert not result.is_error
    assert http.proc.poll() is None


def _listening(port: int) -> list[str]:
    """Local addresses of LISTEN sockets on ``port``, from the kernel's own tables."""
    found: list[str] = []
    for table, width in (("/proc/net/tcp", 8), ("/proc/net/tcp6", 32)):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            address, hexport = fields[1].split(":")
            if fields[3] == "0A" and int(hexport, 16) == port:
                raw = bytes.fromhex(address)
                if width == 8:
                    found.append(socket.inet_ntop(socket.AF_INET, raw[::-1]))
                else:
                    words = b"".join(raw[i:i + 4][::-1] for i in range(0, 16, 4))
                    found.append(socket.inet_ntop(socket.AF_INET6, words))
    return found


def test_http_port_alone_listens_on_loopback_only(http: HttpServer) -> None:
    assert http.url.startswith(f"http://127.0.0.1:{http.port}/mcp")
    assert _listening(http.port) == ["127.0.0.1"]


def test_http_needs_a_token_file_and_stdio_refuses_one(root: Path) -> None:
    no_tokens = cli("--store", "memory.db", "mcp", "--http", "0", cwd=root)
    assert no_tokens.returncode == 2 and "--tokens" in no_tokens.stderr
    stray = cli("--store", "memory.db", "mcp", "--tokens", "t", cwd=root)
    assert stray.returncode == 2 and "--tokens" in stray.stderr
    scoped = cli("--store", "memory.db", "--scope", ACME, "mcp", "--http", "0",
                 "--tokens", "t", cwd=root)
    assert scoped.returncode == 2 and "--scope" in scoped.stderr
    bad_port = cli("--store", "memory.db", "mcp", "--http", "127.0.0.1:http", "--tokens", "t",
                   cwd=root)
    assert bad_port.returncode == 2 and "--http" in bad_port.stderr


def test_token_add_prints_the_token_last_and_keeps_only_its_digest(tmp_path: Path) -> None:
    tokens = tmp_path / "sub" / "tokens"
    tokens.parent.mkdir()
    first = cli("mcp", "token", "add", ACME, "--tokens", str(tokens), cwd=tmp_path)
    second = cli("mcp", "token", "add", ACME, "--tokens", str(tokens), cwd=tmp_path)
    one, two = (ok(r).strip().splitlines()[-1] for r in (first, second))
    assert one != two and len(one) >= 40
    assert stat.S_IMODE(tokens.stat().st_mode) == 0o600
    text = tokens.read_text()
    assert one not in text and two not in text
    assert text.count(ACME) == 2
    bad = cli("mcp", "token", "add", "no-slash", "--tokens", str(tokens), cwd=tmp_path)
    assert bad.returncode == 2 and tokens.read_text() == text
    tokens.chmod(0o666)
    loose = cli("mcp", "token", "add", BETA, "--tokens", str(tokens), cwd=tmp_path)
    assert loose.returncode == 1 and "chmod 600" in loose.stderr


def test_http_refuses_to_start_on_a_loose_token_file(root: Path, tmp_path: Path) -> None:
    tokens = tmp_path / "tokens"
    add_token(tokens, ACME, tmp_path)
    tokens.chmod(0o622)
    result = cli("--store", str(root / "memory.db"), "mcp", "--http", "0", "--tokens",
                 str(tokens), cwd=tmp_path, timeout=60)
    assert result.returncode == 1 and "chmod 600" in result.stderr
