"""Reading a Chroma persistent folder (``chromadb.PersistentClient(path)``), page by page."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from agentkit.kernel.errors import InvalidArgument
from agentkit.migrate._need import need
from agentkit.migrate._source import PAGE, Record, Source


def read_chroma(path: str | Path, *, collection: str | None = None, page: int = PAGE) -> Source:
    """The records of one collection: ``collection`` by name, or the folder's only one."""
    # Chroma phones home unless told not to; an import is no reason to.
    os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
    chromadb = need("chromadb", "chromadb", "a Chroma folder")
    folder = Path(path)
    client = chromadb.PersistentClient(path=str(folder))
    names = sorted(_name(c) for c in client.list_collections())
    if collection is None:
        if len(names) != 1:
            listed = ", ".join(repr(n) for n in names) or "none"
            raise InvalidArgument(
                f"the Chroma folder {str(folder)!r} holds {len(names)} collections "
                f"({listed}); name one with --collection"
            )
        collection = names[0]
    elif collection not in names:
        listed = ", ".join(repr(n) for n in names) or "none"
        raise InvalidArgument(
            f"the Chroma folder {str(folder)!r} has no collection {collection!r} "
            f"(it has: {listed})"
        )
    col = client.get_collection(collection, embedding_function=None)
    embedder, note = _recorded_embedder(col)
    return Source(
        "chroma",
        f"{str(folder)!r} collection {collection!r}",
        _pages(col, page),
        total=int(col.count()),
        embedder=embedder,
        note=note,
    )


def _name(entry: Any) -> str:
    return entry if isinstance(entry, str) else str(entry.name)


def _recorded_embedder(col: Any) -> tuple[str | None, str]:
    """The model a collection records: its metadata's ``embedder`` (or ``embedding_model``
    / ``model_name``), else a persisted sentence-transformers embedding function's
    model. Chroma's default function is an ONNX port, not the same code as ours: not
    claimed as the same model."""
    meta = col.metadata or {}
    for key in ("embedder", "embedding_model", "model_name"):
        value = meta.get(key)
        if isinstance(value, str) and value:
            return value, ""
    config = getattr(col, "configuration_json", None) or {}
    function = config.get("embedding_function") if isinstance(config, dict) else None
    if isinstance(function, dict):
        name = function.get("name")
        settings = function.get("config") or {}
        if name == "sentence_transformer" and isinstance(settings.get("model_name"), str):
            return str(settings["model_name"]), ""
        if name:
            return None, f"its collection names embedding function {name!r} only"
    return None, "its collection metadata names no embedder"


def _pages(col: Any, page: int) -> Iterator[list[Record]]:
    offset = 0
    while True:
        got = col.get(
            limit=page, offset=offset, include=["documents", "metadatas", "embeddings"]
        )
        ids = list(got.get("ids") or [])
        if not ids:
            return
        docs = got.get("documents")
        metas = got.get("metadatas")
        vectors = got.get("embeddings")
        yield [
            Record(
                rid,
                None if docs is None else docs[i],
                dict((metas[i] if metas is not None else None) or {}),
                None if vectors is None else vectors[i],
            )
            for i, rid in enumerate(ids)
        ]
        offset += len(ids)
