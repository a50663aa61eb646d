"""PostprocessorReranker: any LlamaIndex node postprocessor as a CompositeMemory Reranker."""

from __future__ import annotations

from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import MetadataMode, NodeWithScore

from agentkit.interop import RERANK_KEY, Seen, reranked_items, run_blocking
from agentkit.kernel.errors import InvalidArgumentType
from agentkit.kernel.validate import check_k, check_query
from agentkit.state.memory import MemoryItem
from agentkit_llamaindex.mapping import to_nodes

__all__ = ["PostprocessorReranker"]


def _sync_only(postprocessor: BaseNodePostprocessor) -> bool:
    """Whether the postprocessor's async path is LlamaIndex's default (the sync one).

    ``_apostprocess_nodes`` is the hook LlamaIndex documents for postprocessor
    subclasses to override with a native async path; it is compared on the class,
    never called (nothing public says whether a postprocessor has one).
    """
    return type(postprocessor)._apostprocess_nodes is BaseNodePostprocessor._apostprocess_nodes


class PostprocessorReranker:
    """Rerank (or filter) a merged pool with a LlamaIndex ``BaseNodePostprocessor``.

    The items that come back are the ORIGINAL items, in the postprocessor's order,
    each once, cut to ``k``: a postprocessor that rebuilds nodes (new ids, new text)
    or repeats one cannot change or duplicate an item. Each node handed over carries
    its pool position in metadata (hidden from LLM and embed text); the matching is
    shared with the LangChain bridge. An item's score becomes the node's new score
    only where the postprocessor set one; a dropped node drops its item. Sync-only
    postprocessors run on the interop layer's thread pool, off the event loop.

    Args:
        postprocessor: Any LlamaIndex ``BaseNodePostprocessor``.

    Raises:
        InvalidArgumentType: ``postprocessor`` is not a ``BaseNodePostprocessor``; from a
            call, a postprocessor that returned something other than ``NodeWithScore``s.
    """

    def __init__(self, postprocessor: BaseNodePostprocessor) -> None:
        if not isinstance(postprocessor, BaseNodePostprocessor):
            raise InvalidArgumentType(
                "postprocessor must be a llama_index BaseNodePostprocessor, "
                f"got {type(postprocessor).__name__}"
            )
        self.postprocessor = postprocessor

    def __repr__(self) -> str:
        return f"PostprocessorReranker({type(self.postprocessor).__name__})"

    async def __call__(self, query: str, items: list[MemoryItem], *, k: int) -> list[MemoryItem]:
        query = check_query(query)
        k = check_k(k)
        pool = list(items)
        if not pool:
            return []
        nodes = to_nodes(pool)
        for position, scored in enumerate(nodes):
            node = scored.node
            node.metadata[RERANK_KEY] = position
            node.excluded_llm_metadata_keys.append(RERANK_KEY)
            node.excluded_embed_metadata_keys.append(RERANK_KEY)
        handed = [_seen(n) for n in nodes]  # before the postprocessor can touch them
        out: list[NodeWithScore]
        if _sync_only(self.postprocessor):
            postprocess = self.postprocessor.postprocess_nodes
            out = await run_blocking(lambda: postprocess(nodes, query_str=query))
        else:
            out = await self.postprocessor.apostprocess_nodes(nodes, query_str=query)
        return reranked_items(pool, handed, map(_seen, out), k=k)


def _seen(scored: object) -> Seen:
    if not isinstance(scored, NodeWithScore):
        raise InvalidArgumentType(
            f"the postprocessor returned a {type(scored).__name__}, not a NodeWithScore"
        )
    node = scored.node
    return Seen(
        node,
        slot=node.metadata.get(RERANK_KEY),
        key=node.node_id,
        text=node.get_content(metadata_mode=MetadataMode.NONE),
        score=scored.score,
    )
