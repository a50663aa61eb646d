"""AgentkitVectorStore: agentkit's own stores behind LlamaIndex's vector-store interface.

The one-line migration: ``StorageContext.from_defaults(vector_store=...)``,
``VectorStoreIndex(nodes, storage_context=...)`` and
``VectorStoreIndex.from_vector_store(...)`` keep working with only the store class
changed, and the nodes land in an agentkit store (the durable SQLite file by default),
where agentkit memory, the CLI and the next process read them.

The opposite direction, a LlamaIndex store under agentkit, is ``LlamaIndexVectorPort``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Coroutine, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt
from llama_index.core import Settings
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.bridge.pydantic import PrivateAttr
from llama_index.core.schema import BaseNode, MetadataMode, TextNode
from llama_index.core.vector_stores.types import (
    BasePydanticVectorStore,
    MetadataFilters,
    VectorStoreQuery,
    VectorStoreQueryMode,
    VectorStoreQueryResult,
)
from llama_index.core.vector_stores.utils import metadata_dict_to_node, node_to_metadata_dict

from agentkit.interop import StoreView, model_rows, run_sync
from agentkit.kernel.ctx import Ctx, Scope
from agentkit.kernel.errors import (
    InvalidArgument,
    InvalidArgumentType,
    UnsupportedOperation,
)
from agentkit.kernel.validate import check_ids, check_k, check_query
from agentkit.state.memory import HYBRID_DEPTH, HybridMemory
from agentkit.vector.mmr import check_lambda, mmr_select, query_vector
from agentkit.vector.port import Chunk, Embedder, VectorPort
from agentkit_llamaindex._node_filters import predicate, pushdown
from agentkit_llamaindex.embedding import AgentkitEmbedding

__all__ = ["AgentkitVectorStore", "LlamaIndexEmbedder"]

_T = TypeVar("_T")
# LlamaIndex's own keys in a stored record (node_to_metadata_dict writes them).
_NODE_CONTENT = "_node_content"
_REF_DOC_KEY = "ref_doc_id"
_PAGE = 1000
_Scored = list[tuple[float, Chunk]]
_Search = Callable[[int, dict[str, Any] | None], Coroutine[Any, Any, _Scored]]
_LEXICAL_MODES = (VectorStoreQueryMode.TEXT_SEARCH, VectorStoreQueryMode.SPARSE)
# An MMR query picks from this many times similarity_top_k nearest (LlamaIndex's Chroma
# and Postgres stores' default mmr_prefetch_factor).
_MMR_PREFETCH_FACTOR = 4.0


class LlamaIndexEmbedder:
    """A LlamaIndex embed model as an agentkit ``Embedder`` (unit rows, fixed width).

    ``dim`` is read from one probe embedding unless given. ``model_name`` names the
    model, so a SQLite store written with one refuses to be reopened with another.

    Args:
        embed_model: The LlamaIndex embed model to call.
        dim: The width of its vectors; ``None`` embeds one probe text to find out.

    Raises:
        InvalidArgumentType: ``embed_model`` is not a LlamaIndex ``BaseEmbedding``.
        InvalidArgument: A ``dim`` that is not a positive int.
    """

    def __init__(self, embed_model: BaseEmbedding, *, dim: int | None = None) -> None:
        if not isinstance(embed_model, BaseEmbedding):
            raise InvalidArgumentType(
                f"embed_model must be a LlamaIndex BaseEmbedding, got {type(embed_model).__name__}"
            )
        if dim is None:
            dim = len(embed_model.get_text_embedding("dimension probe"))
        if isinstance(dim, bool) or not isinstance(dim, int) or dim < 1:
            raise InvalidArgument(f"dim must be a positive int, got {dim!r}")
        self.embed_model = embed_model
        self.dim = dim
        kind = type(embed_model)
        self.model_name = (
            f"llamaindex:{kind.__module__}.{kind.__qualname__}/{embed_model.model_name}"
        )

    def __repr__(self) -> str:
        return f"LlamaIndexEmbedder({self.model_name!r}, dim={self.dim})"

    async def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Embed documents through ``aget_text_embedding_batch``, as unit vectors of width ``dim``.

        Rows are normalised so cosine scores match agentkit's own embedders; an empty batch
        never calls the model.
        """
        if not texts:
            return model_rows([], count=0, dim=self.dim, model=self.model_name)
        rows = await self.embed_model.aget_text_embedding_batch(list(texts))
        return model_rows(rows, count=len(texts), dim=self.dim, model=self.model_name)

    async def embed_query(self, text: str) -> npt.NDArray[np.float32]:
        """Queries through the model's query embedding (instruction models differ)."""
        row = await self.embed_model.aget_query_embedding(text)
        vector: npt.NDArray[np.float32] = model_rows(
            [row], count=1, dim=self.dim, model=self.model_name
        )[0]
        return vector


