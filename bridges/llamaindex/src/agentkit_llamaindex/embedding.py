"""AgentkitEmbedding: an agentkit Embedder as a LlamaIndex embed model.

So indexes, selectors and memory blocks can embed with the same model as agentkit's
stores — and tests, notebooks and offline setups never reach for a hosted default.
"""

from __future__ import annotations

from typing import Any

from llama_index.core.base.embeddings.base import BaseEmbedding, Embedding
from llama_index.core.bridge.pydantic import PrivateAttr

from agentkit.interop import run_sync
from agentkit.kernel.errors import InvalidArgumentType
from agentkit.vector.port import Embedder

__all__ = ["AgentkitEmbedding"]


class AgentkitEmbedding(BaseEmbedding):
    """Wraps any ``agentkit.vector.Embedder`` (``OnnxEmbedder``, ``HashingEmbedder``, ...).

    Args:
        embedder: The agentkit embedder that does the work.
        model_name: The name LlamaIndex reports; the embedder's class name by default.
        **kwargs: Passed to LlamaIndex's ``BaseEmbedding`` (``embed_batch_size``, ...).

    Raises:
        InvalidArgumentType: ``embedder`` is not an agentkit Embedder (``dim`` and
            async ``embed``).
    """

    _embedder: Embedder = PrivateAttr()

    def __init__(self, embedder: Embedder, *, model_name: str | None = None, **kwargs: Any):
        if not isinstance(embedder, Embedder):
            raise InvalidArgumentType(
                f"embedder must be an agentkit Embedder (dim, async embed), "
                f"got {type(embedder).__name__}"
            )
        super().__init__(model_name=model_name or type(embedder).__name__, **kwargs)
        self._embedder = embedder

    @classmethod
    def class_name(cls) -> str:
        """LlamaIndex's serialisation name for this class."""
        return "AgentkitEmbedding"

    @property
    def embedder(self) -> Embedder:
        """The wrapped agentkit embedder."""
        return self._embedder

    async def _aembed(self, texts: list[str]) -> list[Embedding]:
        if not texts:
            return []
        matrix = await self._embedder.embed(texts)
        return [[float(x) for x in row] for row in matrix.tolist()]

    def _embed(self, texts: list[str]) -> list[Embedding]:
        return run_sync(lambda: self._aembed(texts))

    def _get_query_embedding(self, query: str) -> Embedding:
        return self._embed([query])[0]

    async def _aget_query_embedding(self, query: str) -> Embedding:
        return (await self._aembed([query]))[0]

    def _get_text_embedding(self, text: str) -> Embedding:
        return self._embed([text])[0]

    async def _aget_text_embedding(self, text: str) -> Embedding:
        return (await self._aembed([text]))[0]

    def _get_text_embeddings(self, texts: list[str]) -> list[Embedding]:
        return self._embed(list(texts))

    async def _aget_text_embeddings(self, texts: list[str]) -> list[Embedding]:
        return await self._aembed(list(texts))
