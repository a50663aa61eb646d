"""Issue 2: the README shows a quickstart that runs, built from the named pieces."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


def _quickstart() -> str:
    assert README.exists(), "README.md is missing"
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    assert blocks, "README has no python code block"
    return max(blocks, key=len)


def test_readme_quickstart_uses_the_promised_pieces() -> None:
    code = _quickstart()
    for name in ("CompositeMemory", "VectorMemory", "JournalMemory", "ReadOnlyMemory"):
        assert name in code, name
    assert "Scope(" in code or "ScopedMemory" in code


def test_readme_quickstart_runs(tmp_path: Path) -> None:
    code = _quickstart()
    proc = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
