"""LlamaIndexMemory: any LlamaIndex retriever as a read-only MemorySource."""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Iterable
from typing import Any

from llama_index.core.indices.vector_store.retrievers import VectorIndexRetriever
from llama_index.core.retrievers import BaseRetriever
from llama_index.core.schema import NodeWithScore

from agentkit.interop import run_blocking
from agentkit.kernel import Ctx
from agentkit.kernel.errors import InvalidArgument, InvalidArgumentType
from agentkit.kernel.validate import check_k, check_query, check_where
from agentkit.state.memory import MemoryItem
from agentkit.vector.port import matches_where
from agentkit_llamaindex._filters import (
    has_empty_any_of,
    merge_filters,
    query_bundle,
    where_filters,
)
from agentkit_llamaindex.mapping import from_node
from agentkit_llamaindex.retriever import AgentkitRetriever
from agentkit_llamaindex.vectorstore import (
    CHUNK_KEY,
    DOMAIN_KEY,
    ORG_KEY,
    PORT_KEYS,
    scope_bucket,
)

__all__ = ["LlamaIndexMemory"]

# When ``where`` cannot be pushed down, ask for this many times ``k`` so the re-check
# still has something to keep.
OVERFETCH = 4


def _native_async(retriever: BaseRetriever) -> bool:
    """LlamaIndex's default ``_aretrieve`` runs the sync path on the loop; spot it."""
    return type(retriever)._aretrieve is not BaseRetriever._aretrieve


def _vector_index_call(
    r: VectorIndexRetriever, k: int, where: dict[str, Any] | None
) -> BaseRetriever:
    # Rebuilt per query rather than copied: as_retriever() snapshots the index's node
    # ids at creation, so a copy would never see nodes inserted since.
    extra, complete = where_filters(where)
    filters, merged = merge_filters(r._filters, extra)
    top_k = k if complete and merged else k * OVERFETCH
    index = r._index
    node_ids = r._node_ids
    if node_ids is not None:
        node_ids = list(index.index_struct.nodes_dict.values())
    return VectorIndexRetriever(
        index,
        similarity_top_k=top_k,
        vector_store_query_mode=r._vector_store_query_mode,
        filters=filters,
        alpha=r._alpha,
        node_ids=node_ids,
        doc_ids=r._doc_ids,
        sparse_top_k=r._sparse_top_k,
        hybrid_top_k=r._hybrid_top_k,
        callback_manager=r.callback_manager,
        object_map=r.object_map,
        embed_model=r._embed_model,
        verbose=r._verbose,
        vector_store_kwargs=r._kwargs,
    )


def _bm25_call(r: Any, k: int, where: dict[str, Any] | None) -> Any | None:
    # BM25Retriever takes filters only at construction, as a weight mask over its
    # corpus. The mask only zeroes scores: masked nodes still come back (at 0.0) when
    # k exceeds the matches, which is why every result is re-checked afterwards.
    corpus = r.corpus
    clone = copy.copy(r)
    clone.similarity_top_k = min(k, len(corpus))
    if where:
        mask = [int(matches_where(entry, where)) for entry in corpus]
        if r.corpus_weight_mask:
            mask = [a & int(bool(b)) for a, b in zip(mask, r.corpus_weight_mask, strict=True)]
        if not any(mask):
            return None
        clone.corpus_weight_mask = mask
    return clone


