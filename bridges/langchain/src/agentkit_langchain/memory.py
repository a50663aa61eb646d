"""LangChainMemory: any LangChain retriever as a read-only agentkit MemorySource."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import dataclasses
import functools
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.vectorstores import VectorStoreRetriever

from agentkit.interop import (
    CHUNK_KEY,
    DOMAIN_KEY,
    ID_PREFIX,
    KEYS_KEY,
    ORG_KEY,
    blocking_pool,
    chunk_id_of,
    dialect_for,
    in_scope,
    merge_filter,
    strip_stamps,
    where_conditions,
    widen,
)
from agentkit.kernel.ctx import Ctx, Scope
from agentkit.kernel.errors import InvalidArgument, InvalidArgumentType
from agentkit.kernel.validate import check_ctx, check_k, check_metadata_where, check_query
from agentkit.observability import traced_memory
from agentkit.state.memory import MemoryItem
from agentkit.vector.port import matches_where
from agentkit_langchain._chroma import exact_search
from agentkit_langchain.mapping import from_document

# FAISS' own default number of candidates it filters; never ask a post-filtering
# store to look at fewer than the user's retriever would.
_FETCH_K = 20


@traced_memory(kind="client")
class LangChainMemory:
    """Recall from a LangChain retriever, with agentkit's ``k`` and ``where`` honoured.

    ``k`` is pushed down on a per-call copy (``search_kwargs["k"]`` of a
    VectorStoreRetriever, a ``k`` or ``top_k`` field). ``where`` is pushed down to
    every store with a filter dialect (``agentkit.interop``: InMemoryVectorStore,
    Chroma, Qdrant, FAISS, PGVector), ANDed with the retriever's own ``filter`` so its
    restrictions stay, and every result is re-checked, so a filter is never silently
    dropped. When the re-check leaves fewer than ``k`` (a filter the store could not
    take, FAISS filtering only its top ``fetch_k``), the retriever is asked again for
    more, until ``k`` items or no more: a matching document ranked lower comes back.
    Chroma's index is approximate and may answer short while more match (many
    identical vectors); then the matching records are ranked exactly instead, so a
    short answer is never taken for "no more" (``agentkit_langchain._chroma``).
    A retriever knows nothing of tenants, so its documents are shared, except
    documents stamped with a tenant by LangChainVectorPort: those reach only that
    tenant. A wrapped ``AgentkitRetriever`` gets the caller's ``ctx`` itself.

    A retriever that only implements the sync method runs on the interop layer's
    thread pool, so a composite over several of them is concurrent. Writes are
    not this adapter's: ``accepts_writes`` is False and ``write`` does nothing.

    Args:
        retriever: Any LangChain retriever (a ``Runnable`` with ``invoke``).
        name: The name items and traces carry.
        executor: Where a sync-only retriever runs; ``None`` uses the interop layer's
            shared pool.

    Raises:
        InvalidArgumentType: ``retriever`` is not a LangChain retriever.
        InvalidArgument: An empty ``name``.
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
        """Ask the retriever with ``k`` and ``where`` pushed down, then re-check every document.

        Documents stamped for another tenant, or failing ``where``, are dropped and the
        retriever is asked for more until ``k`` are kept or it runs out; a nested
        ``AgentkitRetriever`` receives the caller's ``ctx`` unchanged.
        """
        query = check_query(query)
        k = check_k(k)
        where = check_metadata_where(where) or None
        ctx = check_ctx(ctx)
        scope = ctx.scope
        retriever = self.retriever
        from agentkit_langchain.retriever import AgentkitRetriever

        if isinstance(retriever, AgentkitRetriever):
            # A nested agentkit stack takes k, where and the caller's very ctx.
            docs = await retriever.ainvoke(
                query, {"configurable": {"agentkit_ctx": ctx}}, k=k, where=where
            )
            return self._kept(docs, scope, where)[:k]
        plan = _plan(retriever, k, where)
        if plan is None:
            return []  # an empty any-of matches nothing

        async def fetch(n: int) -> list[MemoryItem | None]:
            docs = await self._invoke(plan.at(n), query)
            if len(docs) < n and plan.exact is not None:
                # An approximate store's short answer (Chroma), filtered or not: when
                # more records match than came back, rank those records exactly.
                exact = await plan.exact(query, n, len(docs))
                if exact is not None:
                    docs = exact
            # None marks a dropped document, so widen still sees how many came back.
            return [self._item(doc, scope, where) for doc in docs]

        def keep(item: MemoryItem | None) -> bool:
            return item is not None

        found = await widen(fetch, keep, k, first=plan.first, total=plan.total)
        return [item for item in found if item is not None]

    async def write(self, items: Iterable[MemoryItem], *, ctx: Ctx) -> None:
        """No-op: a retriever has nowhere to put items (see ``accepts_writes``)."""
        return None

    def _kept(
        self, docs: list[Document], scope: Scope, where: dict[str, Any] | None
    ) -> list[MemoryItem]:
        return [item for doc in docs if (item := self._item(doc, scope, where)) is not None]

    def _item(
        self, doc: Document, scope: Scope, where: dict[str, Any] | None
    ) -> MemoryItem | None:
        """The item for ``doc``, or None when the caller may not, or did not ask to, see it."""
        raw = doc.metadata
        if (ORG_KEY in raw or DOMAIN_KEY in raw) and not in_scope(raw, scope):
            return None  # written by LangChainVectorPort for another tenant
        item = from_document(doc, source=self.name)
        if CHUNK_KEY in raw or (doc.id or "").startswith(ID_PREFIX):
            chunk_id = chunk_id_of(doc.id, raw)
            if chunk_id is not None and chunk_id != item.id:
                item = dataclasses.replace(item, id=chunk_id)
        if KEYS_KEY in raw:  # written by LangChainVectorPort to a store it did not know
            item = dataclasses.replace(item, metadata=strip_stamps(raw))
        if where is not None and not matches_where(item.metadata, where):
            return None
        return item

    async def _invoke(self, target: Any, query: str) -> list[Document]:
        if not self._sync_only:
            return list(await target.ainvoke(query))
        loop = asyncio.get_running_loop()
        context = contextvars.copy_context()
        call: Callable[[], list[Document]] = functools.partial(
            context.run, target.invoke, query
        )
        pool = self._executor or blocking_pool()
        return list(await loop.run_in_executor(pool, call))


