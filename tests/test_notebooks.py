"""The notebooks run offline top to bottom, and are published with what they print.

The docs site renders notebooks/*.ipynb as committed (mkdocs-jupyter, not executed at
build time), so the committed outputs are what a reader sees. Each notebook is executed
here, from a scratch directory, and what it prints must equal what is committed: a
notebook whose code changed without its outputs (or whose behaviour drifted) fails.
After changing one, refresh the committed outputs with

    python tests/test_notebooks.py

Each notebook also says what to install, and must import nothing else: every module it
imports is provided by the distributions in its ``pip install`` line (and what they
depend on), as a user installing from the package index would have them.
"""

from __future__ import annotations

import ast
import importlib.metadata as md
import re
import sys
import tempfile
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbclient import NotebookClient
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
# Our own distributions: their requirements come from the pyproject.toml files here
# (the ones being tested), not from whatever version is installed.
OWN = {
    "agentkit-memory": ROOT / "pyproject.toml",
    "agentkit-langchain": ROOT / "bridges/langchain/pyproject.toml",
    "agentkit-llamaindex": ROOT / "bridges/llamaindex/pyproject.toml",
}
OWN_MODULES = {
    "agentkit": "agentkit-memory",
    "agentkit_langchain": "agentkit-langchain",
    "agentkit_llamaindex": "agentkit-llamaindex",
}


def _execute(path: Path, cwd: Path) -> Any:
    nb = nbformat.read(path, as_version=4)  # type: ignore[no-untyped-call]
    NotebookClient(
        nb,
        kernel_name="python3",
        timeout=120,  # per cell: a hung cell fails the test instead of the suite
        startup_timeout=120,
        resources={"metadata": {"path": str(cwd)}},
    ).execute()
    return nb


def _shown(nb: Any) -> list[list[tuple[str, str]]]:
    """Per code cell, what a reader sees: printed text, results, errors (not stderr)."""
    cells = []
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        shown: list[tuple[str, str]] = []
        for out in cell.get("outputs", []):
            if out.output_type == "stream" and out.name == "stdout":
                if shown and shown[-1][0] == "stdout":  # how prints split into chunks varies
                    shown[-1] = ("stdout", shown[-1][1] + out.text)
                else:
                    shown.append(("stdout", out.text))
            elif out.output_type in ("execute_result", "display_data"):
                shown.append(("result", out.data.get("text/plain", "")))
            elif out.output_type == "error":
                shown.append(("error", f"{out.ename}: {out.evalue}"))
        cells.append(shown)
    return cells


def _printed(nb: Any) -> str:
    return "".join(text for cell in _shown(nb) for kind, text in cell if kind == "stdout")


Run = Callable[[str], tuple[Any, Path]]


@pytest.fixture(scope="module")
def executed(tmp_path_factory: pytest.TempPathFactory) -> Run:
    """Executes a notebook once per module: (the executed notebook, its directory)."""
    runs: dict[str, tuple[Any, Path]] = {}

    def run(name: str) -> tuple[Any, Path]:
        if name not in runs:
            cwd = tmp_path_factory.mktemp(name)
            runs[name] = (_execute(ROOT / "notebooks" / f"{name}.ipynb", cwd), cwd)
        return runs[name]

    return run


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_published_outputs_are_what_the_notebook_prints(path: Path, executed: Run) -> None:
    fresh, _ = executed(path.stem)
    committed = nbformat.read(path, as_version=4)  # type: ignore[no-untyped-call]
    shown = _shown(committed)
    assert not any(kind == "error" for cell in _shown(fresh) for kind, _ in cell)
    # every step that prints has its output published
    assert sum(1 for cell in shown if cell) >= len(shown) - 1, "cells without outputs"
    assert shown == _shown(fresh), (
        f"{path.name}: committed outputs differ from a fresh run; "
        "refresh them with `python tests/test_notebooks.py`"
    )


