"""What both bridges need from agentkit, framework-free: one implementation each.

The sync runner (``run_sync``, ``run_blocking``), the tenancy codec for shared external
stores, the stores' filter dialects, and mapping reranked results back to items.
Nothing here imports LangChain or LlamaIndex.
"""

from agentkit.interop._runner import blocking_pool, run_blocking, run_sync

__all__ = [
    # _runner
    "blocking_pool",
    "run_blocking",
    "run_sync",
]
