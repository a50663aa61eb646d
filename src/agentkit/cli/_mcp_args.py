"""The ``mcp`` subcommand's grammar, kept beside the server it configures."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

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


def server_module() -> Any:
    """``_mcp_server``, imported on demand: the rest of the CLI needs no MCP SDK."""
    try:
        from agentkit.cli import _mcp_server
    except ModuleNotFoundError as exc:
        if (exc.name or "").split(".")[0] not in ("mcp", "mcp_types", "uvicorn", "starlette"):
            raise
        raise StoreError(
            f"the MCP server needs the mcp extra ({exc.name} is not installed); "
            "install it with: pip install 'agentkit-memory[mcp]'"
        ) from None
    return _mcp_server
