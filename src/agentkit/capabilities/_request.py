"""RequestBuilder: task plus admitted, rendered grounding -> the messages to send."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TypeAlias

from agentkit.kernel.ctx import Ctx
from agentkit.kernel.errors import InvalidArgumentType
from agentkit.kernel.messages import Message
from agentkit.state.memory import MemoryItem, render_grounding

_Grounder: TypeAlias = Callable[[Ctx, str], Awaitable[str]]
_GroundingSource: TypeAlias = Callable[[Ctx, str], Awaitable[Sequence[MemoryItem]]]

#: Recall already rendered to prompt text (what ``as_grounder`` returns).
Grounder: TypeAlias = _Grounder
#: Recall as records, rendered later by the builder (what ``as_grounding_source`` returns).
GroundingSource: TypeAlias = _GroundingSource


class RequestBuilder:
    """Assemble a model request: ``[system?, grounding?, task]``.

    Grounding is recalled for the task, filtered item by item through
    ``admit`` (so a rule like "drop model-authored memories" sees records, not
    joined text), rendered by ``render``, and sent as its own ``user`` message
    ahead of the task. It is deliberately not a ``system`` message: recalled
    text is data from outside the trust boundary and must not borrow the
    authority of instructions. Nothing admitted, or an empty rendering, means
    no grounding message at all.
    """

    Grounder: TypeAlias = _Grounder
    GroundingSource: TypeAlias = _GroundingSource

    def __init__(
        self,
        *,
        grounding: _GroundingSource | None = None,
        admit: Callable[[MemoryItem], bool] | None = None,
        render: Callable[[Sequence[MemoryItem]], str] = render_grounding,
        system: str | None = None,
    ) -> None:
        for label, value in (("grounding", grounding), ("admit", admit)):
            if value is not None and not callable(value):
                raise InvalidArgumentType(
                    f"{label} must be callable or None, got {type(value).__name__}"
                )
        if not callable(render):
            raise InvalidArgumentType(f"render must be callable, got {type(render).__name__}")
        if system is not None and not isinstance(system, str):
            raise InvalidArgumentType(f"system must be a str or None, got {type(system).__name__}")
        self.grounding = grounding
        self.admit = admit
        self.render = render
        self.system = system

    async def build(self, ctx: Ctx, task: str) -> list[Message]:
        """The messages a model would be sent for ``task``."""
        if not isinstance(task, str):
            raise InvalidArgumentType(f"task must be a str, got {type(task).__name__}")
        messages: list[Message] = []
        if self.system:
            messages.append(Message("system", self.system))
        if self.grounding is not None:
            items = list(await self.grounding(ctx, task))
            if self.admit is not None:
                items = [item for item in items if self.admit(item)]
            rendered = self.render(items) if items else ""
            if rendered:
                messages.append(Message("user", rendered))
        messages.append(Message("user", task))
        return messages
