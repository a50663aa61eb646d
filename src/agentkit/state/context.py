"""WorkingContext: the run's mutable working state."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(eq=False)
class WorkingContext:
    """What a run is holding right now.

    ``scratchpad`` is a plain dict that the cognition reads and writes freely;
    ScratchpadMemory exposes it as a queryable source.
    """

    scratchpad: dict[str, Any] = field(default_factory=dict)
