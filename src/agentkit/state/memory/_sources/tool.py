"""ToolMemory: any Tool as a read-only knowledge probe, and its default parser."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from agentkit.kernel.ctx import Ctx
from agentkit.kernel.errors import AgentkitError, InvalidArgumentType
from agentkit.kernel.validate import check_k, check_query, check_score, check_where
from agentkit.observability import traced_memory
from agentkit.state.memory._item import MemoryItem
from agentkit.state.memory._sources._args import check_ctx, check_items

_PARAGRAPH = re.compile(r"\n\s*\n")
_CONTENT_KEYS = ("content", "text", "snippet")
# Placeholder source for items built outside a ToolMemory; ToolMemory restamps.
_PARSED_SOURCE = "tool"


@traced_memory(kind="client")
@dataclass
class ToolMemory:
    """Adapt a Tool (``async invoke(args, *, ctx)``) into a MemorySource.

    The tool is called with ``{query_arg: query, "limit": k, **where}``: where
    keys pass straight through so a tool with a typed parameter (``site=``)
    receives them as-is. Its return value is parsed by ``result_to_items`` (or
    ``default_parse``), every item is restamped with this source's name,
    and the list is cut to ``k`` in case the tool ignored ``limit``.

    Args:
        tool: Anything with ``async invoke(args, *, ctx)``.
        query_arg: The argument the query text goes in.
        result_to_items: ``parse(result, query)`` turning the tool's answer into items;
            ``None`` uses ``default_parse``.
        name: The name items and traces carry.
    """

    tool: Any
    query_arg: str = "query"
    result_to_items: Callable[[Any, str], list[MemoryItem]] | None = None
    name: str = "tool"
    accepts_writes = False

    async def query(
        self,
        query: str,
        *,
        k: int,
        ctx: Ctx,
        where: dict[str, Any] | None = None,
    ) -> list[MemoryItem]:
        """Invoke the tool with the query, ``limit=k`` and the ``where`` keys; parse its answer.

        The parsed items are restamped with this source's name and cut to ``k``, in case the
        tool ignored ``limit``.

        Raises:
            InvalidArgumentType: The parser returned something other than a list of
                MemoryItem.
        """
        query = check_query(query)
        k = check_k(k)
        filters = check_where(where)
        ctx = check_ctx(ctx)
        args = {self.query_arg: query, "limit": k, **(filters or {})}
        result = await self.tool.invoke(args, ctx=ctx)
        parse = self.result_to_items or default_parse
        items = parse(result, query)
        if not isinstance(items, list):
            raise InvalidArgumentType(
                f"result_to_items must return a list of MemoryItem, got {type(items).__name__}"
            )
        out: list[MemoryItem] = []
        for i, item in enumerate(items[:k]):
            if not isinstance(item, MemoryItem):
                raise InvalidArgumentType(
                    f"result_to_items returned {type(item).__name__} at index {i}, "
                    "expected MemoryItem"
                )
            if item.source != self.name:
                item = dataclasses.replace(item, source=self.name)
            out.append(item)
        return out

    async def write(self, items: Iterable[MemoryItem], *, ctx: Ctx) -> None:
        """Stores nothing: a tool is query-only as memory (``accepts_writes = False``)."""
        check_items(items)


def default_parse(result: Any, query: str) -> list[MemoryItem]:
    """Best-effort conversion of a search-like tool's return value.

    ``{"results": [...]}`` recurses on the list; a list holds dicts (content
    under ``content``, ``text`` or ``snippet``; optional ``score`` and
    ``metadata``; every other key joins metadata) or strings; a string splits
    on blank lines into paragraphs. Anything else (``None`` included) becomes
    one item of ``str(result)``: visible in traces, which is the point. A score
    that is not a finite number is dropped to None (kept in metadata as
    ``score``) rather than failing the whole recall. ``query`` is unused here
    and exists for parity with custom parsers.

    Args:
        result: What the tool returned.
        query: The query it was called with (unused).

    Returns:
        The items, in the tool's order, before ``ToolMemory`` restamps their source.
    """
    if isinstance(result, Mapping) and "results" in result:
        return default_parse(result["results"], query)
    if isinstance(result, str):
        return [
            MemoryItem(part.strip(), _PARSED_SOURCE)
            for part in _PARAGRAPH.split(result)
            if part.strip()
        ]
    if isinstance(result, (list, tuple)):
        items: list[MemoryItem] = []
        for element in result:
            if isinstance(element, Mapping):
                items.append(_from_mapping(element))
            else:
                items.append(MemoryItem(str(element), _PARSED_SOURCE))
        return items
    return [MemoryItem(str(result), _PARSED_SOURCE)]


def _from_mapping(raw: Mapping[Any, Any]) -> MemoryItem:
    record = {str(key): value for key, value in raw.items()}
    content_key = next((key for key in _CONTENT_KEYS if key in record), None)
    content = record.pop(content_key) if content_key is not None else None
    score_raw = record.pop("score", None)
    extra = record.pop("metadata", None)
    metadata: dict[str, Any] = dict(record)
    if isinstance(extra, Mapping):
        metadata.update({str(key): value for key, value in extra.items()})
    elif extra is not None:
        metadata["metadata"] = extra
    try:
        score = check_score(score_raw)
    except AgentkitError:
        score = None
        metadata["score"] = score_raw
    text = str(raw) if content is None else content if isinstance(content, str) else str(content)
    return MemoryItem(text, _PARSED_SOURCE, score, metadata)
