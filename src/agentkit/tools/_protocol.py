"""The Tool protocol: a named, described async callable."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

from agentkit.kernel.ctx import Ctx


@runtime_checkable
class Tool(Protocol):
    """Something an agent (or ToolMemory) can invoke with keyword arguments."""

    name: str
    description: str

    async def invoke(self, args: Mapping[str, Any], *, ctx: Ctx) -> Any: ...
