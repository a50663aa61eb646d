"""Which store and which embedder a command runs on.

The store remembers the embedder that wrote it, so after the first ``ingest`` no flag
is needed: a command without ``--embedder``/``--hashing``/``--model`` uses the recorded
one (``_embedder_choice``). An explicit choice whose vectors differ from the file's is
refused before a model loads. ``query --lexical`` opens a SQLite store with no embedder
at all: reading words needs no model, so it works even where no model is installed.

Before anything opens a SQLite path, ``inspect_store`` checks that it is an agentkit store
and not truncated, naming the file when it is not, and without changing it: a read
command pointed at the wrong file (empty, a text file, somebody else's database, a
damaged store) must say so, not turn it into a store or blame a missing model. Read
commands then open the store ``read_only``.
"""

from __future__ import annotations

import argparse
import contextlib
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from agentkit.cli._embedder_choice import check, make_embedder
from agentkit.cli._progress import index_rebuilds
from agentkit.kernel.errors import StoreError
from agentkit.vector.sqlite import SQLiteVectorStore


def is_postgres(store: str) -> bool:
    return store.startswith(("postgresql://", "postgres://"))


_MAGIC = b"SQLite format 3\x00"
_TABLES = {"meta", "chunks"}


def inspect_store(path: Path, *, create: bool) -> tuple[str, int] | None:
    """Check ``path`` is a usable agentkit store; return the (name, dim) its vectors were
    written with, or None when it holds none. ``create`` allows a missing or empty file
    (``ingest`` makes the store). Every refusal names the file; nothing is written."""
    shown = str(path)
    if not path.exists():
        if create:
            return None
        raise StoreError(f"no store at {shown!r} (run `agentkit-memory ingest` first, "
                         "or pass --store / set AGENTKIT_STORE)")
    if path.is_dir():
        raise StoreError(f"store path {shown!r} is a directory, not a SQLite file")
    if not path.is_file():
        raise StoreError(f"store path {shown!r} is not a regular file")
    size = path.stat().st_size
    if size == 0:
        if create:
            return None
        raise StoreError(f"{shown!r} is empty, not an agentkit store (run ingest first)")
    with path.open("rb") as fh:
        header = fh.read(100)
    if len(header) < 100 or not header.startswith(_MAGIC):
        raise StoreError(f"{shown!r} is not an agentkit store (not a SQLite database)")
    _check_length(path, header, size)
    tables, meta, empty = _read_meta(path)
    if not tables and create:
        return None  # a blank SQLite file: ingest may make it a store
    if not _TABLES <= tables or "schema_version" not in meta:
        raise StoreError(
            f"{shown!r} is not an agentkit store (a SQLite database without its tables)"
        )
    if not empty and "embedder" in meta and "dim" in meta:
        return (str(meta["embedder"]), int(meta["dim"]))
    return None


def _check_length(path: Path, header: bytes, size: int) -> None:
    """Refuse a file shorter than its own header says: a truncated copy or a cut-off write.

    Skipped while a -wal or -journal file exists: a checkpoint in progress may have
    written the new length into the header before the pages that reach it.
    """
    if any(path.with_name(path.name + s).exists() for s in ("-wal", "-journal")):
        return
    page = int.from_bytes(header[16:18], "big")
    page = 65536 if page == 1 else page
    pages = int.from_bytes(header[28:32], "big")
    if header[24:28] != header[92:96] or pages == 0:
        return  # the header's page count is not maintained (very old writers)
    if size < page * pages:
        raise StoreError(
            f"store {str(path)!r} is damaged: it holds {size} bytes but its header says "
            f"{page * pages} (truncated?); restore it or ingest into a new file"
        )


def _read_meta(path: Path) -> tuple[set[str], dict[str, str], bool]:
    # mode=rw never creates; query_only refuses every change; unlike mode=ro, closing
    # this connection removes the WAL side files opening it may have made.
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=rw", uri=True, timeout=30.0)
    except sqlite3.Error as exc:
        raise StoreError(f"cannot open store {str(path)!r}: {exc}") from None
    try:
        conn.execute("PRAGMA query_only = ON")
        tables = {str(r[0]) for r in conn.execute("SELECT name FROM sqlite_master")}
        if not {"meta", "chunks"} <= tables:
            return tables, {}, True
        meta = {str(k): str(v) for k, v in conn.execute("SELECT key, value FROM meta")}
        empty = bool(conn.execute("SELECT NOT EXISTS (SELECT 1 FROM chunks)").fetchone()[0])
    except sqlite3.OperationalError as exc:
        raise StoreError(f"cannot read store {str(path)!r}: {exc}") from None
    except sqlite3.DatabaseError as exc:
        raise StoreError(damaged(path, exc)) from None
    finally:
        conn.close()
    return tables, meta, empty


def damaged(path: Path | str, exc: BaseException) -> str:
    """The one message for a file SQLite cannot read as a database."""
    if "not a database" in str(exc):
        return f"{str(path)!r} is not an agentkit store ({exc})"
    return f"store {str(path)!r} is damaged ({exc}); restore it or ingest into a new file"


@contextlib.asynccontextmanager
async def open_store(
    args: argparse.Namespace, *, create: bool, need_vectors: bool = True
) -> AsyncIterator[Any]:
    """The opened store for ``args.store``: for writing with ``create``, else read-only.

    A SQLite file that turns out damaged mid-command is named in the error.
    """
    recorded = None
    if is_postgres(args.store) and (need_vectors or args.choice is not None):
        from agentkit.vector.postgres import _redact, recorded_embedder

        # The store's own, as for SQLite: it decides, or it refuses a flag, before any
        # model loads. The URL is named without its password.
        recorded = await recorded_embedder(args.store)
        check(args.choice, recorded, _redact(args.store))
    store = _store(args, create=create, need_vectors=need_vectors, recorded=recorded)
    try:
        with index_rebuilds():
            async with store:
                yield store
    except sqlite3.OperationalError as exc:
        raise StoreError(f"store {args.store!r}: {exc}") from exc
    except sqlite3.DatabaseError as exc:
        raise StoreError(damaged(args.store, exc)) from exc


def _store(
    args: argparse.Namespace,
    *,
    create: bool,
    need_vectors: bool,
    recorded: tuple[str, int] | None = None,
) -> Any:
    target: str = args.store
    lexical_only = not need_vectors and args.choice is None
    if is_postgres(target):
        # The server records the embedder too and refuses vectors from another space.
        embedder = None if lexical_only else make_embedder(args, recorded)
        try:
            import agentkit.vector as vector

            cls = vector.PostgresVectorStore
        except (ImportError, AttributeError) as exc:
            raise StoreError(
                "the PostgreSQL store is not available in this install "
                f"({type(exc).__name__}: {exc}); try: pip install 'agentkit-memory[postgres]'"
            ) from None
        return cls(target, embedder=embedder, create=create)
    path = Path(target)
    recorded = inspect_store(path, create=create)
    check(args.choice, recorded, path)
    embedder = None if lexical_only else make_embedder(args, recorded)
    if create:
        return SQLiteVectorStore(path, embedder=embedder, create=True)
    return SQLiteVectorStore(path, embedder=embedder, read_only=True)
