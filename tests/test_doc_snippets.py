"""Every Python block in the README, docs/*.md and the bridges' READMEs runs as written.

A reader copies a block and runs it; a name the block never defines (``emb``, ``store``,
``prompt``...) is the first thing they hit. So each ```` ```python ```` block is run, in
a fresh interpreter per Markdown file, from a scratch directory, offline.

Conventions, set by an HTML comment on the line right above the block's opening fence
(invisible on GitHub and on the MkDocs site):

- no comment: the block is a script on its own. It runs in a namespace of its own, so
  it must import and define everything it uses (top-level ``await`` is not Python: use
  ``asyncio.run``).
- ``<!-- snippet: continues -->``: the block goes on from the previous Python block of
  the same file and runs in that block's namespace (a guide built up step by step).
- ``<!-- snippet: file examples/NAME.py -->``: the block is that whole file, character
  for character (the README's quickstart). The file itself is run below.
- ``<!-- snippet: excerpt examples/NAME.py -->``: for a block that cannot run offline
  as shown (it needs a chat model, a server, a database): its lines are a contiguous
  run of that file's lines (indentation aside), and the page names the file. The file
  is run below: ``examples/*.py`` here, ``examples/postgres/*.py`` by
  ``tests/postgres/test_examples_pg.py`` against the test server.
- ``<!-- snippet: output examples/NAME.py -->`` (on any block): the block is what that
  file prints.

Shell, JSON and plain blocks are not run. There is no skip list: an unmarked Python
block that fails, fails the test.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import textwrap
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted(
    [ROOT / "README.md", *(ROOT / "docs").glob("*.md"), *(ROOT / "bridges").glob("*/README.md")]
)
EXAMPLES = sorted((ROOT / "examples").glob("*.py"))
PG_EXAMPLES = sorted((ROOT / "examples" / "postgres").glob("*.py"))

_FENCE = re.compile(r"^(\s*)(`{3,})([\w+-]*)\s*$")
_MARKER = re.compile(r"^<!--\s*snippet:\s*(.*?)\s*-->$")
_KINDS = {"continues", "file", "excerpt", "output"}

# Runs the blocks of one page in order; compiled under the page's own path with the
# block's line offset, so a traceback points at the Markdown line that failed.
_RUNNER = """
import json, sys, traceback
namespace = None
for block in json.load(sys.stdin):
    if not block["continues"] or namespace is None:
        namespace = {"__name__": "__main__"}
    code = compile("\\n" * block["line"] + block["source"], block["page"], "exec")
    try:
        exec(code, namespace)
    except BaseException:
        traceback.print_exc()
        sys.exit(f"the block at {block['page']}:{block['line'] + 1} failed")
"""


@dataclass(frozen=True)
class Block:
    page: Path
    line: int  # 0-based index of the first line of the block's body
    lang: str
    source: str
    marker: tuple[str, str] | None  # (kind, argument)

    @property
    def where(self) -> str:
        page = self.page.relative_to(ROOT) if self.page.is_relative_to(ROOT) else self.page
        return f"{page}:{self.line + 1}"


def _blocks(page: Path) -> list[Block]:
    lines = page.read_text(encoding="utf-8").splitlines()
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        opened = _FENCE.match(lines[i])
        if not opened:
            i += 1
            continue
        _indent, ticks, lang = opened.groups()
        end = i + 1
        while end < len(lines) and not re.match(rf"^\s*{ticks}\s*$", lines[end]):
            end += 1
        assert end < len(lines), f"{page}:{i + 1}: unclosed code fence"
        previous = next((lines[j] for j in range(i - 1, -1, -1) if lines[j].strip()), "")
        found = _MARKER.match(previous.strip())
        marker = None
        if found:
            kind, _, argument = found.group(1).partition(" ")
            assert kind in _KINDS, f"{page}:{i}: unknown marker {kind!r}"
            marker = (kind, argument.strip())
        body = textwrap.dedent("\n".join(lines[i + 1 : end])) + "\n"
        blocks.append(Block(page, i + 1, lang, body, marker))
        i = end + 1
    return blocks


def _env() -> dict[str, str]:
    paths = [ROOT / "src", ROOT / "bridges/langchain/src", ROOT / "bridges/llamaindex/src"]
    pythonpath = os.pathsep.join([*map(str, paths), os.environ.get("PYTHONPATH", "")])
    return {
        **os.environ,
        "PYTHONPATH": pythonpath,
        "ANONYMIZED_TELEMETRY": "False",  # Chroma
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
    }


def _example_target(block: Block) -> Path:
    target = (ROOT / block.marker[1]).resolve() if block.marker else ROOT
    assert target in EXAMPLES or target in PG_EXAMPLES, (
        f"{block.where}: {block.marker} must name a file under examples/ that the tests run"
    )
    return target


@cache
def _run_example(path: Path) -> str:
    """What the file prints, run once per session from a scratch directory."""
    with tempfile.TemporaryDirectory() as scratch:
        proc = subprocess.run(
            [sys.executable, str(path)],
            cwd=scratch,
            env=_env(),
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert proc.returncode == 0, f"{path.relative_to(ROOT)} failed:\n{proc.stderr[-3000:]}"
    return proc.stdout


def _normalised(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip()]


def _runnable(page: Path) -> list[dict[str, object]]:
    """The page's Python blocks that run here, in order, as the runner reads them."""
    runnable: list[dict[str, object]] = []
    for block in _blocks(page):
        kind = block.marker[0] if block.marker else None
        if block.lang != "python" or kind in ("file", "excerpt"):
            continue  # not Python, or checked against its file below
        assert kind in (None, "continues"), f"{block.where}: {kind} on a python block"
        assert kind is None or runnable, f"{block.where}: continues, but nothing before it"
        runnable.append(
            {
                "page": str(page),
                "line": block.line,
                "source": block.source,
                "continues": kind == "continues",
            }
        )
    return runnable


