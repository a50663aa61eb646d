"""The migration notebook runs top to bottom, offline, with its own assertions."""

from __future__ import annotations

from pathlib import Path

import nbformat
from nbclient import NotebookClient

NOTEBOOK = Path(__file__).resolve().parents[4] / "notebooks" / "langchain-migration.ipynb"


def test_migration_notebook_executes(tmp_path: Path) -> None:
    nb = nbformat.read(NOTEBOOK, as_version=4)
    client = NotebookClient(
        nb,
        timeout=120,
        kernel_name="python3",
        resources={"metadata": {"path": str(tmp_path)}},
    )
    client.execute()
    printed = "".join(
        output.get("text", "")
        for cell in nb.cells
        if cell.cell_type == "code"
        for output in cell.get("outputs", [])
    )
    assert "same ids, same files as before" in printed
    assert "acme -> [('n1', 'acme has a 30 day refund extension')]" in printed
    # step 5, the one-line path: only the store class changed
    assert "one class changed: same ids, same files, now stored in .agentkit/memory.db" in printed
    assert "acme -> [('acme-1', 'acme/notes.md')]" in printed
    assert (tmp_path / ".agentkit" / "memory.db").is_file()
