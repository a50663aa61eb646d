"""Bring what users already stored (LlamaIndex, Chroma, FAISS, framework objects) into an
agentkit store, keeping ids, text and metadata.

Framework and store packages are imported only by the reader that needs them; a missing
one is named in the error (``pip install 'agentkit-memory[import]'`` brings them all).
"""

from __future__ import annotations

from agentkit.migrate._copy import CopyReport, copy
from agentkit.migrate._detect import KINDS, detect_kind, read_folder
from agentkit.migrate._objects import from_langchain, from_llamaindex
from agentkit.migrate._source import Record, Source, canonical_embedder, records_source

__all__ = [
    "KINDS",
    "CopyReport",
    "Record",
    "Source",
    "canonical_embedder",
    "copy",
    "detect_kind",
    "from_langchain",
    "from_llamaindex",
    "read_folder",
    "records_source",
]
