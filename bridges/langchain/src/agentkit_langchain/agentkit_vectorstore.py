"""AgentkitVectorStore: agentkit's own stores behind LangChain's ``VectorStore`` interface.

The one-line migration: code written against ``InMemoryVectorStore`` (``from_texts``,
``add_documents``, ``similarity_search``, ``as_retriever``) keeps working with only the
class name changed, and its records land in an agentkit store (the durable SQLite file
by default), where agentkit memory, the CLI and other processes read them.

The opposite direction, a LangChain store under agentkit, is ``LangChainVectorPort``.
"""

from __future__ import annotations

import copy
import uuid
from collections.abc import Callable, Coroutine, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar, get_args

import numpy as np
import numpy.typing as npt
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.vectorstores import VectorStore

from agentkit.interop import StoreView, model_rows, run_sync
from agentkit.kernel.ctx import Ctx, Scope
from agentkit.kernel.errors import (
    InvalidArgument,
    InvalidArgumentType,
    InvalidFilter,
    StoreError,
    UnsupportedOperation,
)
from agentkit.kernel.validate import (
    check_choice,
    check_ids,
    check_k,
    check_metadata_where,
    check_query,
)
from agentkit.state.memory import HybridMemory, HybridMode
from agentkit.vector import HashingEmbedder
from agentkit.vector.mmr import check_lambda, mmr_select, query_vector
from agentkit.vector.port import Chunk, Embedder, VectorPort
from agentkit_langchain.embeddings import AgentkitEmbeddings

__all__ = ["AgentkitVectorStore", "LangChainEmbedder"]

_T = TypeVar("_T")
_Scored = list[tuple[float, Chunk]]


