"""agentkit-langchain: LangChain and agentkit-memory, both ways.

* ``AgentkitRetriever`` - an agentkit memory stack as a LangChain retriever.
* ``LangChainMemory`` - a LangChain retriever as an agentkit MemorySource.
* ``LangChainVectorPort`` - a LangChain VectorStore as an agentkit VectorPort.
* ``CompressorReranker`` - a LangChain document compressor as a CompositeMemory reranker.
* ``to_document`` / ``from_document`` - the item mapping (exact round trip).
* ``AgentkitEmbeddings`` - an agentkit Embedder as LangChain Embeddings (offline).
* ``AgentkitVectorStore`` - an agentkit store as a LangChain VectorStore (the one-line
  migration), and ``LangChainEmbedder`` - LangChain Embeddings as an agentkit Embedder.
* ``AgentkitStore`` - an agentkit store as a LangGraph ``BaseStore`` (extra below).
* ``LangGraphStoreMemory`` - a LangGraph store namespace as a MemorySource, and
  ``AgentkitMemoryMiddleware`` - agentkit memory in a LangChain v1 agent; both need
  the ``agentkit-langchain[langgraph]`` extra, so they load on first use and stay
  out of ``__all__`` (a star import must work without the extra).
"""

from typing import TYPE_CHECKING, Any

from agentkit_langchain.agentkit_vectorstore import AgentkitVectorStore, LangChainEmbedder
from agentkit_langchain.embeddings import AgentkitEmbeddings
from agentkit_langchain.mapping import from_document, to_document
from agentkit_langchain.memory import LangChainMemory
from agentkit_langchain.rerank import CompressorReranker
from agentkit_langchain.retriever import AgentkitRetriever
from agentkit_langchain.vectorstore import LangChainVectorPort

if TYPE_CHECKING:
    from agentkit_langchain.langgraph_memory import LangGraphStoreMemory as LangGraphStoreMemory
    from agentkit_langchain.langgraph_store import AgentkitStore as AgentkitStore
    from agentkit_langchain.middleware import AgentkitMemoryMiddleware as AgentkitMemoryMiddleware

# The one place the version lives: the build reads it (pyproject's dynamic version).
__version__ = "0.1.0"

_NEEDS_LANGGRAPH = {
    "LangGraphStoreMemory": "agentkit_langchain.langgraph_memory",
    "AgentkitStore": "agentkit_langchain.langgraph_store",
    "AgentkitMemoryMiddleware": "agentkit_langchain.middleware",
}


def __getattr__(name: str) -> Any:
    module = _NEEDS_LANGGRAPH.get(name)
    if module is None:
        raise AttributeError(f"module 'agentkit_langchain' has no attribute {name!r}")
    import importlib

    try:
        loaded = importlib.import_module(module)
    except ImportError as exc:
        raise ImportError(
            f"{name} needs LangGraph and LangChain v1: pip install "
            f"'agentkit-langchain[langgraph]' ({exc})"
        ) from exc
    return getattr(loaded, name)


__all__ = [
    "AgentkitEmbeddings",
    "AgentkitRetriever",
    "AgentkitVectorStore",
    "CompressorReranker",
    "LangChainEmbedder",
    "LangChainMemory",
    "LangChainVectorPort",
    "from_document",
    "to_document",
]
