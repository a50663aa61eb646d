"""The migration notebook runs, offline, top to bottom."""

from __future__ import annotations

from pathlib import Path

import nbformat
from nbclient import NotebookClient

NOTEBOOK = Path(__file__).resolve().parents[3] / "notebooks" / "llamaindex-retriever.ipynb"


def test_migration_notebook_executes(tmp_path: Path) -> None:
    nb = nbformat.read(NOTEBOOK, as_version=4)  # type: ignore[no-untyped-call]
    client = NotebookClient(
        nb,
        kernel_name="python3",
        timeout=120,  # per cell: a hung cell fails the test instead of the suite
        startup_timeout=120,
        resources={"metadata": {"path": str(tmp_path)}},
    )
    client.execute()
    outputs = "".join(
        out.get("text", "") for cell in nb.cells if cell.cell_type == "code" for out in cell.outputs
    )
    # each step printed ids and the source every passage came from
    for expected in ("policy-1", "notes ", "journal ", "docs ", "/notes/refunds.md"):
        assert expected in outputs
    assert "acme [('fact-1', 'Acme refunds go to store credit.')]" in outputs
    assert "globex [('fact-1', 'Globex refunds go back to the card.')]" in outputs
    assert "agentkit_source" not in outputs.split("what the LLM sees")[1].split("[(")[0]
    # step 5, the one-line path: only the vector store class changed
    assert "one class changed: same nodes, now stored in .agentkit/memory.db" in outputs
    assert "reopened ['policy-1', 'policy-2']" in outputs
    assert "acme ['acme-1']" in outputs
    assert (tmp_path / ".agentkit" / "memory.db").is_file()
