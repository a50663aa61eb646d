"""AgentkitVectorStore over a VectorPort that offers only the required methods.

A user's own port need only upsert, search and delete. The optional operations then
fail with agentkit's UnsupportedOperation (a StoreError, and a NotImplementedError as
LlamaIndex's base class raises for get_nodes/clear), naming the port and the missing
method, and losing nothing already stored.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pytest
from agentkit_llamaindex import AgentkitVectorStore
from llama_index.core.schema import NodeRelationship, RelatedNodeInfo, TextNode
from llama_index.core.vector_stores.types import (
    MetadataFilter,
    MetadataFilters,
    VectorStoreQuery,
)

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

    def inner_ids(self) -> list[str]:
        """What the real store holds for ACME, read past the bare port."""
        return [c.id for c in run_sync(lambda: self.inner.scan(scope=ACME))]


def _store() -> tuple[AgentkitVectorStore, BarePort]:
    port = BarePort()
    store = AgentkitVectorStore(port, scope=ACME)
    source = {NodeRelationship.SOURCE: RelatedNodeInfo(node_id="doc-1")}
    store.add(
        [
            TextNode(id_="a", text="refunds within thirty days", relationships=source),
            TextNode(id_="b", text="shipping takes a week", metadata={"kind": "faq"}),
        ]
    )
    return store, port


_KIND = MetadataFilters(filters=[MetadataFilter(key="kind", value="faq")])
_CALLS: dict[str, tuple[str, Callable[[AgentkitVectorStore], object]]] = {
    "clear": ("delete_scope", lambda s: s.clear()),
    "delete": ("delete_where", lambda s: s.delete("doc-1")),
    "get_nodes(node_ids)": ("get", lambda s: s.get_nodes(node_ids=["a"])),
    "get_nodes()": ("scan", lambda s: s.get_nodes()),
    "delete_nodes(filters)": ("scan", lambda s: s.delete_nodes(filters=_KIND)),
    "query(query_embedding)": (
        "search_by_vector",
        lambda s: s.query(VectorStoreQuery(query_embedding=[0.1] * 64, similarity_top_k=1)),
    ),
}


@pytest.mark.parametrize("call", sorted(_CALLS))
def test_a_missing_optional_method_is_named_and_nothing_is_lost(call: str) -> None:
    store, port = _store()
    method, run = _CALLS[call]
    with pytest.raises(UnsupportedOperation) as caught:
        run(store)
    message = str(caught.value)
    assert f"BarePort has no {method}()" in message
    assert "AgentkitVectorStore" in message and "; " in message  # and what to use instead
    assert isinstance(caught.value, StoreError) and isinstance(caught.value, NotImplementedError)
    assert port.inner_ids() == ["a", "b"]


async def test_the_async_twins_raise_the_same_error() -> None:
    store, port = _store()
    with pytest.raises(UnsupportedOperation, match=r"BarePort has no delete_scope\(\)"):
        await store.aclear()
    with pytest.raises(UnsupportedOperation, match=r"BarePort has no scan\(\)"):
        await store.aget_nodes()
    assert port.inner_ids() == ["a", "b"]


def test_the_required_operations_still_work_over_a_bare_port() -> None:
    store, _ = _store()
    found = store.query(VectorStoreQuery(query_str="refunds", similarity_top_k=1))
    assert found.ids == ["a"]
    store.delete_nodes(node_ids=["a"])
    found = store.query(VectorStoreQuery(query_str="refunds", similarity_top_k=5))
    assert found.ids == ["b"]
