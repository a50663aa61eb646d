"""docs/testing.md's walkthrough runs: its NotesMemory passes the kit it is tested with.

The page's first two Python blocks (the source, then its test class) are executed into
this module, so pytest collects ``TestNotesMemory`` from here exactly as a reader's own
test module would define it. An edit that breaks the example, or a kit change that the
example no longer satisfies, fails here.
"""

from __future__ import annotations

import re
from pathlib import Path

PAGE = Path(__file__).resolve().parents[2] / "docs" / "testing.md"
BLOCKS = re.findall(r"```python\n(.*?)```", PAGE.read_text(encoding="utf-8"), re.S)


def _block(marker: str) -> str:
    [code] = [b for b in BLOCKS if marker in b]
    return code


exec(_block("class NotesMemory:"), globals())
exec(_block("class TestNotesMemory("), globals())

