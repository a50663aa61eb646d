"""The tenant in a run's ``configurable``: one reading for the retriever and the middleware."""

from __future__ import annotations

from typing import Any

import pytest
from agentkit_langchain import AgentkitRetriever
from agentkit_langchain._configurable import configured_tenant

from agentkit.kernel import Ctx, Scope
from agentkit.kernel.errors import InvalidArgumentType
from agentkit.state.memory import MemoryItem

ACME = Scope("acme", "support")


class _Recorder:
    """A memory that remembers the scope each query was made in."""

    name = "recorder"

    def __init__(self) -> None:
        self.scopes: list[Scope] = []

    async def query(
        self, query: str, *, k: int, ctx: Ctx, where: dict[str, Any] | None = None
    ) -> list[MemoryItem]:
        self.scopes.append(ctx.scope)
        return []

    async def write(self, items: Any, *, ctx: Ctx) -> None:
        return None


@pytest.mark.parametrize(
    ("configurable", "expected"),
    [
        ({}, None),
        ({"org_id": "", "domain_id": ""}, None),
        ({"org_id": "globex"}, Scope("globex", None)),
        ({"org_id": "", "domain_id": "sales"}, Scope(None, "sales")),
        ({"org_id": "globex", "domain_id": "sales"}, Scope("globex", "sales")),
    ],
)
def test_ids_read_with_empty_meaning_unset(configurable: dict[str, Any], expected: Any) -> None:
    assert configured_tenant(configurable) == expected


def test_a_whole_ctx_wins_and_must_be_a_ctx() -> None:
    ctx = Ctx(ACME)
    assert configured_tenant({"agentkit_ctx": ctx, "org_id": "globex"}) is ctx
    with pytest.raises(InvalidArgumentType, match="agentkit_ctx"):
        configured_tenant({"agentkit_ctx": "acme"})


def test_empty_ids_in_a_config_leave_the_retriever_in_its_own_scope() -> None:
    memory = _Recorder()
    retriever = AgentkitRetriever(memory=memory, scope=ACME)
    retriever.invoke("refunds", config={"configurable": {"org_id": "", "domain_id": ""}})
    retriever.invoke("refunds", config={"configurable": {"org_id": "globex", "domain_id": "x"}})
    assert memory.scopes == [ACME, Scope("globex", "x")]
