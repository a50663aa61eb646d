"""AgentkitEmbeddings: an agentkit Embedder (HashingEmbedder, ...) as LangChain Embeddings.

Gives LangChain vector stores an embedding with no model and no network, which is
what tests, notebooks and offline demos need; HashingEmbedder is lexical, not
semantic, and should not be presented otherwise.
"""

from __future__ import annotations

from langchain_core.embeddings import Embeddings

from agentkit.interop import run_sync
from agentkit.kernel.errors import InvalidArgumentType
from agentkit.vector import Embedder


class AgentkitEmbeddings(Embeddings):
    """LangChain ``Embeddings`` over an agentkit ``Embedder`` (``dim``, ``async embed``).

    The sync methods run the embedder once on agentkit's shared loop, so they work
    inside a running event loop too; the async ones await it on the caller's loop.

    Args:
        embedder: An agentkit ``Embedder`` (``HashingEmbedder``,
            ``OnnxEmbedder``, ``SentenceTransformerEmbedder``, ...).

    Raises:
        InvalidArgumentType: ``embedder`` is not an agentkit ``Embedder`` (no ``dim`` or
            no async ``embed``).
    """

    def __init__(self, embedder: Embedder) -> None:
        if not isinstance(embedder, Embedder):
            raise InvalidArgumentType(
                f"embedder must be an agentkit Embedder (dim, async embed), "
                f"got {type(embedder).__name__}"
            )
        self.embedder: Embedder = embedder

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