class AgentkitVectorStore(BasePydanticVectorStore):
    """A LlamaIndex vector store over any agentkit ``VectorPort``, inside one scope.

    ``AgentkitVectorStore()`` opens the SQLite store at ``path`` (default
    ``$AGENTKIT_STORE`` or ``.agentkit/memory.db``, the CLI's) embedding with
    ``embed_model``, else ``Settings.embed_model`` — the model the index itself would
    use (an ``AgentkitEmbedding`` is unwrapped to its agentkit embedder, so the file
    records that embedder and the CLI can read it). ``AgentkitVectorStore(store)`` wraps
    a store you built (in-memory, SQLite, Postgres), which embeds with its own embedder.

    The store embeds: node text on ``add``, the query text on ``query``
    (``is_embedding_query`` is False, so retrievers send the text and the store's
    model is the only one that ranks). A query that comes with an embedding only is
    searched by that vector. The vectors an index computes for its nodes before ``add``
    are not used (the agentkit stores embed their own text), so ingest embeds twice.
    Nodes keep id, text, metadata and relationships (LlamaIndex's
    ``node_to_metadata_dict``); records written by other agentkit code come
    back as plain ``TextNode``s. Every call sees only ``scope`` (default: the unscoped
    bucket); ``bind(scope)`` gives a view of another tenant over the same store.

    ``MetadataFilters`` are honoured with LlamaIndex's operators and nesting: equality and
    ``in`` under AND are pushed down to the store, and every hit is re-checked, the
    fetch widening until ``similarity_top_k`` pass. Modes: default (cosine),
    ``text_search``/``sparse`` (the store's word index), ``hybrid`` (reciprocal rank
    fusion of both lists, ``alpha`` weighting the dense one, default 0.5) and ``mmr``
    (agentkit's one maximal-marginal-relevance rule, shared with the LangChain store's
    ``max_marginal_relevance_search``: ``mmr_threshold`` from the query or the
    retriever's ``vector_store_kwargs`` weighs relevance against novelty, default 0.5,
    over ``mmr_prefetch_k`` or ``mmr_prefetch_factor`` (default 4) times top-k nearest).

    Args:
        store: An agentkit store to wrap, which embeds with its own embedder; ``None``
            opens the default SQLite store.
        embed_model: What the default SQLite store embeds with; ``None`` uses
            ``Settings.embed_model``.
        path: The default store's file; ``None`` is ``$AGENTKIT_STORE`` or
            ``.agentkit/memory.db``.
        scope: The tenant every call serves; ``None`` is the unscoped bucket.
        dim: The embedding width, to skip probing the model for it.

    Raises:
        InvalidArgument: ``embed_model``, ``path`` or ``dim`` given together with a store.
        InvalidArgumentType: A ``store`` that is not an agentkit ``VectorPort``.
    """

    stores_text: bool = True
    is_embedding_query: bool = False
    flat_metadata: bool = False

    _view: StoreView = PrivateAttr()

    def __init__(
        self,
        store: VectorPort | None = None,
        *,
        embed_model: BaseEmbedding | None = None,
        path: str | Path | None = None,
        scope: Scope | None = None,
        dim: int | None = None,
    ) -> None:
        super().__init__(stores_text=True)
        self._view = StoreView.open(
            store,
            scope=scope,
            path=path,
            embedder=lambda: _embedder_for(embed_model, dim),
            builder_args={"embed_model": embed_model, "path": path, "dim": dim},
            wrap_hint="wrap a LlamaIndex embed model in LlamaIndexEmbedder when you build it",
        )

    @classmethod
    def class_name(cls) -> str:
        """The name LlamaIndex serialises this store under."""
        return "AgentkitVectorStore"

    def __repr__(self) -> str:
        return f"AgentkitVectorStore({self._view.store!r}, scope={self._view.scope!r})"

    # -- what it wraps -----------------------------------------------------------------

    @property
    def client(self) -> VectorPort:
        """The agentkit store underneath."""
        return self._view.store

    @property
    def scope(self) -> Scope:
        """The tenant this view reads and writes; change it with ``bind``, never in place."""
        return self._view.scope

    @property
    def embed_model(self) -> BaseEmbedding | None:
        """The store's model as a LlamaIndex embed model (for indexes built on this store)."""
        embedder = getattr(self._view.store, "embedder", None)
        if isinstance(embedder, LlamaIndexEmbedder):
            return embedder.embed_model
        return None if embedder is None else AgentkitEmbedding(embedder)

    def bind(self, scope: Scope) -> AgentkitVectorStore:
        """The same store seen from ``scope``; this object is left as it was."""
        return AgentkitVectorStore(self._view.store, scope=scope)

    def close(self) -> None:
        """Close the store if this object opened it; a store you passed in stays open."""
        self._view.close()

    async def aclose(self) -> None:
        """Async ``close``: only a store this object opened is closed."""
        await self._view.aclose()

    # -- writes ------------------------------------------------------------------------

    def add(self, nodes: Sequence[BaseNode], **kwargs: Any) -> list[str]:
        """Sync ``async_add``: upsert the nodes into this scope by node id."""
        return _sync(lambda: self.async_add(nodes, **kwargs))

    async def async_add(self, nodes: Sequence[BaseNode], **kwargs: Any) -> list[str]:
        """Upsert by node id: a known id is replaced in place. The store embeds the text."""
        chunks = [_chunk(node) for node in _node_list(nodes)]
        if chunks:
            await self._view.store.upsert(chunks, scope=self._view.scope)
        return [c.id for c in chunks]

    def delete(self, ref_doc_id: str, **delete_kwargs: Any) -> None:
        """Sync ``adelete``: every node of ``ref_doc_id`` in this scope, none elsewhere."""
        _sync(lambda: self.adelete(ref_doc_id, **delete_kwargs))

    async def adelete(self, ref_doc_id: str, **delete_kwargs: Any) -> None:
        """Every node of the source document ``ref_doc_id``, in this scope."""
        if not isinstance(ref_doc_id, str) or not ref_doc_id:
            raise InvalidArgumentType(f"ref_doc_id must be a non-empty str, got {ref_doc_id!r}")
        await self._forget({_REF_DOC_KEY: ref_doc_id})

    def delete_nodes(
        self,
        node_ids: list[str] | None = None,
        filters: MetadataFilters | None = None,
        **delete_kwargs: Any,
    ) -> None:
        """Sync ``adelete_nodes``: neither ``node_ids`` nor ``filters`` is refused, never "all"."""
        _sync(lambda: self.adelete_nodes(node_ids, filters, **delete_kwargs))

    async def adelete_nodes(
        self,
        node_ids: list[str] | None = None,
        filters: MetadataFilters | None = None,
        **delete_kwargs: Any,
    ) -> None:
        """These ids, these matches, or the ids among them that match; never "all".

        With neither, nothing is deleted and the call is refused: use ``clear()``.
        """
        if node_ids is None and filters is None:
            raise InvalidArgument(
                "delete_nodes needs node_ids or filters; to empty this scope call clear()"
            )
        if filters is None:
            wanted = check_ids(node_ids)
        else:
            wanted = [c.id for c in await self._matching(node_ids, filters)]
        if wanted:
            await self._view.store.delete(wanted, scope=self._view.scope)

    def clear(self) -> None:
        """Sync ``aclear``: empties this scope only; other tenants keep their records."""
        _sync(self.aclear)

    async def aclear(self) -> None:
        """Every record of this scope; other scopes are untouched."""
        delete_scope = self._view.offered(
            "delete_scope", "clear", "delete_nodes(node_ids=...) removes by id"
        )
        await delete_scope(scope=self._view.scope)

    # -- reads -------------------------------------------------------------------------

    def get_nodes(
        self,
        node_ids: list[str] | None = None,
        filters: MetadataFilters | None = None,
    ) -> list[BaseNode]:
        """Sync ``aget_nodes``: this scope's nodes by id and/or filter."""
        return _sync(lambda: self.aget_nodes(node_ids, filters))

    async def aget_nodes(
        self,
        node_ids: list[str] | None = None,
        filters: MetadataFilters | None = None,
    ) -> list[BaseNode]:
        """These ids (in that order, missing ones skipped), filtered; neither: every node."""
        return [_node(c) for c in await self._matching(node_ids, filters)]

    def query(self, query: VectorStoreQuery, **kwargs: Any) -> VectorStoreQueryResult:
        """Sync ``aquery``: default, text_search, sparse, hybrid and mmr modes, in this scope.

        Filters, ``node_ids`` and ``doc_ids`` are pushed down where the store can and checked
        again on every hit, so a result never misses a filter and never leaves the scope.
        """
        return _sync(lambda: self.aquery(query, **kwargs))

    async def aquery(self, query: VectorStoreQuery, **kwargs: Any) -> VectorStoreQueryResult:
        """Best first; ``similarity_top_k`` nodes that pass the filters, if there are that many."""
        if not isinstance(query, VectorStoreQuery):
            raise InvalidArgumentType(
                f"query must be a VectorStoreQuery, got {type(query).__name__}"
            )
        k = check_k(query.similarity_top_k)
        where, keep = self._conditions(query)
        mode = VectorStoreQueryMode(query.mode)
        if mode == VectorStoreQueryMode.DEFAULT:
            hits = await _widened(await self._dense(query), k, where, keep)
        elif mode in _LEXICAL_MODES:
            hits = await _widened(self._lexical(query), k, where, keep)
        elif mode == VectorStoreQueryMode.HYBRID:
            hits = await self._hybrid(query, k, where, keep)
        elif mode == VectorStoreQueryMode.MMR:
            hits = await self._mmr(query, k, where, keep, kwargs)
        else:
            raise InvalidArgument(
                f"AgentkitVectorStore does not answer {mode.value!r} queries; use default, "
                "text_search, sparse, hybrid or mmr"
            )
        return VectorStoreQueryResult(
            nodes=[_node(c) for _, c in hits],
            similarities=[score for score, _ in hits],
            ids=[c.id for _, c in hits],
        )

    # -- helpers -----------------------------------------------------------------------

    def _conditions(
        self, query: VectorStoreQuery
    ) -> tuple[dict[str, Any] | None, Callable[[Chunk], bool]]:
        where = pushdown(query.filters)
        passes = predicate(query.filters)
        node_ids = set(check_ids(query.node_ids)) if query.node_ids else None
        doc_ids = set(check_ids(query.doc_ids)) if query.doc_ids else None
        if doc_ids is not None and _REF_DOC_KEY not in where:
            where[_REF_DOC_KEY] = sorted(doc_ids)

        def keep(chunk: Chunk) -> bool:
            if node_ids is not None and chunk.id not in node_ids:
                return False
            if doc_ids is not None and chunk.metadata.get(_REF_DOC_KEY) not in doc_ids:
                return False
            return passes(chunk.metadata)

        return where or None, keep

    async def _dense(self, query: VectorStoreQuery) -> _Search:
        store, scope = self._view.store, self._view.scope
        if query.query_str is not None:
            text = check_query(query.query_str)
            vector = await self._text_vector(text)
            if vector is not None:
                by_vector = store.search_by_vector  # type: ignore[attr-defined]
                return lambda n, where: by_vector(vector, k=n, scope=scope, where=where)
            return lambda n, where: store.search(text, k=n, scope=scope, where=where)
        if query.query_embedding is not None:
            given = self._view.offered(
                "search_by_vector", "query by query_embedding", "send query_str"
            )
            vector = np.asarray(query.query_embedding, dtype=np.float32)
            return lambda n, where: given(vector, k=n, scope=scope, where=where)
        raise InvalidArgument("a query needs query_str or query_embedding")

    async def _text_vector(self, text: str) -> npt.NDArray[np.float32] | None:
        """The query's vector from the LlamaIndex model's query side, when the store
        embeds through one (its documents and queries may be embedded differently);
        None when the store's own ``search`` embeds the text as it should."""
        store = self._view.store
        embedder = getattr(store, "embedder", None)
        if isinstance(embedder, LlamaIndexEmbedder) and callable(
            getattr(store, "search_by_vector", None)
        ):
            return await embedder.embed_query(text)
        return None

    def _lexical(self, query: VectorStoreQuery) -> _Search:
        lexical = getattr(self._view.store, "lexical_search", None)
        if lexical is None:
            raise InvalidArgument(
                f"{type(self._view.store).__name__} has no word index; text_search, sparse and "
                "hybrid queries need a store with lexical_search (SQLite, Postgres)"
            )
        if query.query_str is None:
            raise InvalidArgument("text_search, sparse and hybrid queries need query_str")
        text = check_query(query.query_str)
        scope = self._view.scope
        return lambda n, where: lexical(text, k=n, scope=scope, where=where)

    async def _hybrid(
        self,
        query: VectorStoreQuery,
        k: int,
        where: dict[str, Any] | None,
        keep: Callable[[Chunk], bool],
    ) -> _Scored:
        """agentkit's one hybrid search (``HybridMemory``, as the CLI and AgentkitStore run
        it), ``alpha`` weighing the dense half and ``1 - alpha`` the word half; each half
        read ``HYBRID_DEPTH`` deep, or ``hybrid_top_k``/``sparse_top_k`` when deeper. Nodes
        are distinct by id: two nodes with one text are two results."""
        alpha = 0.5 if query.alpha is None else query.alpha
        if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 0 <= alpha <= 1:
            raise InvalidArgument(f"alpha must be a number in [0, 1], got {alpha!r}")
        self._lexical(query)  # the same refusals as a text_search query
        text = check_query(query.query_str)
        memory = HybridMemory(
            self._view.store,
            depth=max(HYBRID_DEPTH, query.hybrid_top_k or 0, query.sparse_top_k or 0),
            weights={"dense": float(alpha), "lexical": 1.0 - float(alpha)},
        )
        found = await memory.search(
            text,
            k=k,
            ctx=Ctx(scope=self._view.scope),
            where=where,
            keep=keep,
            vector=await self._text_vector(text),
        )
        return [
            (item.score or 0.0, chunk)
            for item, chunk in zip(found.items, found.chunks, strict=True)
        ]

    async def _mmr(
        self,
        query: VectorStoreQuery,
        k: int,
        where: dict[str, Any] | None,
        keep: Callable[[Chunk], bool],
        kwargs: Mapping[str, Any],
    ) -> _Scored:
        """The prefetched nearest (filters applied), then ``k`` picked by MMR."""
        threshold = kwargs.get("mmr_threshold", query.mmr_threshold)
        lambda_mult = check_lambda(0.5 if threshold is None else threshold, "mmr_threshold")
        fetch_k = _prefetch(k, kwargs)
        embedder = getattr(self._view.store, "embedder", None)
        if not isinstance(embedder, Embedder):
            raise UnsupportedOperation(
                f"{type(self._view.store).__name__} has no agentkit embedder, which "
                "AgentkitVectorStore mmr queries need to compare candidates; use the default mode"
            )
        candidates = await _widened(await self._dense(query), fetch_k, where, keep)
        if query.query_str is not None:
            vector = await query_vector(embedder, check_query(query.query_str))
        else:
            vector = np.asarray(query.query_embedding, dtype=np.float32)
        return await mmr_select(candidates, vector, embedder, k=k, lambda_mult=lambda_mult)

    async def _matching(
        self, node_ids: list[str] | None, filters: MetadataFilters | None
    ) -> list[Chunk]:
        passes = predicate(filters)
        if node_ids is not None:
            get = self._view.offered(
                "get",
                "get_nodes(node_ids=...)",
                "query with VectorStoreQuery(node_ids=...) instead",
            )
            wanted = check_ids(node_ids)
            found: list[Chunk] = await get(wanted, scope=self._view.scope) if wanted else []
            return [c for c in found if passes(c.metadata)]
        scan = self._view.offered(
            "scan",
            "get_nodes without node_ids (and delete_nodes by filters)",
            "pass node_ids, or query with MetadataFilters",
        )
        out: list[Chunk] = []
        after: str | None = None
        where = pushdown(filters) or None
        while True:
            page: list[Chunk] = await scan(
                scope=self._view.scope, where=where, after=after, limit=_PAGE
            )
            out.extend(c for c in page if passes(c.metadata))
            if len(page) < _PAGE:
                return out
            after = page[-1].id

    async def _forget(self, where: dict[str, Any]) -> None:
        delete_where = self._view.offered(
            "delete_where", "delete(ref_doc_id)", "delete_nodes(node_ids=...)"
        )
        await delete_where(where, scope=self._view.scope)


