"""The vector seam and the stores behind it.

The durable stores and the model-backed embedder import lazily, so ``import
agentkit.vector`` never pays for sqlite schemas, psycopg, onnxruntime or torch it does not use.
"""

from __future__ import annotations

import importlib
from typing import Any

from agentkit.kernel.where import MAX_WHERE_DEPTH, MAX_WHERE_TERMS, Where, parse_where
from agentkit.vector.hashing import HashingEmbedder
from agentkit.vector.in_memory import InMemoryVectorStore
from agentkit.vector.port import (
    Chunk,
    Embedder,
    ForgettingPort,
    LexicalPort,
    VectorPort,
    matches_where,
)

_LAZY = {
    "SQLiteVectorStore": "agentkit.vector.sqlite",
    "PostgresVectorStore": "agentkit.vector.postgres",
    "SentenceTransformerEmbedder": "agentkit.vector.sentence",
    "OnnxEmbedder": "agentkit.vector.onnx_embedder",
}

__all__ = [
    "MAX_WHERE_DEPTH",
    "MAX_WHERE_TERMS",
    "Chunk",
    "Embedder",
    "ForgettingPort",
    "HashingEmbedder",
    "InMemoryVectorStore",
    "LexicalPort",
    "OnnxEmbedder",
    "PostgresVectorStore",
    "SQLiteVectorStore",
    "SentenceTransformerEmbedder",
    "VectorPort",
    "Where",
    "matches_where",
    "parse_where",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'agentkit.vector' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
