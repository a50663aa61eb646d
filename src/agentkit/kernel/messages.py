"""The message shape a Compactor works on."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Message:
    """One chat message: who said it, and what.

    The least a compactor needs to summarise or trim a turn; ``CompactedMemory``
    hands each item's content over as ``Message("user", content)``.

    Args:
        role: Who said it (``"user"``, ``"assistant"``, ``"system"``, ...).
        content: The text.
    """

    role: str
    content: str
