"""LangChainMemory: any LangChain retriever as a read-only agentkit MemorySource."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import dataclasses
import functools
from collections.abc import Callable, Iterable
from typing import Any

from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.vectorstores import InMemoryVectorStore, VectorStoreRetriever

from agentkit.interop import blocking_pool
from agentkit.kernel.ctx import Ctx
from agentkit.kernel.errors import InvalidArgument, InvalidArgumentType
from agentkit.kernel.validate import check_ctx, check_k, check_query, check_where
from agentkit.state.memory import MemoryItem
from agentkit.vector.port import matches_where
from agentkit_langchain.mapping import (
    CHUNK_KEY,
    DOMAIN_KEY,
    ORG_KEY,
    from_document,
    in_scope,
    scope_stamp,
)

# When ``where`` cannot be pushed down, ask for this many times ``k`` so the re-check
# still has enough to choose from.
_OVERFETCH = 4


class LangChainMemory:
    """Recall from a LangChain retriever, with agentkit's ``k`` and ``where`` honoured.

    ``k`` is pushed down on a per-call copy (``search_kwargs["k"]`` of a
    VectorStoreRetriever, a ``k`` or ``top_k`` field) and the result is cut to ``k``
    regardless. ``where`` becomes a filter where the backend takes one we can build
    safely (a callable for LangChain's InMemoryVectorStore) and every result is
    re-checked against it, so a filter is never silently dropped. A retriever knows
    nothing of tenants, so its documents are shared, except documents stamped with
    a tenant by LangChainVectorPort: those reach only that tenant.

    A retriever that only implements the sync method runs on the bridge's own
    thread pool, so a composite over several of them is concurrent. Writes are
    not this adapter's: ``accepts_writes`` is False and ``write`` does nothing.
    """

    accepts_writes = False

    def __init__(
        self,
        retriever: Any,
        name: str = "langchain",
        *,
        executor: concurrent.futures.Executor | None = None,
    ) -> None:
        if not callable(getattr(retriever, "ainvoke", None)):
            raise InvalidArgumentType(
                f"retriever must be a LangChain retriever (a Runnable), got "
                f"{type(retriever).__name__}"
            )
        if not isinstance(name, str) or not name:
            raise InvalidArgument(f"name must be a non-empty str, got {name!r}")
        self.retriever = retriever
        self.name = name
        self._executor = executor
        self._sync_only = _is_sync_only(retriever)

    def __repr__(self) -> str:
        return f"LangChainMemory({type(self.retriever).__name__}, name={self.name!r})"

    async def query(
        self,
        query: str,
        *,
        k: int,
        ctx: Ctx,
        where: dict[str, Any] | None = None,
    ) -> list[MemoryItem]:
        query = check_query(query)
        k = check_k(k)
        where = check_where(where) or None
        ctx = check_ctx(ctx)
        docs = await self._fetch(query, k, ctx, where)
        stamp = scope_stamp(ctx.scope)
        items: list[MemoryItem] = []
        for doc in docs:
            raw = doc.metadata
            if (ORG_KEY in raw or DOMAIN_KEY in raw) and not in_scope(raw, stamp):
                continue  # written by LangChainVectorPort for another tenant
            item = from_document(doc, source=self.name)
            chunk_id = raw.get(CHUNK_KEY)
            if isinstance(chunk_id, str) and chunk_id:
                item = dataclasses.replace(item, id=chunk_id)
            if where is None or matches_where(item.metadata, where):
                items.append(item)
                if len(items) == k:
                    break
        return items

    async def write(self, items: Iterable[MemoryItem], *, ctx: Ctx) -> None:
        """No-op: a retriever has nowhere to put items (see ``accepts_writes``)."""
        return None

    async def _fetch(
        self, query: str, k: int, ctx: Ctx, where: dict[str, Any] | None
    ) -> list[Document]:
        retriever = self.retriever
        # A nested agentkit stack takes k, where and the tenant as they are.
        from agentkit_langchain.retriever import AgentkitRetriever

        if isinstance(retriever, AgentkitRetriever):
            return await retriever.ainvoke(
                query, {"configurable": {"agentkit_ctx": ctx}}, k=k, where=where
            )
        target = _with_limit(retriever, k, where)
        if not self._sync_only:
            return list(await target.ainvoke(query))
        loop = asyncio.get_running_loop()
        context = contextvars.copy_context()
        call: Callable[[], list[Document]] = functools.partial(
            context.run, target.invoke, query
        )
        pool = self._executor or blocking_pool()
        return list(await loop.run_in_executor(pool, call))


def _is_sync_only(retriever: Any) -> bool:
    """True when the retriever's async path is LangChain's default thread hand-off."""
    if not isinstance(retriever, BaseRetriever):
        return False
    method = type(retriever)._aget_relevant_documents
    return method is BaseRetriever._aget_relevant_documents or (
        "__init_subclass__" in getattr(method, "__qualname__", "")
    )


def _with_limit(retriever: Any, k: int, where: dict[str, Any] | None) -> Any:
    """A per-call copy asking for ``k`` (more when ``where`` is re-checked only)."""
    if isinstance(retriever, VectorStoreRetriever):
        kwargs = dict(retriever.search_kwargs)
        pushed = False
        if where is not None and isinstance(retriever.vectorstore, InMemoryVectorStore):
            kwargs["filter"] = _combine(kwargs.get("filter"), where)
            pushed = True
        fetch = k if where is None or pushed else k * _OVERFETCH
        kwargs["k"] = fetch
        if retriever.search_type == "mmr":
            kwargs["fetch_k"] = max(int(kwargs.get("fetch_k", 20)), fetch)
        return retriever.model_copy(update={"search_kwargs": kwargs})
    fetch = k if where is None else k * _OVERFETCH
    fields = getattr(type(retriever), "model_fields", {})
    for field in ("k", "top_k"):
        if field in fields and isinstance(getattr(retriever, field, None), int):
            return retriever.model_copy(update={field: fetch})
    if "search_kwargs" in fields and isinstance(getattr(retriever, "search_kwargs", None), dict):
        return retriever.model_copy(
            update={"search_kwargs": {**retriever.search_kwargs, "k": fetch}}
        )
    return retriever


def _combine(existing: Any, where: dict[str, Any]) -> Callable[[Document], bool]:
    """InMemoryVectorStore filters are callables; keep the user's and add ours."""

    def keep(doc: Document) -> bool:
        return matches_where(doc.metadata, where)

    if existing is None:
        return keep
    if not callable(existing):
        raise InvalidArgumentType(
            f"InMemoryVectorStore filter must be callable, got {type(existing).__name__}"
        )

    def both(doc: Document) -> bool:
        return bool(existing(doc)) and keep(doc)

    return both
