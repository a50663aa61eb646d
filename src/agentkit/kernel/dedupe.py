"""The keys a memory merge stamps on its survivors, and how a writer keeps them out.

``dedupe_sources`` and ``dedupe_count`` describe one query's merge: which sources held
a copy of a fact and how many copies collapsed into the item. Stored with a row they
would come back on every later recall as if another merge had just happened, and that
merge would add them up again. So every write path that persists metadata (the memory
sources, the vector stores, the bridges' ports) stores :func:`without_dedupe_stamps`.
It lives in the kernel because the stores below ``agentkit.state`` need it too.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

DEDUPE_KEYS: tuple[str, ...] = ("dedupe_sources", "dedupe_count")


def without_dedupe_stamps(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """A plain ``dict`` copy of ``metadata`` minus the merge's stamps."""
    out = dict(metadata)
    for key in DEDUPE_KEYS:
        out.pop(key, None)
    return out
