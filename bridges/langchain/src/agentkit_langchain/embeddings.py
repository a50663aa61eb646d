"""AgentkitEmbeddings: an agentkit Embedder (HashingEmbedder, ...) as LangChain Embeddings.

Gives LangChain vector stores an embedding with no model and no network, which is
what tests, notebooks and offline demos need; HashingEmbedder is lexical, not
semantic, and should not be presented otherwise.
"""

from __future__ import annotations

from typing import Any

from langchain_core.embeddings import Embeddings

from agentkit.interop import run_sync
from agentkit.kernel.errors import InvalidArgumentType


class AgentkitEmbeddings(Embeddings):
    """LangChain ``Embeddings`` over anything with ``async embed(texts) -> array``.

    The sync methods run the embedder once on agentkit's shared loop, so they work
    inside a running event loop too; the async ones await it on the caller's loop.

    Args:
        embedder: An agentkit ``Embedder`` (``HashingEmbedder``,
            ``OnnxEmbedder``, ``SentenceTransformerEmbedder``, ...).

    Raises:
        InvalidArgumentType: ``embedder`` has no ``embed``.
    """

    def __init__(self, embedder: Any) -> None:
        if not callable(getattr(embedder, "embed", None)):
            raise InvalidArgumentType(
                f"embedder must have an async embed(texts), got {type(embedder).__name__}"
            )
        self.embedder = embedder

    def __repr__(self) -> str:
        return f"AgentkitEmbeddings({self.embedder!r})"

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """One vector per text, in order, as the embedder made it."""
        texts = list(texts)
        rows = run_sync(lambda: self.embedder.embed(texts))
        return [[float(x) for x in row] for row in rows.tolist()]

    def embed_query(self, text: str) -> list[float]:
        """The vector for one query text (the same embedding as a document's)."""
        return self.embed_documents([text])[0]

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        """``embed_documents`` awaited on the caller's loop."""
        rows = await self.embedder.embed(list(texts))
        return [[float(x) for x in row] for row in rows.tolist()]

    async def aembed_query(self, text: str) -> list[float]:
        """``embed_query`` awaited on the caller's loop."""
        return (await self.aembed_documents([text]))[0]
