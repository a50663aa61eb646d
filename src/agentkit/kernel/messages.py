"""The message shape a Compactor works on."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Message:
    """One chat message: who said it, and what."""

    role: str
    content: str
