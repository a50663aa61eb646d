"""AgentkitMemoryBlock: recall from an agentkit stack inside LlamaIndex's ``Memory``."""

from __future__ import annotations

from typing import Any

from llama_index.core.base.llms.types import ChatMessage, TextBlock
from llama_index.core.bridge.pydantic import Field, field_validator
from llama_index.core.memory.memory import BaseMemoryBlock

from agentkit.kernel import Ctx
from agentkit.kernel.validate import check_k, check_where
from agentkit.state.memory import MemoryItem, MemorySource, render_grounding

__all__ = ["AgentkitMemoryBlock"]


class AgentkitMemoryBlock(BaseMemoryBlock[str]):
    """A ``Memory`` block that queries any MemorySource with the latest messages.

    ``Memory`` asks its blocks one at a time with nothing but the chat so far, so the
    block carries what the stack needs: ``k``, ``where`` and the tenant's ``ctx``.
    The query is the text of the last ``retrieval_context_window`` messages; results
    render as ``[source] content`` so the model can attribute them. Read-only: ejected
    chat is not written back (``accept_short_term_memory`` defaults to False).
    """

    name: str = Field(default="agentkit", description="The name of the memory block.")
    memory: Any = Field(description="The agentkit MemorySource to recall from.", exclude=True)
    k: int = Field(default=4, description="How many items to recall.")
    where: dict[str, Any] | None = Field(default=None, description="Metadata filter.")
    ctx: Any = Field(default=None, description="agentkit Ctx (tenant); None = empty.", exclude=True)
    retrieval_context_window: int = Field(
        default=1, description="How many of the latest messages form the query."
    )
    accept_short_term_memory: bool = Field(default=False)

    @field_validator("memory")
    @classmethod
    def _check_memory(cls, value: Any) -> Any:
        if not isinstance(value, MemorySource):
            raise ValueError(f"memory must be a MemorySource, got {type(value).__name__}")
        return value

    @field_validator("k", mode="before")
    @classmethod
    def _check_k(cls, value: Any) -> int:
        return check_k(value)

    @field_validator("where", mode="before")
    @classmethod
    def _check_where(cls, value: Any) -> dict[str, Any] | None:
        return check_where(value)

    @field_validator("ctx")
    @classmethod
    def _check_ctx(cls, value: Any) -> Any:
        if value is not None and not isinstance(value, Ctx):
            raise ValueError(f"ctx must be a Ctx or None, got {type(value).__name__}")
        return value

    @field_validator("retrieval_context_window")
    @classmethod
    def _check_window(cls, value: int) -> int:
        if value < 1:
            raise ValueError(f"retrieval_context_window must be >= 1, got {value}")
        return value

    def _query_text(self, messages: list[ChatMessage] | None) -> str:
        recent = (messages or [])[-self.retrieval_context_window :]
        parts = ["".join(b.text for b in m.blocks if isinstance(b, TextBlock)) for m in recent]
        return " ".join(p for p in parts if p).strip()

    async def recall(self, messages: list[ChatMessage] | None = None) -> list[MemoryItem]:
        """The items behind the block's text, for callers that want ids and scores."""
        text = self._query_text(messages)
        if not text:
            return []
        ctx = self.ctx if self.ctx is not None else Ctx()
        items: list[MemoryItem] = await self.memory.query(text, k=self.k, ctx=ctx, where=self.where)
        return items[: self.k]

    async def _aget(self, messages: list[ChatMessage] | None = None, **block_kwargs: Any) -> str:
        return render_grounding(await self.recall(messages))

    async def _aput(self, messages: list[ChatMessage]) -> None:
        """Nothing to do: the block reads from the stack, it does not feed it."""
