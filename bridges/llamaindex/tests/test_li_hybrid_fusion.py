"""AgentkitVectorStore's hybrid mode ranks exactly as the project's hybrid does.

One fusion mechanism: a hybrid LlamaIndex query over an agentkit store must give the
ranking and the scores of rrf_rerank over the store's dense and lexical lists, each read
``HYBRID_DEPTH`` deep (weights ``alpha`` / ``1 - alpha``, the hybrid's RRF constant and tie
rule, as the CLI and AgentkitStore fuse: all three are ``HybridMemory``), and keep
LlamaIndex's node identity (two nodes with one text are two results).
"""

from __future__ import annotations

import functools
from pathlib import Path

import pytest
from agentkit_llamaindex import AgentkitVectorStore
from llama_index.core.schema import TextNode
from llama_index.core.vector_stores.types import VectorStoreQuery

from agentkit.kernel import Ctx, Scope
from agentkit.kernel.errors import InvalidArgument
from agentkit.state.memory import (
    HYBRID_DEPTH,
    HYBRID_RRF_CONSTANT,
    HYBRID_TIES,
    CompositeMemory,
    LexicalMemory,
    VectorMemory,
    rrf_rerank,
)
from agentkit.vector import HashingEmbedder, SQLiteVectorStore

ACME = Scope("acme", "support")

TEXTS = [
    "Refunds are accepted within 30 days of purchase.",
    "Refunds need the original receipt.",
    "Standard shipping takes five business days.",
    "Express shipping arrives in two business days.",
    "Shipping refunds are not offered for express orders.",
    "Gift cards cannot be refunded.",
    "Business customers get invoices each month.",
    "The receipt is emailed right after purchase.",
]


def _nodes() -> list[TextNode]:
    return [TextNode(id_=f"n{i}", text=t, metadata={"i": i}) for i, t in enumerate(TEXTS)]


@pytest.mark.parametrize("alpha", [0.5, 0.2, 0.9])
async def test_hybrid_is_the_projects_rrf_over_the_same_store(
    tmp_path: Path, alpha: float
) -> None:
    raw = SQLiteVectorStore(tmp_path / "h.db", embedder=HashingEmbedder(dim=256))
    store = AgentkitVectorStore(raw, scope=ACME)
    await store.async_add(_nodes())
    query = "refunds for shipping business days receipt"
    got = await store.aquery(
        VectorStoreQuery(query_str=query, similarity_top_k=5, mode="hybrid", alpha=alpha)
    )

    reference = CompositeMemory(
        [VectorMemory(raw, name="dense"), LexicalMemory(raw, name="lexical")],
        reranker=functools.partial(
            rrf_rerank,
            weights={"dense": alpha, "lexical": 1 - alpha},
            constant=HYBRID_RRF_CONSTANT,
            ties=HYBRID_TIES,
        ),
    )
    # The texts are distinct, so the composite's merge joins only a node's two copies;
    # asked for HYBRID_DEPTH, it reads each half that deep, as the hybrid does for 5.
    want = (await reference.query(query, k=HYBRID_DEPTH, ctx=Ctx(scope=ACME)))[:5]
    assert got.ids == [item.id for item in want]
    assert got.similarities == pytest.approx([item.score for item in want], rel=1e-12)
    assert len(set(got.ids or [])) == 5  # a node found by both halves is one result
    assert [n.node_id for n in got.nodes or []] == got.ids
    await raw.close()


async def test_hybrid_keeps_two_nodes_with_the_same_text_apart(tmp_path: Path) -> None:
    raw = SQLiteVectorStore(tmp_path / "d.db", embedder=HashingEmbedder(dim=256))
    store = AgentkitVectorStore(raw)
    twin = "Refunds need the original receipt."
    await store.async_add(
        [*_nodes(), TextNode(id_="copy-a", text=twin), TextNode(id_="copy-b", text=twin)]
    )
    got = await store.aquery(
        VectorStoreQuery(query_str="original receipt", similarity_top_k=4, mode="hybrid")
    )
    assert {"n1", "copy-a", "copy-b"} <= set(got.ids or [])
    assert len(got.ids or []) == len(set(got.ids or [])) == 4  # exactly top-k, each once
    assert got.similarities == sorted(got.similarities or [], reverse=True)
    with pytest.raises(InvalidArgument, match="alpha"):
        await store.aquery(
            VectorStoreQuery(query_str="receipt", similarity_top_k=2, mode="hybrid", alpha=1.5)
        )
    await raw.close()
