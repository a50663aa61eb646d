"""agentkit: the memory/RAG seam of an agent framework."""

# The one place the version lives: the build reads it (pyproject's dynamic version).
__version__ = "0.1.0"