def _prefetch(k: int, kwargs: Mapping[str, Any]) -> int:
    """How many nearest an MMR query picks from: LlamaIndex's ``mmr_prefetch_k`` or
    ``mmr_prefetch_factor`` (not both, as its Chroma store rules), never fewer than k."""
    given_k, factor = kwargs.get("mmr_prefetch_k"), kwargs.get("mmr_prefetch_factor")
    if given_k is not None and factor is not None:
        raise InvalidArgument("mmr_prefetch_k and mmr_prefetch_factor cannot both be given")
    if given_k is not None:
        return max(k, check_k(given_k))
    if factor is None:
        factor = _MMR_PREFETCH_FACTOR
    if (
        isinstance(factor, bool)
        or not isinstance(factor, (int, float))
        or not math.isfinite(factor)
        or factor < 1
    ):
        raise InvalidArgument(f"mmr_prefetch_factor must be a number >= 1, got {factor!r}")
    return max(k, int(k * factor))


def _sync(make: Callable[[], Coroutine[Any, Any, _T]]) -> _T:
    return run_sync(make)


def _embedder_for(embed_model: BaseEmbedding | None, dim: int | None) -> Embedder:
    model = embed_model if embed_model is not None else Settings.embed_model
    if isinstance(model, AgentkitEmbedding) and dim is None:
        return model.embedder
    return LlamaIndexEmbedder(model, dim=dim)


