"""agentkit-llamaindex: LlamaIndex and agentkit memory, both ways.

- ``AgentkitRetriever``: an agentkit MemorySource as a LlamaIndex retriever.
- ``LlamaIndexMemory``: a LlamaIndex retriever as a MemorySource.
- ``LlamaIndexVectorPort``: a LlamaIndex index or vector store as a VectorPort.
- ``PostprocessorReranker``: a node postprocessor as a CompositeMemory reranker.
- ``to_node`` / ``from_node``: the item mapping everything above uses.
- ``AgentkitMemoryBlock``: recall from agentkit inside LlamaIndex's ``Memory``.
- ``AgentkitEmbedding``: an agentkit Embedder as a LlamaIndex embed model.
- ``AgentkitVectorStore``: an agentkit store as a LlamaIndex vector store (the one-line
  migration), and ``LlamaIndexEmbedder``: a LlamaIndex embed model as an agentkit Embedder.
"""

from agentkit_llamaindex.agentkit_vectorstore import AgentkitVectorStore, LlamaIndexEmbedder
from agentkit_llamaindex.embedding import AgentkitEmbedding
from agentkit_llamaindex.mapping import from_node, to_node, to_nodes
from agentkit_llamaindex.memory import LlamaIndexMemory
from agentkit_llamaindex.memory_block import AgentkitMemoryBlock
from agentkit_llamaindex.rerank import PostprocessorReranker
from agentkit_llamaindex.retriever import AgentkitRetriever
from agentkit_llamaindex.vectorstore import LlamaIndexVectorPort

# The one place the version lives: the build reads it (pyproject's dynamic version).
__version__ = "0.1.0"

__all__ = [
    "AgentkitEmbedding",
    "AgentkitMemoryBlock",
    "AgentkitRetriever",
    "AgentkitVectorStore",
    "LlamaIndexEmbedder",
    "LlamaIndexMemory",
    "LlamaIndexVectorPort",
    "PostprocessorReranker",
    "from_node",
    "to_node",
    "to_nodes",
]
