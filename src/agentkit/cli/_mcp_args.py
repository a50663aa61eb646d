"""The ``mcp`` subcommand's grammar, kept beside the server it configures."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

from agentkit.cli._args import PROG, UsageError, parse_scope
from agentkit.kernel.ctx import Scope
from agentkit.kernel.errors import StoreError


def register(sub: Any, add_globals: Callable[..., None], positive: Callable[[str], int]) -> None:
    mcp = sub.add_parser("mcp", help="serve the store to agents over the Model Context Protocol")
    add_globals(mcp, top=False)
    mcp.add_argument("--http", default=None, metavar="[HOST:]PORT",
                     help="serve streamable HTTP at /mcp instead of stdio "
                     "(host default 127.0.0.1; needs --tokens)")
    mcp.add_argument("--tokens", default=None, metavar="FILE",
                     help="bearer-token file mapping tokens (as sha256 digests) to ORG/DOMAIN")
    mcp.add_argument("--candidates", type=positive, default=50, metavar="N",
                     help="how deep each half is read before fusion, as query's (default 50)")
    mcp.set_defaults(mcp_command=None)
    verbs = mcp.add_subparsers(dest="mcp_command", metavar="token")
    token = verbs.add_parser("token", help="manage the --tokens file")
    actions = token.add_subparsers(dest="token_command", metavar="add", required=True)
    add = actions.add_parser(
        "add", help="add a fresh token for ORG/DOMAIN; prints it once (its last line)"
    )
    add.add_argument("tenant", metavar="ORG/DOMAIN")
    add.add_argument("--tokens", required=True, metavar="FILE",
                     help="the token file (created with mode 0600 if missing)")


def parse_listen(text: str) -> tuple[str, int]:
    """``PORT``, ``HOST:PORT`` or ``[V6]:PORT``; the host defaults to loopback."""
    host, port = "127.0.0.1", text
    if text.startswith("["):
        inner, sep, rest = text[1:].partition("]")
        if not sep or not rest.startswith(":"):
            raise UsageError(f"--http takes [HOST:]PORT, got {text!r}")
        host, port = inner, rest[1:]
    elif ":" in text:
        host, _, port = text.rpartition(":")
    if not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise UsageError(f"--http takes [HOST:]PORT with a port 0-65535, got {text!r}")
    return host, int(port)


def _check(args: argparse.Namespace) -> tuple[str, int] | None:
    """Where to listen (None: stdio), after refusing flags that do not go together."""
    if args.http is None:
        if args.tokens is not None:
            raise UsageError("--tokens is for --http; over stdio the tenant is --scope")
        return None
    listen = parse_listen(args.http)
    if args.tokens is None:
        raise UsageError(f"--http needs --tokens FILE (create one with: {PROG} mcp token "
                         "add ORG/DOMAIN --tokens FILE)")
    if args.scope != Scope():
        raise UsageError("--scope is for stdio; over --http each token names its tenant")
    return listen


async def run(args: argparse.Namespace) -> int:
    """``mcp``: the command line is checked before the SDK is even imported."""
    if args.mcp_command == "token":
        from agentkit.cli._mcp_tokens import add_token

        token = add_token(args.tokens, parse_scope(args.tenant))
        print(f"added a token for {args.tenant} to {args.tokens}; it is shown only this once:",
              file=sys.stderr)
        print(token)
        return 0
    listen = _check(args)
    try:
        from agentkit.cli import _mcp_server
    except ModuleNotFoundError as exc:
        if (exc.name or "").split(".")[0] not in ("mcp", "mcp_types", "uvicorn", "starlette"):
            raise
        raise StoreError(
            f"the MCP server needs the mcp extra ({exc.name} is not installed); "
            "install it with: pip install 'agentkit-memory[mcp]'"
        ) from None
    result: int = await _mcp_server.run(args, listen)
    return result
