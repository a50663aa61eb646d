"""A framework's score, as agentkit takes it: a plain finite float, or no score at all.

Stores and rerankers hand back numpy floats, strings, NaN and infinities; a bad value
read off a framework object means "the framework gave no score", never an error,
because the item itself is still good.
"""

from __future__ import annotations

import math
import numbers

__all__ = ["usable_score"]


def usable_score(value: object) -> float | None:
    """``value`` as a plain float, or ``None`` when it is not a finite real number."""
    if value is None or isinstance(value, bool) or not isinstance(value, numbers.Real):
        return None
    score = float(value)
    return score if math.isfinite(score) else None
