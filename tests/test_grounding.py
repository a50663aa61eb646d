"""render_grounding, as_grounder, as_grounding_source."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterable
from typing import Any

import pytest

from agentkit.kernel import Ctx, Scope
from agentkit.state.memory import (
    CompositeMemory,
    MemoryItem,
    as_grounder,
    as_grounding_source,
    render_grounding,
)


class Recorder:
    """A small real source that records what it was asked."""

    def __init__(self, name: str, items: list[MemoryItem]) -> None:
        self.name = name
        self.items = items
        self.calls: list[tuple[str, int, Any, Ctx]] = []

    async def query(self, query: str, *, k: int, ctx: Ctx, where: Any = None
                    ) -> list[MemoryItem]:
        self.calls.append((query, k, where, ctx))
        return self.items[:k]

    async def write(self, items: Iterable[MemoryItem], *, ctx: Ctx) -> None:
        self.items.extend(items)


FACTS = [MemoryItem("Paris is in France.", "vector", 0.9),
         MemoryItem("The Seine flows\nthrough Paris.", "journal")]


def test_render_grounding_attributes_every_item() -> None:
    assert render_grounding(FACTS) == (
        "[vector] Paris is in France.\n\n[journal] The Seine flows\nthrough Paris.")
    assert render_grounding([]) == ""
    assert render_grounding(tuple(FACTS[:1])) == "[vector] Paris is in France."


async def test_as_grounder_bakes_k_and_where_and_queries_with_the_task() -> None:
    mem = Recorder("vector", list(FACTS))
    ground = as_grounder(mem, k=1, where={"lang": "en"})
    ctx = Ctx(Scope("acme", "support"))
    text = await ground(ctx, "Where is Paris?")
    assert text == "[vector] Paris is in France."
    (query, k, where, seen_ctx) = mem.calls[0]
    assert (query, k, where) == ("Where is Paris?", 1, {"lang": "en"})
    assert seen_ctx is ctx


async def test_as_grounder_default_k_is_five() -> None:
    mem = Recorder("vector", [MemoryItem(f"f{i}", "vector") for i in range(9)])
    await as_grounder(mem)(Ctx(), "task")
    await as_grounding_source(mem)(Ctx(), "task")
    assert [c[1] for c in mem.calls] == [5, 5]
    assert [c[2] for c in mem.calls] == [None, None]


async def test_as_grounder_format_override() -> None:
    def bullets(items: list[MemoryItem]) -> str:
        return "\n".join(f"- {i.content}" for i in items)

    text = await as_grounder(Recorder("v", list(FACTS)), format=bullets)(Ctx(), "q")
    assert text == "- Paris is in France.\n- The Seine flows\nthrough Paris."


async def test_as_grounder_with_no_hits_is_empty_text() -> None:
    assert await as_grounder(Recorder("v", []))(Ctx(), "q") == ""


async def test_as_grounding_source_returns_items_unrendered() -> None:
    mem = Recorder("vector", list(FACTS))
    got = await as_grounding_source(mem, k=2, where={"a": [1, 2]})(Ctx(), "the task")
    assert list(got) == FACTS
    assert mem.calls[0][:3] == ("the task", 2, {"a": [1, 2]})


async def test_baked_where_cannot_be_changed_by_the_caller_or_a_source() -> None:
    class Mutating(Recorder):
        async def query(self, query: str, *, k: int, ctx: Ctx, where: Any = None
                        ) -> list[MemoryItem]:
            result = await super().query(query, k=k, ctx=ctx, where=dict(where))
            where["lang"] = "fr"  # a careless source edits the filter it was handed
            return result

    where = {"lang": "en"}
    mem = Mutating("v", [])
    ground = as_grounding_source(mem, where=where)
    where["lang"] = "de"  # the caller edits its dict after wiring
    await ground(Ctx(), "q")
    await ground(Ctx(), "q")
    assert [c[2] for c in mem.calls] == [{"lang": "en"}, {"lang": "en"}]


@pytest.mark.parametrize("factory", [as_grounder, as_grounding_source])
@pytest.mark.parametrize(
    ("kwargs", "exc", "needle"),
    [({"k": 0}, ValueError, "k"), ({"k": "5"}, TypeError, "k"),
     ({"where": "lang=en"}, TypeError, "where")],
)
def test_bad_wiring_fails_at_wiring_time(factory: Any, kwargs: dict[str, Any],
                                         exc: type[Exception], needle: str) -> None:
    mem = Recorder("v", [])
    with pytest.raises(exc, match=needle):
        factory(mem, **kwargs)
    assert mem.calls == []


def test_bad_format_and_memory_fail_at_wiring_time() -> None:
    with pytest.raises(TypeError, match="format"):
        as_grounder(Recorder("v", []), format="markdown")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="memory"):
        as_grounding_source(object())  # type: ignore[arg-type]


async def test_grounding_over_a_composite() -> None:
    comp = CompositeMemory([Recorder("vector", [FACTS[0]]),
                            Recorder("journal", [FACTS[0], FACTS[1]])])
    text = await as_grounder(comp, k=5)(Ctx(), "Paris")
    assert text.count("Paris is in France.") == 1  # the dedupe reached the prompt


def test_memory_package_does_not_import_capabilities() -> None:
    code = (
        "import sys, agentkit.state.memory, agentkit.state.memory._grounding\n"
        "bad = [m for m in sys.modules if m.startswith('agentkit.capabilities')]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
