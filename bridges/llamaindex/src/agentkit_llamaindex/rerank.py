"""PostprocessorReranker: any LlamaIndex node postprocessor as a CompositeMemory Reranker."""

from __future__ import annotations

import dataclasses

from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import NodeWithScore

from agentkit.interop import run_blocking
from agentkit.kernel.errors import InvalidArgumentType
from agentkit.kernel.validate import check_k, check_query
from agentkit.state.memory import MemoryItem
from agentkit_llamaindex.mapping import from_node, to_nodes

__all__ = ["PostprocessorReranker"]


def _sync_only(postprocessor: BaseNodePostprocessor) -> bool:
    return type(postprocessor)._apostprocess_nodes is BaseNodePostprocessor._apostprocess_nodes


class PostprocessorReranker:
    """Rerank (or filter) a merged pool with a LlamaIndex ``BaseNodePostprocessor``.

    The items that come back are the ORIGINAL items, in the postprocessor's order and
    cut to ``k``: a postprocessor that rebuilds nodes cannot lose ids or metadata. An
    item's score becomes the node's new score only where the postprocessor left one;
    a dropped node drops its item. Sync-only postprocessors run on the bridge's pool.
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
        by_id = {n.node.node_id: item for n, item in zip(nodes, pool, strict=True)}
        out: list[NodeWithScore]
        if _sync_only(self.postprocessor):
            out = await run_blocking(
                lambda: self.postprocessor.postprocess_nodes(nodes, query_str=query)
            )
        else:
            out = await self.postprocessor.apostprocess_nodes(nodes, query_str=query)
        ranked: list[MemoryItem] = []
        taken: set[str] = set()
        for nws in out:
            node_id = nws.node.node_id
            original = by_id.get(node_id)
            if original is None:  # a rebuilt node: the stamps still say what it was
                original = from_node(nws)
            elif node_id in taken:
                continue
            taken.add(node_id)
            score = nws.score
            if score is not None and score != original.score:
                original = dataclasses.replace(original, score=float(score))
            ranked.append(original)
            if len(ranked) == k:
                break
        return ranked
