"""The tenant in a run's ``configurable``: one reading for the retriever and the middleware."""

from __future__ import annotations

from typing import Any

import pytest
from agentkit_langchain import AgentkitRetriever
from agentkit_langchain._configurable import configured_tenant
from langchain_core.runnables import RunnableLambda

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


GLOBEX = Scope("globex", "sales")
TENANT = {"configurable": {"org_id": "globex", "domain_id": "sales"}}


def test_a_call_inside_a_runnable_inherits_the_runs_tenant_sync() -> None:
    memory = _Recorder()
    retriever = AgentkitRetriever(memory=memory, scope=ACME)
    # User code calling the retriever without passing config on: LangChain's
    # runnables still hand the run's config down, and the tenant with it.
    step = RunnableLambda(lambda q: retriever.invoke(q))
    step.invoke("refunds", config=TENANT)
    step.invoke("refunds")  # no tenant anywhere: the retriever's own
    retriever.invoke("refunds")
    assert memory.scopes == [GLOBEX, ACME, ACME]


async def test_a_call_inside_a_runnable_inherits_the_runs_tenant_async() -> None:
    memory = _Recorder()
    retriever = AgentkitRetriever(memory=memory, scope=ACME)

    async def recall(q: str) -> Any:
        return await retriever.ainvoke(q)

    step = RunnableLambda(recall)
    await step.ainvoke("refunds", config=TENANT)
    await step.ainvoke("refunds")
    await retriever.ainvoke("refunds")
    await retriever.ainvoke("refunds", k=2)  # a keyword alone keeps the own tenant
    assert memory.scopes == [GLOBEX, ACME, ACME, ACME]
