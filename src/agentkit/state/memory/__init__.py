"""agentkit.state.memory: one protocol, one composite, many sources.

Every source answers ``query(query, *, k, ctx, where=None)`` with ``MemoryItem``s and
takes ``write(items, *, ctx)``. Composites fan out and merge; decorators add one
concern each (scope, cache, compaction, read-only).
"""


from agentkit.kernel.errors import CompositeQueryError, CompositeWriteError, MemoryWriteRefused
from agentkit.state.memory._cached import CachedMemory
from agentkit.state.memory._compacted import CompactedMemory
from agentkit.state.memory._composite import CompositeMemory
from agentkit.state.memory._fanout import OnErrorPolicy
from agentkit.state.memory._grounding import as_grounder, as_grounding_source, render_grounding
from agentkit.state.memory._item import MemoryItem
from agentkit.state.memory._merge import DedupeMode
from agentkit.state.memory._protocol import MemorySource, Reranker
from agentkit.state.memory._readonly import OnWritePolicy, ReadOnlyMemory
from agentkit.state.memory._rerank import (
    HYBRID_RRF_CONSTANT,
    HYBRID_TIES,
    rrf_rerank,
    score_sort_rerank,
)
from agentkit.state.memory._scoped import ScopedMemory
from agentkit.state.memory._sequential import SequentialMemory
from agentkit.state.memory._sources.files import FileMemory
from agentkit.state.memory._sources.hybrid import (
    HYBRID_DEPTH,
    HybridHalf,
    HybridMemory,
    HybridMode,
    HybridResult,
)
from agentkit.state.memory._sources.journal import JournalMemory
from agentkit.state.memory._sources.lexical import LexicalMemory
from agentkit.state.memory._sources.partitioned import PerScopeMemory, files_per_scope
from agentkit.state.memory._sources.scratchpad import ScratchpadMemory
from agentkit.state.memory._sources.tool import ToolMemory, default_parse
from agentkit.state.memory._sources.vector import VectorMemory

__all__ = [
    "HYBRID_DEPTH",
    "HYBRID_RRF_CONSTANT",
    "HYBRID_TIES",
    "CachedMemory",
    "CompactedMemory",
    "CompositeMemory",
    "CompositeQueryError",
    "CompositeWriteError",
    "DedupeMode",
    "FileMemory",
    "HybridHalf",
    "HybridMemory",
    "HybridMode",
    "HybridResult",
    "JournalMemory",
    "LexicalMemory",
    "MemoryItem",
    "MemorySource",
    "MemoryWriteRefused",
    "OnErrorPolicy",
    "OnWritePolicy",
    "PerScopeMemory",
    "ReadOnlyMemory",
    "Reranker",
    "ScopedMemory",
    "ScratchpadMemory",
    "SequentialMemory",
    "ToolMemory",
    "VectorMemory",
    "as_grounder",
    "as_grounding_source",
    "default_parse",
    "files_per_scope",
    "render_grounding",
    "rrf_rerank",
    "score_sort_rerank",
]

