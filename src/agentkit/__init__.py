"""agentkit: the memory/RAG seam of an agent framework."""

__version__ = "0.1.0"