@dataclasses.dataclass(frozen=True, slots=True)
class _Plan:
    """How to ask the retriever for ``n`` results, and when it has no more."""

    at: Callable[[int], Any]
    first: int
    total: int | None = None
    exact: Callable[[str, int, int], Awaitable[list[Document] | None]] | None = None


def _plan(retriever: Any, k: int, where: dict[str, Any] | None) -> _Plan | None:
    """Per-call copies of ``retriever`` asking for ``n`` (None: ``where`` matches nothing)."""
    if isinstance(retriever, VectorStoreRetriever):
        return _vector_plan(retriever, k, where)
    if where is not None and where_conditions(where) is None:
        return None
    fields = getattr(type(retriever), "model_fields", {})
    for field in ("k", "top_k"):
        if field in fields and isinstance(getattr(retriever, field, None), int):
            return _Plan(functools.partial(_with_field, retriever, field), k)
    if "search_kwargs" in fields and isinstance(getattr(retriever, "search_kwargs", None), dict):
        return _Plan(
            lambda n: retriever.model_copy(
                update={"search_kwargs": {**retriever.search_kwargs, "k": n}}
            ),
            k,
        )
    return _Plan(lambda n: retriever, k, total=0)  # no knob: one call, whatever it gives


def _with_field(retriever: Any, field: str, n: int) -> Any:
    return retriever.model_copy(update={field: n})


def _vector_plan(
    retriever: VectorStoreRetriever, k: int, where: dict[str, Any] | None
) -> _Plan | None:
    own = dict(retriever.search_kwargs)
    store = retriever.vectorstore
    dialect = dialect_for(store)
    store_filter = own.get("filter")
    if where is not None:
        conds = where_conditions(where)
        if conds is None:
            return None
        if dialect is not None:
            store_filter = merge_filter(dialect, store_filter, conds)
    post_filter = dialect is not None and dialect.fetch_k and store_filter is not None
    mmr = retriever.search_type == "mmr"
    first = k
    total = None
    if post_filter or mmr:
        own_fetch_k = own.get("fetch_k", _FETCH_K)
        if post_filter:
            first = max(k, own_fetch_k if isinstance(own_fetch_k, int) else _FETCH_K)
            size = dialect.size if dialect is not None else None
            total = size(store) if size is not None else None

    def at(n: int) -> Any:
        kwargs = dict(own)
        kwargs["k"] = n
        if store_filter is not None:
            kwargs["filter"] = store_filter
        if post_filter or mmr:
            given = own.get("fetch_k", _FETCH_K)
            kwargs["fetch_k"] = max(given if isinstance(given, int) else _FETCH_K, n)
        return retriever.model_copy(update={"search_kwargs": kwargs})

    exact = None
    plain = retriever.search_type == "similarity" and set(own) <= {"k", "filter"}
    if dialect is not None and dialect.approximate and plain:
        # Only a plain top-n: a threshold, MMR or store-specific argument (Chroma's
        # where_document) is not something an exact ranking here could reproduce.
        exact = functools.partial(_exact, retriever.vectorstore, store_filter)
    return _Plan(at, first, total, exact)


async def _exact(store: Any, where: Any, query: str, n: int, got: int) -> list[Document] | None:
    """The store's top ``n`` for ``where``, ranked exactly, or None when its short answer
    of ``got`` documents already held every match (see ``agentkit_langchain._chroma``)."""
    found = await exact_search(store, query, n, where, got)
    return None if found is None else [doc for doc, _ in found.hits]


def _is_sync_only(retriever: Any) -> bool:
    """True when the retriever's async path is LangChain's default thread hand-off.

    ``_aget_relevant_documents`` is the hook ``BaseRetriever``'s documentation tells
    retriever implementers to override with a native async path, so it is part of the
    public subclassing contract; it is looked up on the class, never called. A
    retriever without one keeps LangChain's: the base class's method or, for a legacy
    ``_get_relevant_documents`` without ``run_manager``, the hand-off that
    ``BaseRetriever`` installs for it. Both are defined in ``langchain_core.retrievers``,
    where no retriever's own code lives, so that is what is checked.
    """
    if not isinstance(retriever, BaseRetriever):
        return False
    method = type(retriever)._aget_relevant_documents
    return getattr(method, "__module__", None) == BaseRetriever.__module__

