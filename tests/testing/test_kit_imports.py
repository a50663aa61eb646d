"""agentkit.testing imports with pytest beside agentkit-memory's own dependencies only."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

# Everything an extra (test, import, postgres, embeddings, otel, mcp, bench) brings.
OPTIONAL = [
    "hypothesis", "chromadb", "faiss", "langchain_core", "langchain_community",
    "llama_index", "qdrant_client", "psycopg", "pgvector", "torch", "sentence_transformers",
    "opentelemetry", "mcp", "matplotlib", "agentkit_langchain", "agentkit_llamaindex",
]


def test_the_kit_needs_no_extra_beyond_pytest() -> None:
    code = textwrap.dedent(
        f"""
        import sys
        for name in {OPTIONAL!r}:
            sys.modules[name] = None  # as if not installed: importing it raises
        import agentkit.testing as kit
        print(sorted(kit.__all__))
        """
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=os.environ.copy(),
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert "MemorySourceTests" in proc.stdout and "VectorPortTests" in proc.stdout
