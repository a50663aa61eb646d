"""Which store and which embedder a command runs on.

The store remembers the embedder that wrote it, so after the first ``ingest`` no flag
is needed: a command without ``--hashing``/``--model`` uses the recorded one. An explicit
choice that disagrees with the file is refused by the store with a clear message.
``query --lexical`` opens a SQLite store with no embedder at all: reading words needs no
model, so it works even where sentence-transformers is not installed.
"""

from __future__ import annotations

import argparse
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

from agentkit.kernel.errors import StoreError
from agentkit.vector.hashing import HashingEmbedder
from agentkit.vector.port import Embedder
from agentkit.vector.sqlite import SQLiteVectorStore, embedder_name

_HASHING = embedder_name(HashingEmbedder())
_NO_MODEL_HINT = (
    "sentence-transformers is not installed; install it with: "
    "pip install torch==2.13.0 && pip install 'agentkit-memory[embeddings]' "
    "(or use --hashing, or query --lexical)"
)


def is_postgres(store: str) -> bool:
    return store.startswith(("postgresql://", "postgres://"))


def recorded_embedder(path: Path) -> tuple[str, int] | None:
    """(name, dim) a SQLite store's vectors were written with; None if it holds none."""
    if not path.is_file():
        return None
    try:
        uri = f"{path.resolve().as_uri()}?mode=ro"
        with closing(sqlite3.connect(uri, uri=True, timeout=30.0)) as conn:
            rows = dict(conn.execute("SELECT key, value FROM meta").fetchall())
            empty = conn.execute("SELECT NOT EXISTS (SELECT 1 FROM chunks)").fetchone()[0]
    except sqlite3.Error:
        return None  # not ours or not initialised: the store's own open will say so
    if not empty and "embedder" in rows and "dim" in rows:
        return (str(rows["embedder"]), int(rows["dim"]))
    return None


def _check_choice(args: argparse.Namespace, recorded: tuple[str, int] | None, path: Path) -> None:
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
            f"store {str(path)!r} holds vectors from embedder {recorded[0]!r} "
            f"(dim {recorded[1]}); refusing to mix in {wanted!r}. Drop --hashing/--model "
            "to use the recorded one, or use a new store file."
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


def open_store(args: argparse.Namespace, *, create: bool, need_vectors: bool = True) -> Any:
    """An unopened store for ``args.store``; the caller enters it with ``async with``."""
    target: str = args.store
    if is_postgres(target):
        # The server records the embedder too and refuses a different one; without a
        # local file to read it from, the flags (or the bundled MiniLM) decide.
        lexical_only = not need_vectors and not args.hashing and args.model is None
        embedder = None if lexical_only else make_embedder(args, None)
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
    if not create and not path.exists():
        raise StoreError(f"no store at {target!r} (run `agentkit-memory ingest` first, "
                         "or pass --store / set AGENTKIT_STORE)")
    recorded = recorded_embedder(path)
    _check_choice(args, recorded, path)
    if not need_vectors and not args.hashing and args.model is None:
        return SQLiteVectorStore(path, embedder=None, create=create)
    return SQLiteVectorStore(path, embedder=make_embedder(args, recorded), create=create)
