"""What a store holds, per scope: the answer to ``agentkit-memory stats``.

Every agentkit store reports the same shape (``stats()``), so the command prints one
table whatever the backend. A *document* is what one ingested source became: chunks
that share the ``corpus``/``path``/``doc_id`` metadata the CLI's ingest writes are one
document; a record with none of those keys is a document of its own. The stores
compute this key in their own query language and it must agree with
:func:`document_key`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentkit.kernel.ctx import Scope

# The metadata keys that name a record's source document, in key order.
DOCUMENT_KEYS = ("corpus", "path", "doc_id")


def document_key(chunk_id: str, metadata: Mapping[str, Any]) -> tuple[Any, ...]:
    """The document a record belongs to (see the module docstring)."""
    if "path" in metadata or "doc_id" in metadata:
        # A missing key and a stored null are told apart, as the stores' JSON is.
        return ("doc", *((k in metadata, repr(metadata.get(k))) for k in DOCUMENT_KEYS))
    return ("record", chunk_id)


@dataclass(frozen=True, slots=True)
class ScopeStats:
    """One scope (tenant bucket): its records (chunks), documents and last write.

    ``last_write`` is in Unix seconds (UTC) and covers writes and deletes made
    through agentkit; None when the store has no record of one (a file written by a
    version that did not keep it). A scope whose every record was forgotten stays
    listed with 0 records while its last write is known.
    """

    scope: Scope
    records: int
    documents: int
    last_write: float | None


@dataclass(frozen=True, slots=True)
class StoreStats:
    """The whole store: where it is, who wrote its vectors, its size, its scopes.

    ``bytes_on_disk`` is everything the store keeps on disk: for SQLite the file, its
    ``-wal`` and ``-shm`` and the lexical indexes in ``<file>.lexical/``; for
    PostgreSQL the table with its indexes; None for a store that keeps nothing on disk.
    """

    kind: str
    location: str
    embedder: str | None
    dim: int | None
    bytes_on_disk: int | None
    scopes: list[ScopeStats] = field(default_factory=list)


def scope_of(org: str, domain: str) -> Scope:
    """The Scope a store's ('', '')-for-unset bucket columns stand for."""
    return Scope(org or None, domain or None)


def bytes_under(paths: Iterable[Path]) -> int:
    """Total size of ``paths``: files as they are, folders with everything inside.

    A path that is missing, or vanishes while it is walked (a WAL checkpointed away,
    an index segment merged), counts as nothing rather than failing the report.
    """
    total = 0
    for path in paths:
        try:
            if not path.is_dir():
                total += path.stat().st_size
                continue
        except OSError:
            continue
        for root, _, files in os.walk(path):
            for name in files:
                try:
                    total += os.stat(os.path.join(root, name), follow_symlinks=False).st_size
                except OSError:
                    continue
    return total


@dataclass(frozen=True, slots=True)
class IndexStatus:
    """One index beside an embedded store, for one scope: ``agentkit-memory index check``.

    ``kind`` is ``"lexical"`` or ``"dense"``; ``generation`` the scope's rows' generation
    and ``indexed`` the one the index reflects (None: no index to trust). ``state``:
    ``"current"``; ``"behind"`` (the next read catches it up by the change);
    ``"stale"`` (older than the change log reaches: the next read rebuilds it);
    ``"missing"`` (never built, removed, or from another store or format: built on the
    next read); ``"damaged"`` (named files unreadable: rebuilt on the next read).
    """

    scope: Scope
    kind: str
    generation: int
    indexed: int | None
    state: str
