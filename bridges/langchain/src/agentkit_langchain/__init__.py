"""agentkit-langchain: LangChain and agentkit-memory, both ways.

* ``AgentkitRetriever`` - an agentkit memory stack as a LangChain retriever.
* ``LangChainMemory`` - a LangChain retriever as an agentkit MemorySource.
* ``LangChainVectorPort`` - a LangChain VectorStore as an agentkit VectorPort.
* ``CompressorReranker`` - a LangChain document compressor as a CompositeMemory reranker.
* ``to_document`` / ``from_document`` - the item mapping (exact round trip).
* ``AgentkitEmbeddings`` - an agentkit Embedder as LangChain Embeddings (offline).
"""

from agentkit_langchain.embeddings import AgentkitEmbeddings
from agentkit_langchain.mapping import from_document, to_document
from agentkit_langchain.memory import LangChainMemory
from agentkit_langchain.rerank import CompressorReranker
from agentkit_langchain.retriever import AgentkitRetriever
from agentkit_langchain.vectorstore import LangChainVectorPort

__all__ = [
    "AgentkitEmbeddings",
    "AgentkitRetriever",
    "CompressorReranker",
    "LangChainMemory",
    "LangChainVectorPort",
    "from_document",
    "to_document",
]
