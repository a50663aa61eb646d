"""FunctionTool: wrap a plain function as a Tool."""

from __future__ import annotations

import asyncio
import functools
import inspect
from collections.abc import Callable, Mapping
from typing import Any

from agentkit.kernel.ctx import Ctx
from agentkit.kernel.errors import InvalidArgumentType


def _is_async(fn: Callable[..., Any]) -> bool:
    while isinstance(fn, functools.partial):
        fn = fn.func
    if inspect.iscoroutinefunction(fn):
        return True
    # A callable object whose __call__ is async counts too.
    return not inspect.isroutine(fn) and inspect.iscoroutinefunction(type(fn).__call__)


class FunctionTool:
    """A sync or async callable exposed as a Tool.

    ``invoke`` calls ``fn(**args)``. A sync ``fn`` runs in a worker thread so a
    slow or blocking function never stalls the event loop; an async one is
    awaited directly. ``name`` defaults to ``fn.__name__`` and ``description``
    to its docstring.
    """

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
    ) -> None:
        if not callable(fn):
            raise InvalidArgumentType(f"fn must be callable, got {type(fn).__name__}")
        if name is None:
            name = getattr(fn, "__name__", None) or type(fn).__name__
        if not isinstance(name, str) or not name:
            raise InvalidArgumentType(f"name must be a non-empty str, got {name!r}")
        if description is None:
            description = inspect.getdoc(fn) or ""
        if not isinstance(description, str):
            raise InvalidArgumentType(
                f"description must be a str, got {type(description).__name__}"
            )
        self.fn = fn
        self.name = name
        self.description = description
        self._async = _is_async(fn)

    def __repr__(self) -> str:
        return f"FunctionTool(name={self.name!r})"

    async def invoke(self, args: Mapping[str, Any], *, ctx: Ctx) -> Any:
        """Call ``fn(**args)``; ``ctx`` is accepted for the Tool protocol."""
        if not isinstance(args, Mapping):
            raise InvalidArgumentType(f"args must be a mapping, got {type(args).__name__}")
        kwargs: dict[str, Any] = {}
        for key, value in args.items():
            if not isinstance(key, str):
                raise InvalidArgumentType(f"args keys must be str, got {type(key).__name__}")
            kwargs[key] = value
        if self._async:
            return await self.fn(**kwargs)
        result = await asyncio.to_thread(self.fn, **kwargs)
        if inspect.isawaitable(result):
            result = await result
        return result
