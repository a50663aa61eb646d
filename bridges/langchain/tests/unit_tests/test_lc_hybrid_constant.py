"""AgentkitStore fuses its hybrid search with agentkit's public hybrid RRF constant.

The one hybrid search (``HybridMemory``) and its constant live in
``agentkit.state.memory``; the LangGraph store must not reach into the CLI's private
modules (importing the bridge pulls in no CLI code), and the CLI and the store rank
with the same search.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from agentkit_langchain import AgentkitStore

from agentkit.state.memory import HYBRID_RRF_CONSTANT
from agentkit.vector import HashingEmbedder
from agentkit.vector.sqlite import SQLiteVectorStore


def test_importing_the_langgraph_store_loads_no_cli_code() -> None:
    probe = (
        "import sys, agentkit_langchain.langgraph_store as m; "
        "m.AgentkitStore; "
        "print(sorted(n for n in sys.modules if n.startswith('agentkit.cli')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]"


def test_the_one_hybrid_search_fuses_with_the_public_constant(tmp_path: Path) -> None:
    from agentkit.state.memory import HybridMemory

    store = SQLiteVectorStore(tmp_path / "c.db", embedder=HashingEmbedder(dim=8))
    assert HybridMemory(store).constant == HYBRID_RRF_CONSTANT


async def test_a_hit_first_in_both_halves_scores_two_reciprocal_ranks(tmp_path: Path) -> None:
    store = SQLiteVectorStore(tmp_path / "s.db", embedder=HashingEmbedder(dim=128))
    langgraph = AgentkitStore(store)
    await langgraph.aput(("docs",), "walrus", {"text": "walrus tusks and whiskers"})
    await langgraph.aput(("docs",), "otter", {"text": "otters float on their backs"})
    [first, second] = await langgraph.asearch(("docs",), query="walrus tusks", limit=2)
    assert first.key == "walrus"
    assert first.score == pytest.approx(2 / (HYBRID_RRF_CONSTANT + 1))
    assert second.score is not None and second.score < first.score
    await store.close()
