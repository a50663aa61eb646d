"""Adapters from a MemorySource to the request builder's grounding hooks.

Must not import agentkit.capabilities: that package imports MemoryItem from here, and
the pair would cycle. The return types are therefore spelled structurally.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from agentkit.kernel.ctx import Ctx
from agentkit.kernel.errors import InvalidArgumentType
from agentkit.kernel.validate import check_k, check_where
from agentkit.state.memory._fanout import _check_member
from agentkit.state.memory._item import MemoryItem
from agentkit.state.memory._protocol import MemorySource


def render_grounding(items: Sequence[MemoryItem]) -> str:
    """``[source] content`` blocks separated by blank lines; ``""`` for none.

    The source tag is what lets a model cite; admission is decided before this runs.
    """
    return "\n\n".join(f"[{item.source}] {item.content}" for item in items)


def as_grounding_source(
    memory: MemorySource,
    *,
    k: int = 5,
    where: dict[str, Any] | None = None,
) -> Callable[[Ctx, str], Awaitable[Sequence[MemoryItem]]]:
    """A closure that recalls ``k`` items for the user task, unrendered.

    Rendering is left to the request builder, downstream of its admission filter,
    so a rule such as "drop model-authored memories" sees items rather than text.
    ``k`` and ``where`` are checked and fixed here, at wiring time.

    Args:
        memory: The source or stack to recall from.
        k: How many items each call recalls.
        where: A filter every call applies.

    Returns:
        ``await ground(ctx, task)``: the items recalled for ``task`` in ``ctx``'s scope.

    Raises:
        InvalidArgumentType: ``memory`` is not a MemorySource, or a bad ``k`` or
            ``where`` type.
        InvalidArgument: ``k`` below 1.
    """
    _check_member(memory, "memory")
    k = check_k(k)
    fixed = check_where(where)

    async def ground(ctx: Ctx, task: str) -> Sequence[MemoryItem]:
        return await memory.query(
            task, k=k, ctx=ctx, where=None if fixed is None else dict(fixed)
        )

    return ground


def as_grounder(
    memory: MemorySource,
    *,
    k: int = 5,
    where: dict[str, Any] | None = None,
    format: Callable[[list[MemoryItem]], str] | None = None,
) -> Callable[[Ctx, str], Awaitable[str]]:
    """A closure that recalls for the user task and renders to prompt text.

    ``format`` replaces [`render_grounding`][agentkit.state.memory.render_grounding]
    when the prompt wants another shape. For query rewriting (HyDE, decomposition)
    wrap the memory, not this closure.

    Args:
        memory: The source or stack to recall from.
        k: How many items each call recalls.
        where: A filter every call applies.
        format: Renders the items to text; ``None`` uses ``render_grounding``.

    Returns:
        ``await ground(ctx, task)``: the rendered text for ``task`` in ``ctx``'s scope.

    Raises:
        InvalidArgumentType: A ``format`` that is not callable, or the errors of
            ``as_grounding_source``.
    """
    if format is not None and not callable(format):
        raise InvalidArgumentType(f"format must be a callable or None, got {type(format).__name__}")
    fetch = as_grounding_source(memory, k=k, where=where)
    render: Callable[[list[MemoryItem]], str] = format or render_grounding

    async def ground(ctx: Ctx, task: str) -> str:
        return render(list(await fetch(ctx, task)))

    return ground
