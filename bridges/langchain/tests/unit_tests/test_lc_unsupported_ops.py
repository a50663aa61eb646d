"""AgentkitVectorStore over a VectorPort that offers only the required methods.

A user's own port need only upsert, search and delete. The optional operations then
fail with agentkit's UnsupportedOperation (a StoreError, and a NotImplementedError as
LangChain's base class raises), naming the port and the missing method, and losing
nothing already stored.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pytest
from agentkit_langchain import AgentkitVectorStore
from langchain_core.documents import Document

from agentkit.interop import run_sync
from agentkit.kernel import Scope, StoreError, UnsupportedOperation
from agentkit.vector import Chunk, HashingEmbedder, InMemoryVectorStore

ACME = Scope("acme", "support")


class BarePort:
    """Only the VectorPort protocol's three methods, over a real agentkit store."""

    def __init__(self) -> None:
        self.inner = InMemoryVectorStore(HashingEmbedder(dim=64))

    async def upsert(self, chunks: Sequence[Chunk], *, scope: Scope) -> None:
        await self.inner.upsert(chunks, scope=scope)

    async def search(
        self, query: str, *, k: int, scope: Scope, where: Mapping[str, Any] | None = None
    ) -> list[tuple[float, Chunk]]:
        return await self.inner.search(query, k=k, scope=scope, where=where)

    async def delete(self, ids: Sequence[str], *, scope: Scope) -> int | None:
        return await self.inner.delete(ids, scope=scope)

    def inner_records(self) -> list[Chunk]:
        """What the real store holds for ACME, read past the bare port."""
        return run_sync(lambda: self.inner.scan(scope=ACME))


def _store() -> tuple[AgentkitVectorStore, BarePort]:
    port = BarePort()
    store = AgentkitVectorStore(port, scope=ACME)
    store.add_documents(
        [
            Document(id="a", page_content="refunds within thirty days"),
            Document(id="b", page_content="shipping takes a week"),
        ]
    )
    return store, port


_CALLS: dict[str, tuple[str, Callable[[AgentkitVectorStore], object]]] = {
    "get_by_ids": ("get", lambda s: s.get_by_ids(["a"])),
    "similarity_search_by_vector": (
        "search_by_vector",
        lambda s: s.similarity_search_by_vector([0.1] * 64, k=1),
    ),
    "max_marginal_relevance_search": (
        "search_by_vector",
        lambda s: s.max_marginal_relevance_search("refunds", k=1),
    ),
}


@pytest.mark.parametrize("call", sorted(_CALLS))
def test_a_missing_optional_method_is_named_and_nothing_is_lost(call: str) -> None:
    store, port = _store()
    method, run = _CALLS[call]
    with pytest.raises(UnsupportedOperation) as caught:
        run(store)
    message = str(caught.value)
    assert "BarePort" in message and f"{method}()" in message
    assert "instead" in message or "similarity_search" in message
    # The error is in agentkit's tree and still what LangChain callers catch.
    assert isinstance(caught.value, StoreError) and isinstance(caught.value, NotImplementedError)
    hits = store.similarity_search("refunds shipping", k=5)
    assert sorted(d.id for d in hits if d.id) == ["a", "b"]
    assert [c.id for c in port.inner_records()] == ["a", "b"]


async def test_the_async_twins_raise_the_same_error() -> None:
    store, _ = _store()
    with pytest.raises(UnsupportedOperation, match=r"BarePort has no get\(\)"):
        await store.aget_by_ids(["a"])
    with pytest.raises(UnsupportedOperation, match=r"BarePort has no search_by_vector\(\)"):
        await store.asimilarity_search_by_vector([0.1] * 64, k=1)


def test_the_required_operations_still_work_over_a_bare_port() -> None:
    store, _ = _store()
    assert store.similarity_search("refunds", k=1)[0].id == "a"
    store.delete(["a"])
    assert [d.id for d in store.similarity_search("refunds", k=5)] == ["b"]