def _run_blocks(blocks: list[dict[str, object]], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", _RUNNER],
        input=json.dumps(blocks),
        cwd=cwd,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )


RUN_PAGES = [page for page in PAGES if _runnable(page)]
MARKED = [b for page in PAGES for b in _blocks(page) if b.marker and b.marker[0] != "continues"]


@pytest.mark.parametrize("page", RUN_PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_python_block_runs_as_written(page: Path, tmp_path: Path) -> None:
    proc = _run_blocks(_runnable(page), tmp_path)
    assert proc.returncode == 0, proc.stderr[-4000:]


@pytest.mark.parametrize("block", MARKED, ids=lambda b: b.where)
def test_a_block_that_stands_for_a_file_matches_it(block: Block) -> None:
    kind = block.marker[0] if block.marker else ""
    target = _example_target(block)
    text = target.read_text(encoding="utf-8")
    name = str(target.relative_to(ROOT))
    if kind == "file":
        assert block.source == text, f"{block.where} is not a copy of {name}"
    elif kind == "excerpt":
        assert name in block.page.read_text(encoding="utf-8"), f"the page never names {name}"
        want, have = _normalised(block.source), _normalised(text)
        assert any(have[i : i + len(want)] == want for i in range(len(have) - len(want) + 1)), (
            f"{block.where} is not an excerpt of {name}"
        )
    else:
        assert target in EXAMPLES, f"{block.where}: output of a file this test runs"
        assert block.source == _run_example(target), f"{block.where} is not what {name} prints"


def test_the_readme_quickstart_is_the_example_file() -> None:
    # Its output is shown too; both are checked above through their markers.
    quickstart = [b for b in MARKED if b.page.name == "README.md" and b.page.parent == ROOT]
    assert {b.marker for b in quickstart} == {
        ("file", "examples/quickstart.py"),
        ("output", "examples/quickstart.py"),
    }


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_every_example_runs(path: Path) -> None:
    _run_example(path)


def test_the_quickstart_shows_the_memory_working() -> None:
    # The first output a user sees: the refund-related item of each source, each with
    # a score, and not the note that only shares "order 42".
    printed = _run_example(ROOT / "examples" / "quickstart.py")
    lines = printed.splitlines()
    assert len(lines) == 3, printed
    assert {re.match(r"\[(\w+)\s*\]", line).group(1) for line in lines} == {  # type: ignore[union-attr]
        "kb",
        "notes",
        "journal",
    }
    assert all("refund" in line.lower() for line in lines), printed
    assert "shipped on Monday" not in printed
    assert all(re.search(r"score=0\.\d{4}\)$", line) for line in lines), printed


def test_the_conventions_are_enforced(tmp_path: Path) -> None:
    # A block using a name it never defines fails; a continued block sees its
    # predecessor's names; a marker that points outside examples/ is refused.
    page = tmp_path / "page.md"
    page.write_text(
        "```python\nx = 1\n```\n\n<!-- snippet: continues -->\n```python\nprint(x + 1)\n```\n"
        "\n```python\nprint(emb)\n```\n\n<!-- snippet: excerpt README.md -->\n```python\n"
        "a\n```\n",
        encoding="utf-8",
    )
    blocks = _blocks(page)
    assert [b.marker for b in blocks] == [None, ("continues", ""), None, ("excerpt", "README.md")]
    payload: list[dict[str, object]] = [
        {"page": str(page), "line": b.line, "source": b.source, "continues": b.marker is not None}
        for b in blocks[:3]
    ]
    proc = _run_blocks(payload, tmp_path)
    assert proc.stdout == "2\n"
    assert "NameError: name 'emb' is not defined" in proc.stderr
    assert f'File "{page}", line 11' in proc.stderr  # the Markdown line that failed
    with pytest.raises(AssertionError, match="must name a file under examples/"):
        _example_target(blocks[3])