def test_langchain_migration_keeps_ids_and_files(executed: Run) -> None:
    nb, cwd = executed("langchain-migration")
    printed = _printed(nb)
    assert "same ids, same files as before" in printed
    assert "acme -> [('n1', 'acme has a 30 day refund extension')]" in printed
    # step 5, the one-line path: only the store class changed
    assert "one class changed: same ids, same files, now stored in .agentkit/memory.db" in printed
    assert "acme -> [('acme-1', 'acme/notes.md')]" in printed
    assert (cwd / ".agentkit" / "memory.db").is_file()


def test_llamaindex_retriever_shows_where_every_passage_came_from(executed: Run) -> None:
    nb, cwd = executed("llamaindex-retriever")
    outputs = _printed(nb)
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
    assert (cwd / ".agentkit" / "memory.db").is_file()


def _imports(nb: Any) -> set[str]:
    """Top-level modules the notebook's code cells import."""
    flags = ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
    found: set[str] = set()
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        tree = compile(cell.source, "<cell>", "exec", flags=flags)
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                found |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                found.add(node.module.split(".")[0])
    return found - set(sys.stdlib_module_names)


def _requires(dist: str) -> list[str]:
    if dist in OWN:
        project = tomllib.loads(OWN[dist].read_text(encoding="utf-8"))["project"]
        return list(project.get("dependencies", []))
    return md.requires(dist) or []


def _closure(roots: list[str]) -> set[str]:
    """The distributions ``pip install ROOTS`` brings, by normalised name."""
    seen: set[str] = set()
    todo = [Requirement(r) for r in roots]
    while todo:
        req = todo.pop()
        name = _norm(req.name)
        if name in seen:
            continue
        seen.add(name)
        for dep in _requires(req.name):
            parsed = Requirement(dep)
            if parsed.marker is None or parsed.marker.evaluate({"extra": ""}):
                todo.append(parsed)
            elif any(parsed.marker.evaluate({"extra": e}) for e in req.extras):
                todo.append(parsed)
    return seen


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _installs(nb: Any) -> list[str]:
    lines = [
        m.group(1)
        for cell in nb.cells
        if cell.cell_type == "markdown"
        for m in re.finditer(r"`pip install ([^`]+)`", cell.source)
    ]
    assert len(lines) == 1, "say once, in a markdown cell, what to `pip install`"
    return [arg.strip("'\"") for arg in lines[0].split()]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_a_notebook_imports_only_what_it_says_to_install(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)  # type: ignore[no-untyped-call]
    installed = _closure(_installs(nb))
    providers = md.packages_distributions()
    missing = {}
    for module in sorted(_imports(nb)):
        dists = [OWN_MODULES[module]] if module in OWN_MODULES else providers.get(module, [])
        assert dists, f"{path.name}: nothing installed provides {module}"
        if not {_norm(d) for d in dists} & installed:
            missing[module] = dists
    assert not missing, f"{path.name} imports {missing} but its pip install line does not bring it"


def test_the_install_check_notices_an_undeclared_import() -> None:
    # The splitter comes with langchain-text-splitters, not with the bridge alone.
    assert "langchain-text-splitters" not in _closure(["agentkit-langchain"])
    both = _closure(["agentkit-langchain", "langchain-text-splitters"])
    assert "langchain-text-splitters" in both
    assert "langchain-core" in _closure(["agentkit-langchain"])


def _refresh() -> None:
    """Execute every notebook and write it back with its outputs (stderr left out)."""
    for path in NOTEBOOKS:
        with tempfile.TemporaryDirectory() as scratch:
            nb = _execute(path, Path(scratch))
        for cell in nb.cells:
            if cell.cell_type == "code":
                cell.outputs = [
                    out
                    for out in cell.outputs
                    if not (out.output_type == "stream" and out.name == "stderr")
                ]
                cell.metadata.pop("execution", None)
        nb.metadata.pop("widgets", None)
        nbformat.write(nb, path)  # type: ignore[no-untyped-call]
        print("refreshed", path.relative_to(ROOT))


if __name__ == "__main__":
    _refresh()
