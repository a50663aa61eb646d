"""LlamaIndexVectorPort: a LlamaIndex vector index as an agentkit VectorPort.

So ``VectorMemory``'s write semantics (upsert by id, provenance-checked ids) hold on
the index a LlamaIndex app already has. Tenancy on a shared store works by writing
the scope into each node's metadata, filtering on it in every search and re-checking
it on the way out; the store-level node id is derived from (scope, chunk id), so two
tenants may both own a chunk "1" without touching each other's.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from llama_index.core import StorageContext, VectorStoreIndex
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.indices.utils import embed_nodes
from llama_index.core.indices.vector_store.retrievers import VectorIndexRetriever
from llama_index.core.schema import MetadataMode, NodeWithScore, TextNode
from llama_index.core.vector_stores.types import (
    BasePydanticVectorStore,
    FilterCondition,
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
)

from agentkit.interop import run_blocking
from agentkit.kernel import Scope
from agentkit.kernel.errors import InvalidArgument, InvalidArgumentType, StoreError
from agentkit.kernel.threads import CommitGate, run_gated
from agentkit.kernel.validate import check_ids, check_k, check_query, check_where
from agentkit.vector.port import Chunk, check_chunks, matches_where
from agentkit_llamaindex._filters import has_empty_any_of, query_bundle, where_filters
from agentkit_llamaindex._locks import ReadWriteLock
from agentkit_llamaindex.mapping import RESERVED_PREFIX, STAMP_KEYS

__all__ = ["LlamaIndexVectorPort"]

ORG_KEY = "agentkit_org_id"
DOMAIN_KEY = "agentkit_domain_id"
CHUNK_KEY = "agentkit_chunk_id"
PORT_KEYS: tuple[str, ...] = (ORG_KEY, DOMAIN_KEY, CHUNK_KEY)
_HIDDEN = [*PORT_KEYS, *STAMP_KEYS]
_NAMESPACE = uuid.UUID("6f1c9a52-3b7e-4f0a-9d2e-a9c1b4e7d310")
_OVERFETCH = 4


def scope_bucket(scope: Scope) -> tuple[str, str]:
    # "" rather than None: LlamaIndex filters never match a None metadata value.
    if not isinstance(scope, Scope):
        raise InvalidArgumentType(f"scope must be a Scope, got {type(scope).__name__}")
    return scope.org_id or "", scope.domain_id or ""


def _node_id(bucket: tuple[str, str], chunk_id: str) -> str:
    # A UUID because several LlamaIndex stores (Qdrant, pgvector tables) insist on one.
    return str(uuid.uuid5(_NAMESPACE, "\x1f".join((*bucket, chunk_id))))


def _check_chunks(chunks: object) -> list[Chunk]:
    out = check_chunks(chunks)
    for chunk in out:
        for key in chunk.metadata:
            if not isinstance(key, str):
                raise InvalidArgumentType(f"chunk metadata keys must be str, got {key!r}")
            if key.startswith(RESERVED_PREFIX):
                raise InvalidArgument(
                    f"chunk {chunk.id!r}: metadata key {key!r} is reserved for the bridge"
                )
    return out


class LlamaIndexVectorPort:
    """A ``VectorStoreIndex`` (its vector store, docstore and embed model) as a VectorPort.

    Reads and writes go through the index rather than the bare store because the
    simple store keeps only ids and vectors; the text lives in the docstore. The
    embedding sees the chunk text only; the LLM sees user metadata but never the
    bridge's keys. Scores are the store's similarities, higher is better.

    A store that does not honour metadata filters cannot keep tenants apart and is
    refused with ``StoreError`` the first time it returns a row outside the scope.
    """

    def __init__(self, index: VectorStoreIndex) -> None:
        if not isinstance(index, VectorStoreIndex):
            raise InvalidArgumentType(
                f"index must be a llama_index VectorStoreIndex, got {type(index).__name__}"
            )
        self.index = index
        self._lock = ReadWriteLock()  # a search never sees a half-done replace

    @classmethod
    def from_vector_store(
        cls,
        store: BasePydanticVectorStore,
        *,
        embed_model: BaseEmbedding | None = None,
    ) -> LlamaIndexVectorPort:
        """Wrap a bare vector store; ``embed_model=None`` means ``Settings.embed_model``.

        A store that keeps no text (the simple store) gets the index's docstore for it,
        so only what is written through this port can be read back.
        """
        if not isinstance(store, BasePydanticVectorStore):
            raise InvalidArgumentType(
                f"store must be a llama_index vector store, got {type(store).__name__}"
            )
        if embed_model is not None and not isinstance(embed_model, BaseEmbedding):
            raise InvalidArgumentType(
                f"embed_model must be a BaseEmbedding, got {type(embed_model).__name__}"
            )
        storage = StorageContext.from_defaults(vector_store=store)
        index = VectorStoreIndex(nodes=[], storage_context=storage, embed_model=embed_model)
        return cls(index)

    @property
    def vector_store(self) -> BasePydanticVectorStore:
        return self.index.vector_store

    def __repr__(self) -> str:
        return f"LlamaIndexVectorPort({type(self.vector_store).__name__})"

    # -- writes -------------------------------------------------------------------

    async def upsert(self, chunks: Sequence[Chunk], *, scope: Scope) -> None:
        """Replace by id. A caller that gives up while the embedding runs changes nothing.

        The worker thread embeds first, then asks a gate before touching the index:
        once the caller has timed out or been cancelled it stops there, so a write
        reported failed never lands later. Past the gate the (short) index update is
        waited for and its real outcome reported.
        """
        batch = _check_chunks(chunks)
        bucket = scope_bucket(scope)
        if not batch:
            return
        latest: dict[str, Chunk] = {c.id: c for c in batch}  # last write of an id wins
        nodes = [self._to_node(bucket, c) for c in latest.values()]
        await run_gated(lambda gate: run_blocking(self._replace, nodes, gate))

    async def delete(self, ids: Sequence[str], *, scope: Scope) -> None:
        """Remove by id; gated like :meth:`upsert`, so a given-up delete removes nothing."""
        wanted = check_ids(ids)
        bucket = scope_bucket(scope)
        if not wanted:
            return  # some stores read an empty id list as "everything"
        node_ids = list(dict.fromkeys(_node_id(bucket, i) for i in wanted))
        await run_gated(lambda gate: run_blocking(self._delete_locked, node_ids, gate))

    def _to_node(self, bucket: tuple[str, str], chunk: Chunk) -> TextNode:
        meta: dict[str, Any] = dict(chunk.metadata)
        meta[ORG_KEY], meta[DOMAIN_KEY] = bucket
        meta[CHUNK_KEY] = chunk.id
        return TextNode(
            id_=_node_id(bucket, chunk.id),
            text=chunk.text,
            metadata=meta,
            excluded_embed_metadata_keys=list(meta),
            excluded_llm_metadata_keys=list(_HIDDEN),
        )

    def _replace(self, nodes: list[TextNode], gate: CommitGate | None = None) -> None:
        # Embed up front (the slow, side-effect-free part), so the gate sits right
        # before the first change to the index; insert_nodes keeps these vectors.
        vectors = embed_nodes(nodes, self.index._embed_model)
        for node in nodes:
            node.embedding = vectors[node.node_id]
        with self._lock.write():
            if gate is not None and not gate.enter():
                return  # the caller gave up and reported this write failed
            self._delete(n.node_id for n in nodes)
            self.index.insert_nodes(nodes)

    def _delete_locked(self, node_ids: list[str], gate: CommitGate | None = None) -> None:
        with self._lock.write():
            if gate is not None and not gate.enter():
                return
            self._delete(node_ids)

    def _delete(self, node_ids: Any) -> None:
        index = self.index
        ids = list(node_ids)
        if not index.vector_store.stores_text:
            # The index struct raises on unknown ids; only delete what it holds.
            present = index.index_struct.nodes_dict
            ids = [i for i in ids if i in present]
        if ids:
            index.delete_nodes(ids, delete_from_docstore=True)

    # -- reads --------------------------------------------------------------------

    async def search(
        self,
        query: str,
        *,
        k: int,
        scope: Scope,
        where: Mapping[str, Any] | None = None,
    ) -> list[tuple[float, Chunk]]:
        query = check_query(query)
        k = check_k(k)
        wanted = check_where(where)
        bucket = scope_bucket(scope)
        if has_empty_any_of(wanted):
            return []
        extra, complete = where_filters(wanted)
        filters = MetadataFilters(
            filters=[
                MetadataFilter(key=ORG_KEY, value=bucket[0], operator=FilterOperator.EQ),
                MetadataFilter(key=DOMAIN_KEY, value=bucket[1], operator=FilterOperator.EQ),
                *extra,
            ],
            condition=FilterCondition.AND,
        )
        top_k = k if complete else k * _OVERFETCH
        nodes = await run_blocking(self._retrieve, query, top_k, filters)
        out: list[tuple[float, Chunk]] = []
        for nws in nodes:
            meta = dict(nws.node.metadata)
            if (meta.get(ORG_KEY), meta.get(DOMAIN_KEY)) != bucket:
                raise StoreError(
                    f"{type(self.vector_store).__name__} returned a record outside the "
                    "requested scope: it does not honour metadata filters, so it cannot "
                    "keep tenants apart; use a store that supports filtering"
                )
            chunk_id = meta.pop(CHUNK_KEY, None)
            meta.pop(ORG_KEY, None)
            meta.pop(DOMAIN_KEY, None)
            if not isinstance(chunk_id, str) or not matches_where(meta, wanted):
                continue
            text = nws.node.get_content(metadata_mode=MetadataMode.NONE)
            # A query with no features (say, only punctuation) has a zero vector and
            # cosine is 0/0: no evidence of similarity, so 0.0 rather than NaN.
            score = float(nws.score) if nws.score is not None else 0.0
            if not math.isfinite(score):
                score = 0.0
            out.append((score, Chunk(chunk_id, text, meta)))
            if len(out) == k:
                break
        return out

    def _retrieve(self, query: str, top_k: int, filters: MetadataFilters) -> list[NodeWithScore]:
        index = self.index
        # node_ids as as_retriever() would pass them, but current: a retriever built
        # once would never see later inserts in a store that keeps no text.
        node_ids = (
            None if index.vector_store.stores_text else list(index.index_struct.nodes_dict.values())
        )
        retriever = VectorIndexRetriever(
            index,
            similarity_top_k=top_k,
            filters=filters,
            node_ids=node_ids,
            callback_manager=index._callback_manager,
        )
        try:
            with self._lock.read():
                return retriever.retrieve(query_bundle(query))
        except (NotImplementedError, ValueError) as exc:
            if "filter" in str(exc).lower():
                raise StoreError(
                    f"{type(self.vector_store).__name__} cannot filter on metadata, so it "
                    f"cannot keep tenants apart: {exc}"
                ) from exc
            raise
