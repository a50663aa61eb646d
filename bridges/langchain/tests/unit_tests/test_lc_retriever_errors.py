"""AgentkitRetriever's errors: pydantic's when it is built, agentkit's when it is called.

Building validates fields as every LangChain component does (pydantic's
ValidationError, a ValueError wrapping agentkit's InvalidArgument); a call's arguments
raise agentkit's InvalidArgument before any run starts, so nothing is queried and no
callback sees a run.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

import pydantic
import pytest
from agentkit_langchain import AgentkitRetriever
from langchain_core.callbacks import BaseCallbackHandler

from agentkit.kernel import Ctx, Scope
from agentkit.kernel.errors import InvalidArgument, InvalidArgumentType
from agentkit.state.memory import MemoryItem, VectorMemory
from agentkit.vector import HashingEmbedder, InMemoryVectorStore

ACME = Scope("acme", "support")
GLOBEX = Scope("globex", "support")


class Runs(BaseCallbackHandler):
    """Counts the retriever runs LangChain starts."""

    def __init__(self) -> None:
        self.started = 0

    def on_retriever_start(
        self, serialized: dict[str, Any], query: str, *, run_id: UUID, **kwargs: Any
    ) -> None:
        self.started += 1


async def _memory() -> VectorMemory:
    memory = VectorMemory(InMemoryVectorStore(HashingEmbedder(dim=64)))
    await memory.write([MemoryItem("acme refund rules", "user", None, {"id": "r"})],
                       ctx=Ctx(ACME))
    await memory.write([MemoryItem("globex refund rules", "user", None, {"id": "r"})],
                       ctx=Ctx(GLOBEX))
    return memory


def _wrapped(caught: pytest.ExceptionInfo[pydantic.ValidationError]) -> BaseException:
    error = caught.value.errors()[0]["ctx"]["error"]
    assert isinstance(error, BaseException)
    return error


async def test_building_with_bad_values_is_pydantics_error_around_agentkits() -> None:
    memory = await _memory()
    with pytest.raises(pydantic.ValidationError) as caught:
        AgentkitRetriever(memory=memory, k=0)
    assert isinstance(caught.value, ValueError)
    assert isinstance(_wrapped(caught), InvalidArgument)
    with pytest.raises(pydantic.ValidationError, match="scope or ctx") as caught:
        AgentkitRetriever(memory=memory, scope=ACME, ctx=Ctx(GLOBEX))
    assert isinstance(_wrapped(caught), InvalidArgument)
    with pytest.raises(InvalidArgumentType):
        AgentkitRetriever(memory=memory, k="4")
    AgentkitRetriever(memory=memory, scope=ACME, ctx=Ctx(ACME))  # one tenant, twice: fine


async def test_a_calls_bad_k_is_invalid_argument_before_any_run() -> None:
    retriever = AgentkitRetriever(memory=await _memory(), scope=ACME)
    runs = Runs()
    for k in (0, -1):
        with pytest.raises(InvalidArgument, match="k must be >= 1"):
            retriever.invoke("refund rules", {"callbacks": [runs]}, k=k)
        with pytest.raises(InvalidArgument):
            await retriever.ainvoke("refund rules", {"callbacks": [runs]}, k=k)
    assert runs.started == 0
    assert [d.page_content for d in retriever.invoke("refund rules", k=1)] == [
        "acme refund rules"
    ]