class LangChainEmbedder:
    """A LangChain ``Embeddings`` as an agentkit ``Embedder`` (unit rows, fixed width).

    ``dim`` is read from one probe embedding unless given. ``model_name`` names the
    Embeddings class (and its model, when it has one), so a SQLite store written with one
    model refuses to be reopened with another instead of mixing their vectors.

    Args:
        embeddings: The LangChain Embeddings to call.
        dim: The width of its vectors; ``None`` embeds one probe text to find out.

    Raises:
        InvalidArgumentType: ``embeddings`` is not a LangChain ``Embeddings``.
        InvalidArgument: A ``dim`` that is not a positive int.
    """

    def __init__(self, embeddings: Embeddings, *, dim: int | None = None) -> None:
        if not isinstance(embeddings, Embeddings):
            raise InvalidArgumentType(
                f"embeddings must be a LangChain Embeddings, got {type(embeddings).__name__}"
            )
        if dim is None:
            dim = len(embeddings.embed_query("dimension probe"))
        if isinstance(dim, bool) or not isinstance(dim, int) or dim < 1:
            raise InvalidArgument(f"dim must be a positive int, got {dim!r}")
        self.embeddings = embeddings
        self.dim = dim
        kind = type(embeddings)
        name = f"langchain:{kind.__module__}.{kind.__qualname__}"
        model = getattr(embeddings, "model", None) or getattr(embeddings, "model_name", None)
        self.model_name = f"{name}/{model}" if isinstance(model, str) and model else name

    @classmethod
    async def create(cls, embeddings: Embeddings, *, dim: int | None = None) -> LangChainEmbedder:
        """The constructor for async callers: the probe embedding is awaited."""
        if dim is None and isinstance(embeddings, Embeddings):
            dim = len(await embeddings.aembed_query("dimension probe"))
        return cls(embeddings, dim=dim)

    def __repr__(self) -> str:
        return f"LangChainEmbedder({self.embeddings!r}, dim={self.dim})"

    async def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Embed documents through ``aembed_documents``, as unit vectors of width ``dim``.

        Rows are normalised so cosine scores match agentkit's own embedders; a wrong shape or
        a NaN from the model is a StoreError rather than a silently corrupt index.
        """
        if not texts:
            return model_rows([], count=0, dim=self.dim, model=self.model_name)
        rows = await self.embeddings.aembed_documents(list(texts))
        return model_rows(rows, count=len(texts), dim=self.dim, model=self.model_name)

    async def embed_query(self, text: str) -> npt.NDArray[np.float32]:
        """Queries go through ``embed_query``: asymmetric models embed them differently."""
        row = await self.embeddings.aembed_query(text)
        vector: npt.NDArray[np.float32] = model_rows(
            [row], count=1, dim=self.dim, model=self.model_name
        )[0]
        return vector


class AgentkitVectorStore(VectorStore):
    """A LangChain ``VectorStore`` over any agentkit ``VectorPort``, inside one scope.

    ``AgentkitVectorStore(embedding)`` opens the SQLite store at ``path`` (default
    ``$AGENTKIT_STORE`` or ``.agentkit/memory.db``, the CLI's) embedding with any
    LangChain Embeddings (an ``AgentkitEmbeddings`` is unwrapped to its agentkit
    embedder) or, without one, agentkit's offline ``HashingEmbedder`` (lexical, not
    semantic). ``AgentkitVectorStore(store)`` wraps a store you built
    (in-memory, SQLite, Postgres), which embeds with its own embedder.

    Every call reads and writes the records of ``scope`` only (default: the unscoped
    bucket); ``bind(scope)`` gives a view of another tenant over the same store. Ids
    are the documents' own (``Document.id`` or ``ids=``, else a fresh uuid), and adding
    a known id replaces that record in place. ``filter`` is agentkit's ``where``
    language, which is Chroma's and PGVector's dict filter spelling (``$and``, ``$or``,
    ``$gte``, ``$in``, ...), evaluated inside the store's search; a keyword this store
    does not understand is refused rather than silently ignored. Scores are cosine
    similarities (higher is better); relevance scores are the same, floored at 0.

    ``search_mode="hybrid"`` makes ``similarity_search`` (and so ``as_retriever()``)
    agentkit's hybrid search, ``HybridMemory``, as the CLI and the LangGraph store run
    it: meaning and words fused by reciprocal rank fusion, scores the fused RRF scores
    (relevance: the fraction of a first place in both halves). ``"lexical"`` ranks by
    the store's word index alone (BM25 scores, which have no relevance scale). Both need
    a store with ``lexical_search`` (SQLite, Postgres); MMR and searches by vector stay
    dense.

    Sync methods run the async ones once on agentkit's one shared loop
    (``agentkit.interop.run_sync``); async code should call the ``a*`` twins. A
    Postgres store belongs to one event loop, so use it from sync or from async code,
    not both.

    Args:
        store: An agentkit store to wrap, which embeds with its own embedder; LangChain
            ``Embeddings`` here are read as ``embedding`` (so ``InMemoryVectorStore(e)``
            works renamed); ``None`` opens the default SQLite store.
        embedding: What the default SQLite store embeds with; ``None`` uses
            ``HashingEmbedder``.
        path: The default store's file; ``None`` is ``$AGENTKIT_STORE`` or
            ``.agentkit/memory.db``.
        scope: The tenant every call serves; ``None`` is the unscoped bucket.
        dim: The embedding width, to skip probing the Embeddings for it.
        search_mode: ``"dense"`` (cosine), ``"hybrid"`` or ``"lexical"``: what
            ``similarity_search`` ranks by.

    Raises:
        InvalidArgument: ``embedding``, ``path`` or ``dim`` given together with a store,
            or an unknown ``search_mode``.
        InvalidArgumentType: A ``store`` that is not an agentkit ``VectorPort``, or one
            without ``lexical_search`` for a hybrid or lexical ``search_mode``.
    """

    def __init__(
        self,
        store: VectorPort | Embeddings | None = None,
        *,
        embedding: Embeddings | None = None,
        path: str | Path | None = None,
        scope: Scope | None = None,
        dim: int | None = None,
        search_mode: HybridMode = "dense",
    ) -> None:
        check_choice("search_mode", search_mode, get_args(HybridMode))
        if isinstance(store, Embeddings) and embedding is None:
            # `InMemoryVectorStore(embeddings)` keeps working with only the class renamed.
            store, embedding = None, store
        self._view = StoreView.open(
            store,
            scope=scope,
            path=path,
            embedder=lambda: _embedder_for(embedding, dim),
            builder_args={"embedding": embedding, "path": path, "dim": dim},
            wrap_hint="wrap LangChain Embeddings in LangChainEmbedder when you build it",
        )
        self._hybrid = (
            None if search_mode == "dense" else HybridMemory(self._view.store, mode=search_mode)
        )

    def __repr__(self) -> str:
        return f"AgentkitVectorStore({self._view.store!r}, scope={self._view.scope!r})"

    # -- what it wraps -----------------------------------------------------------------

    @property
    def store(self) -> VectorPort:
        """The agentkit store every call goes to, shared by all ``bind`` views."""
        return self._view.store

    @property
    def scope(self) -> Scope:
        """The tenant this view reads and writes; change it with ``bind``, never in place."""
        return self._view.scope

    @property
    def embeddings(self) -> Embeddings | None:
        """The store's embedder as LangChain ``Embeddings`` (``None`` if it has none).

        A wrapped LangChain model is handed back as itself; an agentkit embedder is wrapped
        in ``AgentkitEmbeddings``, so LangChain code that reads this attribute gets the
        same vectors the store holds.
        """
        embedder = getattr(self._view.store, "embedder", None)
        if isinstance(embedder, LangChainEmbedder):
            return embedder.embeddings
        return None if embedder is None else AgentkitEmbeddings(embedder)

    def bind(self, scope: Scope) -> AgentkitVectorStore:
        """The same store seen from ``scope``; this object is left as it was."""
        twin = copy.copy(self)
        twin._view = self._view.bind(scope)  # a view never closes the original's store
        return twin

    def close(self) -> None:
        """Close the store if this object opened it; a store you passed in stays open."""
        self._view.close()

    async def aclose(self) -> None:
        """Async ``close``: only a store this object opened is closed."""
        await self._view.aclose()

    # -- writes ------------------------------------------------------------------------

    @classmethod
    def from_texts(
        cls,
        texts: list[str],
        embedding: Embeddings | None = None,
        metadatas: list[dict[Any, Any]] | None = None,
        *,
        ids: list[str] | None = None,
        **kwargs: Any,
    ) -> AgentkitVectorStore:
        """A store (built from ``kwargs``: store, path, scope, dim) holding ``texts``."""
        made = cls(embedding=embedding, **kwargs) if embedding is not None else cls(**kwargs)
        made.add_texts(texts, metadatas, ids=ids)
        return made

    @classmethod
    async def afrom_texts(
        cls,
        texts: list[str],
        embedding: Embeddings | None = None,
        metadatas: list[dict[Any, Any]] | None = None,
        *,
        ids: list[str] | None = None,
        **kwargs: Any,
    ) -> AgentkitVectorStore:
        """Async ``from_texts``: the embedding width is probed with an awaited call, so
        the event loop is never blocked on the model.
        """
        if (
            embedding is not None
            and not isinstance(embedding, AgentkitEmbeddings)
            and kwargs.get("store") is None
            and kwargs.get("dim") is None
        ):
            kwargs["dim"] = (await LangChainEmbedder.create(embedding)).dim  # awaited probe
        made = cls(embedding=embedding, **kwargs) if embedding is not None else cls(**kwargs)
        await made.aadd_texts(texts, metadatas, ids=ids)
        return made

    def add_texts(
        self,
        texts: Iterable[str],
        metadatas: list[dict[Any, Any]] | None = None,
        *,
        ids: list[str] | None = None,
        **kwargs: Any,
    ) -> list[str]:
        """Sync ``aadd_texts``; same upsert-by-id rules and keywords."""
        docs = _documents(texts, metadatas)
        return self._sync(lambda: self.aadd_documents(docs, ids=ids, **kwargs))

    async def aadd_texts(
        self,
        texts: Iterable[str],
        metadatas: list[dict[Any, Any]] | None = None,
        *,
        ids: list[str] | None = None,
        **kwargs: Any,
    ) -> list[str]:
        """Upsert ``texts`` (with ``metadatas``) into this scope; returns their ids.

        Same rules as ``aadd_documents``: a known id replaces its record in place.
        """
        return await self.aadd_documents(_documents(texts, metadatas), ids=ids, **kwargs)

    def add_documents(self, documents: list[Document], **kwargs: Any) -> list[str]:
        """Sync ``aadd_documents``; same upsert-by-id rules and keywords."""
        return self._sync(lambda: self.aadd_documents(documents, **kwargs))

    async def aadd_documents(self, documents: list[Document], **kwargs: Any) -> list[str]:
        """Upsert by id: ``ids=`` wins, then ``Document.id``, else a fresh uuid.

        ``batch_size`` (LangChain's indexing API passes it) splits the upsert; each
        batch is all-or-nothing.
        """
        given = kwargs.pop("ids", None)
        batch_size = kwargs.pop("batch_size", None)
        _refuse_extra(kwargs, "add_documents")
        docs = _document_list(documents)
        ids = _ids_for(docs, given)
        chunks = [
            Chunk(i, d.page_content, dict(d.metadata)) for i, d in zip(ids, docs, strict=True)
        ]
        step = len(chunks) or 1
        if batch_size is not None:
            step = check_k(batch_size)
        for start in range(0, len(chunks), step):
            await self._view.store.upsert(chunks[start : start + step], scope=self._view.scope)
        return ids

    def delete(self, ids: list[str] | None = None, **kwargs: Any) -> bool | None:
        """Sync ``adelete``: ``ids=None`` is refused rather than emptying the scope."""
        return self._sync(lambda: self.adelete(ids, **kwargs))

    async def adelete(self, ids: list[str] | None = None, **kwargs: Any) -> bool | None:
        """Delete these ids from the scope; unknown ids are ignored.

        ``ids=None`` means "delete everything" to some LangChain stores; here it is
        refused, so a missing argument can never empty a tenant.
        """
        _refuse_extra(kwargs, "delete")
        if ids is None:
            raise InvalidArgument(
                "delete needs the ids to delete; ids=None would delete everything and is "
                "refused (to forget a whole scope, use the store's delete_scope)"
            )
        wanted = check_ids(ids)
        if wanted:
            await self._view.store.delete(wanted, scope=self._view.scope)
        return True

    def get_by_ids(self, ids: Sequence[str], /) -> list[Document]:
        """Sync ``aget_by_ids``: stored documents of this scope among ``ids``, in order."""
        return self._sync(lambda: self.aget_by_ids(ids))

    async def aget_by_ids(self, ids: Sequence[str], /) -> list[Document]:
        """The stored documents among ``ids``, in the order asked; missing ids skipped."""
        get = self._view.offered("get", "get_by_ids", "search with similarity_search instead")
        wanted = check_ids(ids)
        if not wanted:
            return []
        chunks: list[Chunk] = await get(wanted, scope=self._view.scope)
        return [_document(c) for c in chunks]

    # -- searches ----------------------------------------------------------------------

    def similarity_search(self, query: str, k: int = 4, **kwargs: Any) -> list[Document]:
        """The ``k`` nearest documents in this scope, best first.

        ``filter`` is a metadata filter in Chroma/PGVector spelling (agentkit's ``where``
        language: a value equals, a list is any of, ``$eq $ne $gt $gte $lt $lte $in $nin
        $exists $and $or $not``); any other keyword is refused instead of ignored, so a
        typo cannot widen a search.
        """
        return [doc for doc, _ in self.similarity_search_with_score(query, k, **kwargs)]

    async def asimilarity_search(self, query: str, k: int = 4, **kwargs: Any) -> list[Document]:
        """Async ``similarity_search``: same scope, ``filter`` and refusal of unknown keywords."""
        return [doc for doc, _ in await self.asimilarity_search_with_score(query, k, **kwargs)]

    def similarity_search_with_score(
        self, query: str, k: int = 4, **kwargs: Any
    ) -> list[tuple[Document, float]]:
        """Sync ``asimilarity_search_with_score``: documents with cosine scores, best first."""
        return self._sync(lambda: self.asimilarity_search_with_score(query, k, **kwargs))

    async def asimilarity_search_with_score(
        self, query: str, k: int = 4, **kwargs: Any
    ) -> list[tuple[Document, float]]:
        """Best first, scored by cosine similarity (by RRF or BM25 in the other modes)."""
        where = _filter(kwargs, "similarity_search")
        query = check_query(query)
        k = check_k(k)
        vector = await self._query_side(query)
        if self._hybrid is not None:
            found = await self._hybrid.search(
                query, k=k, ctx=Ctx(self._view.scope), where=where, vector=vector
            )
            return [
                (_document(c), item.score or 0.0)
                for item, c in zip(found.items, found.chunks, strict=True)
            ]
        if vector is not None:
            hits = await self._by_vector(vector, k, where)
        else:
            hits = await self._view.store.search(query, k=k, scope=self._view.scope, where=where)
        return [(_document(c), score) for score, c in hits]

    def similarity_search_by_vector(
        self, embedding: list[float], k: int = 4, **kwargs: Any
    ) -> list[Document]:
        """Sync ``asimilarity_search_by_vector``: nearest to a vector you embedded yourself."""
        return self._sync(lambda: self.asimilarity_search_by_vector(embedding, k, **kwargs))

    async def asimilarity_search_by_vector(
        self, embedding: list[float], k: int = 4, **kwargs: Any
    ) -> list[Document]:
        """The ``k`` documents of this scope nearest to ``embedding``.

        The vector must come from the store's embedder; a store without
        ``search_by_vector`` raises UnsupportedOperation (a NotImplementedError, as
        LangChain's base class raises) rather than pretending.
        """
        where = _filter(kwargs, "similarity_search_by_vector")
        hits = await self._by_vector(embedding, check_k(k), where)
        return [_document(c) for _, c in hits]

    def _select_relevance_score_fn(self) -> Callable[[float], float]:
        if self._hybrid is None:
            return _relevance
        if self._hybrid.mode == "lexical":
            raise UnsupportedOperation(
                "BM25 scores have no [0, 1] relevance scale; use search_mode='hybrid' or "
                "'dense' for relevance scores and score thresholds"
            )
        # A first place in both halves is the best fused score there is.
        best = 2.0 / (self._hybrid.constant + 1)
        return lambda fused: min(1.0, max(0.0, fused / best))

    def max_marginal_relevance_search(
        self,
        query: str,
        k: int = 4,
        fetch_k: int = 20,
        lambda_mult: float = 0.5,
        **kwargs: Any,
    ) -> list[Document]:
        """Sync ``amax_marginal_relevance_search``: relevant yet varied results."""
        return self._sync(
            lambda: self.amax_marginal_relevance_search(query, k, fetch_k, lambda_mult, **kwargs)
        )

    async def amax_marginal_relevance_search(
        self,
        query: str,
        k: int = 4,
        fetch_k: int = 20,
        lambda_mult: float = 0.5,
        **kwargs: Any,
    ) -> list[Document]:
        """Embed ``query`` with the store's embedder, then MMR over the ``fetch_k`` nearest.

        The query uses the embedder's query path, so asymmetric models rank as they would
        in a plain similarity search.
        """
        self._vector_search()  # a port that cannot is named before anything is embedded
        vector = await self._embed_query(check_query(query))
        return await self.amax_marginal_relevance_search_by_vector(
            vector.tolist(), k, fetch_k, lambda_mult, **kwargs
        )

    def max_marginal_relevance_search_by_vector(
        self,
        embedding: list[float],
        k: int = 4,
        fetch_k: int = 20,
        lambda_mult: float = 0.5,
        **kwargs: Any,
    ) -> list[Document]:
        """Sync ``amax_marginal_relevance_search_by_vector``."""
        return self._sync(
            lambda: self.amax_marginal_relevance_search_by_vector(
                embedding, k, fetch_k, lambda_mult, **kwargs
            )
        )

    async def amax_marginal_relevance_search_by_vector(
        self,
        embedding: list[float],
        k: int = 4,
        fetch_k: int = 20,
        lambda_mult: float = 0.5,
        **kwargs: Any,
    ) -> list[Document]:
        """The ``fetch_k`` nearest, then ``k`` of them picked for relevance and variety.

        agentkit's one MMR (``agentkit.vector.mmr``, the rule LangChain's own
        ``maximal_marginal_relevance`` follows): the candidates' vectors are their texts
        embedded again by the store's embedder, which is what the store holds for them.
        """
        where = _filter(kwargs, "max_marginal_relevance_search")
        k = check_k(k)
        fetch_k = check_k(fetch_k)
        lambda_mult = check_lambda(lambda_mult)
        hits = await self._by_vector(embedding, max(k, fetch_k), where)
        picked = await mmr_select(hits, embedding, self._embedder(), k=k, lambda_mult=lambda_mult)
        return [_document(c) for _, c in picked]

    # -- helpers -----------------------------------------------------------------------

    def _sync(self, make: Callable[[], Coroutine[Any, Any, _T]]) -> _T:
        return run_sync(make)

    def _embedder(self) -> Embedder:
        embedder = getattr(self._view.store, "embedder", None)
        if embedder is None:
            raise StoreError(f"{self._view.store!r} has no embedder; vector searches need one")
        if not isinstance(embedder, Embedder):
            raise StoreError(f"{self._view.store!r}.embedder is not an agentkit Embedder")
        return embedder

    async def _query_side(self, query: str) -> npt.NDArray[np.float32] | None:
        """The query embedded by the LangChain model's ``embed_query``, when the store
        embeds through one (asymmetric models embed queries differently); None when the
        store's own ``search`` embeds the text as it should."""
        embedder = getattr(self._view.store, "embedder", None)
        if isinstance(embedder, LangChainEmbedder) and hasattr(
            self._view.store, "search_by_vector"
        ):
            return await embedder.embed_query(query)
        return None

    async def _embed_query(self, query: str) -> npt.NDArray[np.float32]:
        return await query_vector(self._embedder(), query)

    async def _by_vector(
        self,
        vector: Sequence[float] | npt.NDArray[np.float32],
        k: int,
        where: dict[str, Any] | None,
    ) -> _Scored:
        hits: _Scored = await self._vector_search()(
            vector, k=k, scope=self._view.scope, where=where
        )
        return hits

    def _vector_search(self) -> Any:
        return self._view.offered(
            "search_by_vector",
            "searches by vector (similarity_search_by_vector, max_marginal_relevance_search)",
            "search by text with similarity_search, which the store embeds itself",
        )


def _embedder_for(embedding: Embeddings | None, dim: int | None) -> Embedder:
    """An agentkit embedder wrapped as LangChain Embeddings is unwrapped, so the store
    records that embedder and agentkit's CLI and memory can read the file."""
    if embedding is None:
        return HashingEmbedder()
    if isinstance(embedding, AgentkitEmbeddings) and dim is None:
        inner = embedding.embedder
        if isinstance(inner, Embedder):
            return inner
    return LangChainEmbedder(embedding, dim=dim)


def _relevance(similarity: float) -> float:
    # Orthogonal and opposite both mean "unrelated"; LangChain wants [0, 1].
    return min(1.0, max(0.0, float(similarity)))


def _document(chunk: Chunk) -> Document:
    return Document(id=chunk.id, page_content=chunk.text, metadata=dict(chunk.metadata))


def _refuse_extra(kwargs: Mapping[str, Any], method: str) -> None:
    if kwargs:
        names = ", ".join(sorted(kwargs))
        raise InvalidArgument(f"AgentkitVectorStore.{method} does not take {names}")


def _filter(kwargs: dict[str, Any], method: str) -> dict[str, Any] | None:
    """``filter=`` as an agentkit ``where``; any other keyword is refused.

    LangChain's dict filters (Chroma's and PGVector's spelling: ``$and``, ``$or``,
    ``{"k": {"$gte": v}}``, ...) are agentkit's ``where`` language already; PGVector's
    ``$between: [lo, hi]`` becomes ``$gte``/``$lte``. An operator the language has not
    (``$like``, ``$ilike``, ``$contains``) is refused naming it and this store, never
    taken as a value to compare with.
    """
    flt = kwargs.pop("filter", None)
    _refuse_extra(kwargs, method)
    if flt is not None and not isinstance(flt, Mapping):
        raise InvalidArgumentType(
            "filter must be a dict of metadata values (a list value means any of) or "
            f"operators, got {type(flt).__name__}"
        )
    try:
        return check_metadata_where(_between(flt)) or None
    except InvalidFilter as exc:
        raise InvalidFilter(
            f"AgentkitVectorStore.{method}: {exc}",
            key=exc.key, operator=exc.operator, path=exc.path,
        ) from exc


def _between(flt: Any) -> Any:
    """PGVector's ``{"k": {"$between": [lo, hi]}}`` as ``{"$gte": lo, "$lte": hi}``."""
    if isinstance(flt, Mapping):
        out: dict[Any, Any] = {}
        for key, value in flt.items():
            if isinstance(value, Mapping) and "$between" in value:
                bounds = value["$between"]
                if not isinstance(bounds, (list, tuple)) or len(bounds) != 2:
                    raise InvalidFilter(
                        f"where[{key!r}]['$between'] takes [low, high], got {bounds!r}",
                        key=str(key), operator="$between",
                    )
                rest = {op: v for op, v in value.items() if op != "$between"}
                out[key] = {**rest, "$gte": bounds[0], "$lte": bounds[1]}
            elif key in ("$and", "$or") and isinstance(value, (list, tuple)):
                out[key] = [_between(part) for part in value]
            elif key == "$not":
                out[key] = _between(value)
            else:
                out[key] = value
        return out
    return flt


def _document_list(documents: object) -> list[Document]:
    if isinstance(documents, (str, bytes)) or not isinstance(documents, Iterable):
        raise InvalidArgumentType(
            f"documents must be a list of Document, got {type(documents).__name__}"
        )
    docs = list(documents)
    for i, doc in enumerate(docs):
        if not isinstance(doc, Document):
            raise InvalidArgumentType(
                f"documents[{i}] must be a Document, got {type(doc).__name__}"
            )
    return docs


def _ids_for(docs: list[Document], given: object) -> list[str]:
    if given is None:
        wanted: list[str | None] = [None] * len(docs)
    else:
        if isinstance(given, (str, bytes)) or not isinstance(given, Sequence):
            raise InvalidArgumentType(f"ids must be a list of str, got {type(given).__name__}")
        wanted = list(given)
        if len(wanted) != len(docs):
            raise InvalidArgument(f"got {len(wanted)} ids for {len(docs)} documents")
    out: list[str] = []
    for i, (doc, cid) in enumerate(zip(docs, wanted, strict=True)):
        chosen = cid if cid is not None else doc.id
        if chosen is not None and not isinstance(chosen, str):
            raise InvalidArgumentType(f"ids[{i}] must be a str, got {type(chosen).__name__}")
        out.append(chosen or uuid.uuid4().hex)
    return out


def _documents(texts: Iterable[str], metadatas: list[dict[Any, Any]] | None) -> list[Document]:
    if isinstance(texts, (str, bytes)) or not isinstance(texts, Iterable):
        raise InvalidArgumentType(f"texts must be a list of str, got {type(texts).__name__}")
    items = list(texts)
    if metadatas is not None and len(metadatas) != len(items):
        raise InvalidArgument(f"got {len(metadatas)} metadatas for {len(items)} texts")
    docs: list[Document] = []
    for i, text in enumerate(items):
        if not isinstance(text, str):
            raise InvalidArgumentType(f"texts[{i}] must be a str, got {type(text).__name__}")
        metadata = {} if metadatas is None else metadatas[i]
        if not isinstance(metadata, Mapping):
            raise InvalidArgumentType(
                f"metadatas[{i}] must be a dict, got {type(metadata).__name__}"
            )
        docs.append(Document(page_content=text, metadata=dict(metadata)))
    return docs