def _per_call(r: BaseRetriever, k: int, where: dict[str, Any] | None) -> BaseRetriever | None:
    """A retriever for this one query with ``k`` (and ``where``) pushed down.

    Never the user's object: a copy or a rebuild, so concurrent queries with different
    ``k`` cannot see each other's settings. ``None`` means nothing can match.
    """
    if type(r) is VectorIndexRetriever:
        return _vector_index_call(r, k, where)
    if isinstance(r, AgentkitRetriever):
        # Its own where and tenant stay as bound; only k is ours to set.
        return r.bind(k=k if not where else k * OVERFETCH)
    if hasattr(r, "bm25") and isinstance(getattr(r, "corpus", None), list):
        call: BaseRetriever | None = _bm25_call(r, k, where)
        return call
    top_k = k if not where else k * OVERFETCH
    for attr in ("similarity_top_k", "_similarity_top_k"):
        current = getattr(r, attr, None)
        if isinstance(current, int) and not isinstance(current, bool):
            clone = copy.copy(r)
            try:
                setattr(clone, attr, top_k)
            except (AttributeError, TypeError, ValueError):
                continue  # read-only or validated: ask as configured, cut afterwards
            return clone
    return r


def _tenant_view(item: MemoryItem, bucket: tuple[str, str]) -> MemoryItem | None:
    """Records a LlamaIndexVectorPort wrote for a tenant stay that tenant's.

    An index can hold both the app's shared corpus and tenant facts written through
    the port. Shared nodes pass; a tenant node passes only for its own scope, and
    comes back as the port would return it: its chunk id, no scope keys.
    """
    meta = item.metadata
    if ORG_KEY not in meta and DOMAIN_KEY not in meta:
        return item
    if (meta.get(ORG_KEY), meta.get(DOMAIN_KEY)) != bucket:
        return None
    rest = {key: value for key, value in meta.items() if key not in PORT_KEYS}
    chunk_id = meta.get(CHUNK_KEY)
    return dataclasses.replace(
        item, metadata=rest, id=chunk_id if isinstance(chunk_id, str) else item.id
    )


class LlamaIndexMemory:
    """A LlamaIndex retriever queried as an agentkit MemorySource.

    ``k`` and ``where`` are pushed down where the retriever can take them (a per-call
    copy; yours is never mutated), and every result is re-checked against ``where`` and
    cut to ``k`` because some LlamaIndex filters are soft. Sync-only retrievers run on
    the bridge's thread pool so a CompositeMemory over several of them is concurrent;
    retrievers with their own ``_aretrieve`` are awaited.

    Nodes a ``LlamaIndexVectorPort`` wrote for a tenant are returned only to that
    tenant (``ctx.scope``); everything else in the index is treated as shared. Scope
    any other per-tenant data with ``where`` or wrap this source in ``ScopedMemory``.
    Read-only: writes go through ``VectorMemory(LlamaIndexVectorPort(index))``.
    """

    accepts_writes = False

    def __init__(self, retriever: BaseRetriever, name: str = "llamaindex") -> None:
        if not isinstance(retriever, BaseRetriever):
            raise InvalidArgumentType(
                f"retriever must be a llama_index BaseRetriever, got {type(retriever).__name__}"
            )
        if not isinstance(name, str) or not name:
            raise InvalidArgument(f"name must be a non-empty str, got {name!r}")
        self.retriever = retriever
        self.name = name
        self._native = _native_async(retriever)

    def __repr__(self) -> str:
        return f"LlamaIndexMemory({type(self.retriever).__name__}, name={self.name!r})"

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
        where = check_where(where)
        if has_empty_any_of(where):
            return []
        call = _per_call(self.retriever, k, where)
        if call is None:
            return []
        nodes: list[NodeWithScore]
        bundle = query_bundle(query)
        if self._native:
            nodes = await call.aretrieve(bundle)
        else:
            nodes = await run_blocking(call.retrieve, bundle)
        bucket = scope_bucket(ctx.scope)
        items: list[MemoryItem] = []
        for nws in nodes:
            item = _tenant_view(from_node(nws, source=self.name), bucket)
            if item is None or (where and not matches_where(item.metadata, where)):
                continue
            items.append(item)
            if len(items) == k:
                break
        return items

    async def write(self, items: Iterable[MemoryItem], *, ctx: Ctx) -> None:
        """No-op: a retriever has nowhere to write (see ``accepts_writes``)."""
