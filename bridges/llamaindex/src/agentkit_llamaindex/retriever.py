"""AgentkitRetriever: any MemorySource as a LlamaIndex retriever."""

from __future__ import annotations

import copy
import itertools
import uuid
from typing import Any

from llama_index.core.callbacks import CallbackManager
from llama_index.core.retrievers import BaseRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle

from agentkit.interop import run_sync
from agentkit.kernel import Ctx, Scope
from agentkit.kernel.errors import InvalidArgumentType
from agentkit.kernel.validate import check_k, check_where
from agentkit.state.memory import MemoryItem, MemorySource
from agentkit_llamaindex.mapping import to_nodes

__all__ = ["AgentkitRetriever"]

_UNSET: Any = object()
# Ctx() draws a uuid4 from os.urandom (tens of microseconds under load); a per-process
# prefix plus a counter is just as unique for the empty per-call Ctx and nearly free.
_RUN_PREFIX = uuid.uuid4().hex[:16]
_run_numbers = itertools.count()


_EMPTY_SCOPE = Scope()


def _fresh_ctx() -> Ctx:
    return Ctx(_EMPTY_SCOPE, run_id=f"{_RUN_PREFIX}{next(_run_numbers):016x}")


def _check_ctx(ctx: object) -> Ctx | None:
    if ctx is not None and not isinstance(ctx, Ctx):
        raise InvalidArgumentType(f"ctx must be a Ctx or None, got {type(ctx).__name__}")
    return ctx


class AgentkitRetriever(BaseRetriever):
    """An agentkit memory stack behind LlamaIndex's retriever interface.

    Results keep the memory's order (the stack has already ranked) and come back as
    fresh nodes with unique ids on every call. ``ctx=None`` means an empty ``Ctx`` per
    call; serve another tenant with ``bind(ctx=...)``, which copies rather than
    mutates, so one configured retriever can be shared by many requests.

    ``aretrieve`` awaits the memory on the caller's loop. ``retrieve`` runs the query
    once on the one event loop both bridges share (``agentkit.interop.run_sync``:
    driven by the calling thread when it is free, else handed to whoever drives it)
    and blocks, so it works anywhere, inside a running loop too. Both hand the memory the bound
    ``Ctx`` object itself, so its timeline receives the run's observations.

    Scores pass through as the memory gave them, ``None`` included, so inside
    ``QueryFusionRetriever`` use the ``simple`` or ``reciprocal_rerank`` modes: the
    score-normalising ones fail on a ``None`` score.

    Args:
        mem: The MemorySource to recall from: one source or a whole stack.
        k: How many nodes a call returns at most.
        where: A metadata filter every call applies.
        ctx: The tenant's Ctx, handed to the memory on every call; ``None`` gives each
            call an empty, unscoped one.
        include_score: ``False`` leaves ``agentkit_score`` out of node metadata, so
            ``QueryFusionRetriever`` with several queries fuses a record's copies (it
            matches nodes by text and metadata); the node score still carries it.
        callback_manager: LlamaIndex's, as for any retriever.
        verbose: LlamaIndex's, as for any retriever.

    Raises:
        InvalidArgumentType: ``mem`` is not a MemorySource, or a ``k``, ``where`` or
            ``ctx`` of the wrong type.
        InvalidArgument: ``k`` below 1.
    """

    def __init__(
        self,
        mem: MemorySource,
        k: int = 4,
        where: dict[str, Any] | None = None,
        ctx: Ctx | None = None,
        *,
        include_score: bool = True,
        callback_manager: CallbackManager | None = None,
        verbose: bool = False,
    ) -> None:
        if not isinstance(mem, MemorySource):
            raise InvalidArgumentType(
                f"mem must be a MemorySource (name, query, write), got {type(mem).__name__}"
            )
        self._mem = mem
        self._k = check_k(k)
        self._where = check_where(where)
        self._ctx = _check_ctx(ctx)
        if not isinstance(include_score, bool):
            raise InvalidArgumentType(
                f"include_score must be a bool, got {type(include_score).__name__}"
            )
        self._include_score = include_score
        super().__init__(callback_manager=callback_manager, verbose=verbose)

    @property
    def memory(self) -> MemorySource:
        """The MemorySource this retriever recalls from."""
        return self._mem

    @property
    def k(self) -> int:
        """How many nodes a call returns at most."""
        return self._k

    @property
    def where(self) -> dict[str, Any] | None:
        """A copy of the filter every call applies (``None``: no filter)."""
        return None if self._where is None else dict(self._where)

    @property
    def ctx(self) -> Ctx | None:
        """The bound tenant's Ctx, or ``None`` for an empty one per call."""
        return self._ctx

    def bind(
        self,
        *,
        ctx: Ctx | None = _UNSET,
        k: int = _UNSET,
        where: dict[str, Any] | None = _UNSET,
    ) -> AgentkitRetriever:
        """A copy with another tenant (and optionally ``k``/``where``); self is untouched."""
        clone = copy.copy(self)
        if ctx is not _UNSET:
            clone._ctx = _check_ctx(ctx)
        if k is not _UNSET:
            clone._k = check_k(k)
        if where is not _UNSET:
            clone._where = check_where(where)
        return clone

    def _query(self, query_bundle: QueryBundle) -> Any:
        return self._mem.query(
            query_bundle.query_str,
            k=self._k,
            ctx=self._ctx if self._ctx is not None else _fresh_ctx(),
            where=self._where,
        )

    def _nodes(self, items: list[MemoryItem]) -> list[NodeWithScore]:
        if len(items) > self._k:  # a memory that ignores k; no copy when it keeps it
            items = items[: self._k]
        return to_nodes(items, include_score=self._include_score)

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        items: list[MemoryItem] = run_sync(lambda: self._query(query_bundle))
        return self._nodes(items)

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        items: list[MemoryItem] = await self._query(query_bundle)
        return self._nodes(items)
