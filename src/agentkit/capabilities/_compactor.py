"""Compactors: shrink messages to fit a budget."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from agentkit.kernel.ctx import Ctx
from agentkit.kernel.errors import InvalidArgument, InvalidArgumentType
from agentkit.kernel.messages import Message

_ELLIPSIS = "…"


@runtime_checkable
class Compactor(Protocol):
    """Turns a list of messages into a shorter list that says the same, roughly."""

    async def compact(self, messages: Sequence[Message], *, ctx: Ctx) -> list[Message]: ...


class TruncatingCompactor:
    """Cut every message to at most ``max_chars`` characters, at a word boundary.

    No model involved, so it is free, deterministic and never invents text. A
    cut message ends in ``…`` (counted inside the budget) so a reader knows
    something was dropped; a message already within budget is returned as-is.
    A first word longer than the whole budget is cut mid-word rather than
    leaving nothing.
    """

    def __init__(self, max_chars: int = 2000) -> None:
        if isinstance(max_chars, bool) or not isinstance(max_chars, int):
            raise InvalidArgumentType(f"max_chars must be an int, got {type(max_chars).__name__}")
        if max_chars < 1:
            raise InvalidArgument(f"max_chars must be >= 1, got {max_chars}")
        self.max_chars = max_chars

    def __repr__(self) -> str:
        return f"TruncatingCompactor(max_chars={self.max_chars})"

    async def compact(self, messages: Sequence[Message], *, ctx: Ctx) -> list[Message]:
        out: list[Message] = []
        for i, message in enumerate(messages):
            if not isinstance(message, Message):
                raise InvalidArgumentType(
                    f"messages[{i}] must be a Message, got {type(message).__name__}"
                )
            content = self.truncate(message.content)
            out.append(message if content is message.content else Message(message.role, content))
        return out

    def truncate(self, text: str) -> str:
        """``text`` itself when it fits, else its longest whole-word prefix plus ``…``."""
        if len(text) <= self.max_chars:
            return text
        room = self.max_chars - len(_ELLIPSIS)
        head = text[: room + 1]
        # The character just past the room tells us whether the cut fell on a boundary.
        if head[room:].isspace():
            kept = head[:room]
        else:
            cut = head[:room]
            boundary = max(cut.rfind(" "), cut.rfind("\n"), cut.rfind("\t"))
            kept = cut[:boundary] if boundary > 0 else cut
        return kept.rstrip() + _ELLIPSIS
