"""Which store and which embedder a command runs on.

The store remembers the embedder that wrote it, so after the first ``ingest`` no flag
is needed: a command without ``--hashing``/``--model`` uses the recorded one. An explicit
choice that disagrees with the file is refused by the store with a clear message.
``query --lexical`` opens a SQLite store with no embedder at all: reading words needs no
model, so it works even where sentence-transformers is not installed.

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

from agentkit.kernel.errors import StoreError
from agentkit.vector.hashing import HashingEmbedder
from agentkit.vector.port import Embedder
from agentkit.vector.sqlite import SQLiteVectorStore, embedder_name

_HASHING = embedder_name(HashingEmbedder())
_NO_MODEL_HINT = (
    "no embedding model is installed; install one with: "
    "pip install 'agentkit-memory[embeddings]' "
    "(or use --hashing, or query --lexical)"
)


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


def _check_choice(args: argparse.Namespace, recorded: tuple[str, int] | None, shown: str) -> None:
    """Refuse a conflicting --hashing/--model before paying seconds to load a model."""
    if recorded is None:
        return
    if args.hashing:
        wanted = _HASHING
    elif args.model is not None:
        from agentkit.vector.sentence import canonical_name

        wanted = canonical_name(args.model)
    else:
        return
    if wanted != recorded[0]:
        raise StoreError(
            f"store {shown} holds vectors from embedder {recorded[0]!r} "
            f"(dim {recorded[1]}); refusing to mix in {wanted!r}. Drop --hashing/--model "
            "to use the recorded one, or use a new store."
        )


def make_embedder(args: argparse.Namespace, recorded: tuple[str, int] | None) -> Embedder:
    """Explicit flags first, then what the store recorded, then the bundled MiniLM."""
    if args.hashing:
        dim = recorded[1] if recorded and recorded[0] == _HASHING else 256
        return HashingEmbedder(dim)
    model: str | None = args.model
    if model is None and recorded is not None:
        name, dim = recorded
        if name == _HASHING:
            return HashingEmbedder(dim)
        model = name
    return _sentence(model)


def _sentence(model: str | None) -> Embedder:
    try:
        import sentence_transformers  # noqa: F401  (probe only; the embedder imports it)
    except ImportError:
        raise StoreError(_NO_MODEL_HINT) from None
    from agentkit.vector.sentence import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder(model)


@contextlib.asynccontextmanager
async def open_store(
    args: argparse.Namespace, *, create: bool, need_vectors: bool = True
) -> AsyncIterator[Any]:
    """The opened store for ``args.store``: for writing with ``create``, else read-only.

    A SQLite file that turns out damaged mid-command is named in the error.
    """
    store = await _store(args, create=create, need_vectors=need_vectors)
    try:
        async with store:
            yield store
    except sqlite3.OperationalError as exc:
        raise StoreError(f"store {args.store!r}: {exc}") from exc
    except sqlite3.DatabaseError as exc:
        raise StoreError(damaged(args.store, exc)) from exc


async def _store(args: argparse.Namespace, *, create: bool, need_vectors: bool) -> Any:
    target: str = args.store
    lexical_only = not need_vectors and not args.hashing and args.model is None
    if is_postgres(target):
        try:
            import agentkit.vector as vector
            from agentkit.vector.postgres import recorded_embedder

            cls = vector.PostgresVectorStore
        except (ImportError, AttributeError) as exc:
            raise StoreError(
                "the PostgreSQL store is not available in this install "
                f"({type(exc).__name__}: {exc}); try: pip install 'agentkit-memory[postgres]'"
            ) from None
        embedder = None
        if not lexical_only:
            # The server's registry is this store's record of its embedder, read the way
            # a SQLite file's meta table is: the same choice rules apply to both.
            recorded = await recorded_embedder(target)
            _check_choice(args, recorded, repr(cls(target, embedder=None)))
            embedder = make_embedder(args, recorded)
        return cls(target, embedder=embedder, create=create)
    path = Path(target)
    recorded = inspect_store(path, create=create)
    _check_choice(args, recorded, repr(str(path)))
    embedder = None if lexical_only else make_embedder(args, recorded)
    if create:
        return SQLiteVectorStore(path, embedder=embedder, create=True)
    return SQLiteVectorStore(path, embedder=embedder, read_only=True)
