"""PostprocessorReranker in a CompositeMemory; the memory block inside LlamaIndex's Memory."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pytest
from agentkit_llamaindex import AgentkitMemoryBlock, PostprocessorReranker
from llama_index.core.llms import ChatMessage
from llama_index.core.memory import Memory
from llama_index.core.postprocessor import SimilarityPostprocessor
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import MetadataMode, NodeWithScore, QueryBundle, TextNode

from agentkit.kernel import Ctx, Scope
from agentkit.state.memory import CompositeMemory, MemoryItem


class Fixed:
    def __init__(self, name: str, items: list[MemoryItem]) -> None:
        self.name = name
        self.items = items

    async def query(self, query: str, *, k: int, ctx: Ctx, where: Any = None) -> list[MemoryItem]:
        return [i for i in self.items if ctx.scope.org_id in (None, i.metadata.get("org"))][:k]

    async def write(self, items: Iterable[MemoryItem], *, ctx: Ctx) -> None:
        return None


class LengthReranker(BaseNodePostprocessor):
    """Shortest text first; rebuilds nodes and sets a new score, like many rerankers do."""

    def _postprocess_nodes(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
    ) -> list[NodeWithScore]:
        ranked = sorted(nodes, key=lambda n: len(n.node.get_content()))
        return [
            NodeWithScore(
                node=TextNode(id_=n.node.node_id, text=n.node.get_content()), score=1.0 / (1 + i)
            )
            for i, n in enumerate(ranked)
        ]


ITEMS = [
    MemoryItem("a fairly long passage about refunds", "vec", 0.9, {"page": 1}, id="v1"),
    MemoryItem("short refund", "vec", 0.4, {"page": 2}, id="v2"),
    MemoryItem("medium refund text", "journal", None, {"page": 3}),
]


async def test_similarity_postprocessor_filters_and_keeps_originals() -> None:
    rerank = PostprocessorReranker(SimilarityPostprocessor(similarity_cutoff=0.5))
    out = await rerank("refund", list(ITEMS), k=5)
    # the cutoff dropped the low score and the None score; the survivor is the original
    assert out == [ITEMS[0]]


async def test_custom_postprocessor_orders_and_rescores_in_a_composite() -> None:
    stack = CompositeMemory(
        [Fixed("vec", ITEMS[:2]), Fixed("journal", ITEMS[2:])],
        reranker=PostprocessorReranker(LengthReranker()),
    )
    out = await stack.query("refund", k=2, ctx=Ctx())
    assert [i.content for i in out] == ["short refund", "medium refund text"]
    assert [i.score for i in out] == [1.0, 0.5]
    # ids, sources and metadata survived a postprocessor that rebuilt every node
    assert [(i.id, i.source, dict(i.metadata)) for i in out] == [
        ("v2", "vec", {"page": 2}),
        (None, "journal", {"page": 3}),
    ]


async def test_reranker_validates() -> None:
    with pytest.raises(TypeError):
        PostprocessorReranker(object())  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        await PostprocessorReranker(SimilarityPostprocessor())("q", list(ITEMS), k=0)
    assert await PostprocessorReranker(SimilarityPostprocessor())("q", [], k=3) == []


async def test_memory_block_feeds_llamaindex_memory() -> None:
    facts = Fixed(
        "facts",
        [
            MemoryItem("acme's refund window is 30 days", "facts", 0.9, {"org": "acme"}, id="f1"),
            MemoryItem("globex never refunds", "facts", 0.8, {"org": "globex"}, id="f2"),
        ],
    )
    block = AgentkitMemoryBlock(memory=facts, k=3, ctx=Ctx(Scope("acme", "support")), priority=0)
    memory = Memory.from_defaults(session_id="s1", token_limit=4000, memory_blocks=[block])
    await memory.aput(ChatMessage(role="user", content="hello"))
    messages = await memory.aget(input="what is the refund window?")
    text = "\n".join(m.content or "" for m in messages)
    assert "[facts] acme's refund window is 30 days" in text
    assert "globex" not in text  # the block queried as the acme tenant only
    items = await block.recall([ChatMessage(role="user", content="refund")])
    assert [i.id for i in items] == ["f1"]


def test_memory_block_sync_get_and_validation() -> None:
    block = AgentkitMemoryBlock(memory=Fixed("facts", [MemoryItem("x fact", "facts")]), k=1)
    memory = Memory.from_defaults(session_id="s2", memory_blocks=[block])
    messages = memory.get(input="anything")
    assert any("[facts] x fact" in (m.content or "") for m in messages)
    with pytest.raises(ValueError):
        AgentkitMemoryBlock(memory=object())
    with pytest.raises(ValueError):
        AgentkitMemoryBlock(memory=Fixed("f", []), k=0)


class Reverse(BaseNodePostprocessor):
    """Reorders without touching scores."""

    def _postprocess_nodes(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
    ) -> list[NodeWithScore]:
        return list(reversed(nodes))


async def test_scores_change_only_where_the_postprocessor_set_one() -> None:
    out = await PostprocessorReranker(Reverse())("refund", list(ITEMS), k=2)
    assert out == [ITEMS[2], ITEMS[1]]  # the originals, None score included
    assert out[0] is ITEMS[2]


# --- rerankers that rebuild, repeat or reorder nodes ------------------------------------

POOL = [
    MemoryItem("refunds within 30 days", "vec", 0.3, {"page": 1}, id="r1"),
    MemoryItem("shipping takes a week", "vec", 0.9, {"page": 2}, id="s1"),
    MemoryItem("refund requests by email", "journal", None, {"page": 3}),
    MemoryItem("returns need a receipt", "vec", 0.6, {"page": 4}, id="t1"),
    MemoryItem("store hours are nine to five", "notes", 0.1, {}, id="h1"),
]


async def test_long_context_reorder_gives_the_originals_in_its_order() -> None:
    from llama_index.core.postprocessor import LongContextReorder

    # What LongContextReorder does with plain nodes carrying the same scores.
    plain = [NodeWithScore(node=TextNode(text=i.content), score=i.score) for i in POOL]
    reordered = LongContextReorder().postprocess_nodes(plain, query_str="refund")
    expected = [next(i for i in POOL if i.content == n.node.get_content()) for n in reordered]
    out = await PostprocessorReranker(LongContextReorder())("refund", list(POOL), k=5)
    assert out == expected and out != POOL
    assert all(o is e for o, e in zip(out, expected, strict=True))  # untouched originals
    assert (
        await PostprocessorReranker(LongContextReorder())("refund", list(POOL), k=2)
        == (expected[:2])
    )


class Rebuilder(BaseNodePostprocessor):
    """Rewrites every node: new id, summarised text, metadata copied (as LLM-based
    postprocessors do); scores by text length; repeats the best node and adds one
    node of its own."""

    def _postprocess_nodes(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
    ) -> list[NodeWithScore]:
        rebuilt = [
            NodeWithScore(
                node=TextNode(
                    text=f"summary: {n.node.get_content()[:6]}", metadata=n.node.metadata
                ),
                score=float(len(n.node.get_content())),
            )
            for n in nodes
        ]
        rebuilt.sort(key=lambda n: -(n.score or 0.0))
        extra = NodeWithScore(node=TextNode(text="an invented node"), score=99.0)
        return [rebuilt[0], extra, rebuilt[0], *rebuilt[1:], rebuilt[1]]


async def test_a_rebuilding_postprocessor_cannot_change_or_duplicate_items() -> None:
    out = await PostprocessorReranker(Rebuilder())("refund", list(POOL), k=10)
    by_length = sorted(POOL, key=lambda i: -len(i.content))
    assert [o.content for o in out] == [i.content for i in by_length]  # original text
    assert [o.id for o in out] == [i.id for i in by_length]  # original ids, None kept
    assert [o.score for o in out] == [float(len(i.content)) for i in by_length]  # its verdict
    assert [(o.source, dict(o.metadata)) for o in out] == [
        (i.source, dict(i.metadata)) for i in by_length
    ]


async def test_the_carried_position_is_hidden_from_llm_and_embed_text() -> None:
    seen: list[str] = []

    class Recorder(BaseNodePostprocessor):
        def _postprocess_nodes(
            self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
        ) -> list[NodeWithScore]:
            for n in nodes:
                seen.append(n.node.get_content(metadata_mode=MetadataMode.LLM))
                seen.append(n.node.get_content(metadata_mode=MetadataMode.EMBED))
            return nodes

    assert await PostprocessorReranker(Recorder())("q", list(POOL), k=5) == POOL
    assert len(seen) == 10 and all("page" in t or "store hours" in t for t in seen)
    assert not any("agentkit" in t for t in seen)


async def test_an_async_postprocessor_repeating_nodes() -> None:
    class Twice(BaseNodePostprocessor):
        def _postprocess_nodes(
            self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
        ) -> list[NodeWithScore]:
            raise AssertionError("the async path must be used")

        async def _apostprocess_nodes(
            self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
        ) -> list[NodeWithScore]:
            return [n for n in reversed(nodes) for _ in range(2)]

    out = await PostprocessorReranker(Twice())("q", list(POOL), k=3)
    assert out == [POOL[4], POOL[3], POOL[2]]


async def test_a_postprocessor_returning_non_nodes_is_named() -> None:
    class Broken(BaseNodePostprocessor):
        def _postprocess_nodes(
            self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
        ) -> list[NodeWithScore]:
            return [n.node for n in nodes]  # type: ignore[misc]

    with pytest.raises(TypeError, match="TextNode, not a NodeWithScore"):
        await PostprocessorReranker(Broken())("q", list(POOL), k=2)