async def _widened(
    search: _Search, k: int, where: dict[str, Any] | None, keep: Callable[[Chunk], bool]
) -> _Scored:
    """``k`` hits that ``keep`` accepts: the fetch grows while hits are dropped and the
    store still has more (a short answer means it had no more)."""
    n = k
    while True:
        hits = await search(n, where)
        kept = [(score, c) for score, c in hits if keep(c)]
        if len(kept) >= k or len(hits) < n:
            return kept[:k]
        n *= 4


def _node_list(nodes: object) -> list[BaseNode]:
    if isinstance(nodes, (str, bytes)) or not isinstance(nodes, Sequence):
        raise InvalidArgumentType(f"nodes must be a list of nodes, got {type(nodes).__name__}")
    out = list(nodes)
    for i, node in enumerate(out):
        if not isinstance(node, BaseNode):
            raise InvalidArgumentType(
                f"nodes[{i}] must be a LlamaIndex node, got {type(node).__name__}"
            )
    return out


def _chunk(node: BaseNode) -> Chunk:
    """The node's text as the record's text; everything else in LlamaIndex's own layout."""
    metadata = node_to_metadata_dict(node, remove_text=True, flat_metadata=False)
    return Chunk(node.node_id, node.get_content(metadata_mode=MetadataMode.NONE), metadata)


def _node(chunk: Chunk) -> BaseNode:
    """A stored record as the node it was, or a plain TextNode if LlamaIndex never wrote it."""
    metadata: Mapping[str, Any] = chunk.metadata
    if isinstance(metadata.get(_NODE_CONTENT), str):
        try:
            node = metadata_dict_to_node(dict(metadata), text=chunk.text)
        except (ValueError, TypeError):
            pass
        else:
            node.id_ = chunk.id
            return node
    return TextNode(id_=chunk.id, text=chunk.text, metadata=dict(metadata))
