"""``agentkit-memory``: ingest, query and evaluate a hybrid memory from the shell.

Every failure a user can cause (a missing store, a bad path, an unknown scope form, a
model that is not installed) ends as one line on stderr and a non-zero exit status:
2 for a malformed command line, 1 for everything else. Set ``AGENTKIT_DEBUG=1`` to get
the traceback instead.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sqlite3
import sys
from typing import Any

from agentkit.cli._args import PROG, UsageError, parse
from agentkit.kernel.errors import AgentkitError

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    """Run one command; returns the exit status (the console script exits with it)."""
    # Model loading draws its own progress bars; this command owns stderr.
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    debug = os.environ.get("AGENTKIT_DEBUG", "") not in ("", "0")
    try:
        args = parse(sys.argv[1:] if argv is None else argv)
        return asyncio.run(_dispatch(args))
    except UsageError as exc:
        return _fail(exc, 2, debug)
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    except (AgentkitError, OSError, ValueError, sqlite3.Error) as exc:
        return _fail(exc, 1, debug)
    except Exception as exc:  # last resort: still one line, never a traceback
        return _fail(exc, 1, debug, prefix=f"internal error ({type(exc).__name__}): ")


def _fail(exc: BaseException, code: int, debug: bool, prefix: str = "") -> int:
    if debug:
        raise exc
    message = " ".join(str(exc).split()) or type(exc).__name__
    if isinstance(exc, OSError) and exc.filename is not None and exc.strerror:
        message = f"{exc.strerror}: {exc.filename!r}"
    print(f"{PROG}: error: {prefix}{message}", file=sys.stderr)
    return code


async def _dispatch(args: argparse.Namespace) -> int:
    from agentkit.cli import _commands

    handler: Any = getattr(_commands, f"cmd_{args.command}")
    result: int = await handler(args)
    return result
