"""A LlamaIndex FunctionAgent recalling through AgentkitRetriever via a RetrieverTool.

The LLM is LlamaIndex's own MockFunctionCallingLLM with a scripted turn (no network):
first it calls the retriever tool with the user's question, then it answers with the
tool's output. The agent workflow, the tool call and the retriever are all real.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from agentkit_llamaindex import AgentkitRetriever
from llama_index.core.agent.workflow import FunctionAgent, ToolCallResult
from llama_index.core.base.llms.types import ChatMessage, MessageRole, ToolCallBlock
from llama_index.core.llms import MockFunctionCallingLLM
from llama_index.core.tools import RetrieverTool

from agentkit.kernel import Ctx, Scope
from agentkit.state.memory import MemoryItem, VectorMemory
from agentkit.vector import InMemoryVectorStore

# The workflow's step discovery walks the agent's attributes with inspect, touching
# pydantic's deprecated aliases: LlamaIndex's noise, not this test's.
pytestmark = pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecationWarning")

ACME = Scope("acme", "support")
GLOBEX = Scope("globex", "support")


def _scripted_turn(messages: Sequence[ChatMessage], **kwargs: Any) -> ChatMessage:
    last = messages[-1]
    if last.role == MessageRole.TOOL:
        return ChatMessage(role=MessageRole.ASSISTANT, content=f"From memory: {last.content}")
    tool = kwargs["tools"][0].metadata.get_name()
    call = ToolCallBlock(tool_call_id="call-1", tool_name=tool, tool_kwargs={"input": last.content})
    return ChatMessage(role=MessageRole.ASSISTANT, blocks=[call])


async def _memory() -> VectorMemory:
    memory = VectorMemory(InMemoryVectorStore(), name="support-kb")
    facts = {
        ACME: ["acme refund window is 30 days", "acme ships parcels on mondays"],
        GLOBEX: ["globex refund window is 90 days", "globex ships parcels daily"],
    }
    for scope, texts in facts.items():
        items = [
            MemoryItem(text, "kb", metadata={"id": f"{scope.org_id}-{i}"})
            for i, text in enumerate(texts)
        ]
        await memory.write(items, ctx=Ctx(scope))
    return memory


async def _ask(agent: FunctionAgent, question: str) -> tuple[list[str], str]:
    handler = agent.run(user_msg=question)
    outputs = [
        event.tool_output.content
        async for event in handler.stream_events()
        if isinstance(event, ToolCallResult)
    ]
    answer = await handler
    return outputs, str(answer)


async def test_function_agent_recalls_through_a_retriever_tool() -> None:
    memory = await _memory()
    ctx = Ctx(ACME)
    tool = RetrieverTool.from_defaults(
        AgentkitRetriever(memory, k=1, ctx=ctx),
        name="search_support_memory",
        description="Search the support team's memory for policies and facts.",
    )
    agent = FunctionAgent(
        tools=[tool], llm=MockFunctionCallingLLM(response_generator=_scripted_turn)
    )
    outputs, answer = await _ask(agent, "what is the refund window?")
    assert len(outputs) == 1
    assert "acme refund window is 30 days" in outputs[0]
    assert "globex" not in outputs[0]
    assert "acme refund window is 30 days" in answer


async def test_one_agent_per_tenant_over_one_memory() -> None:
    memory = await _memory()
    acme = AgentkitRetriever(memory, k=1, ctx=Ctx(ACME))
    for retriever, want, other in (
        (acme, "acme ships parcels on mondays", "globex"),
        (acme.bind(ctx=Ctx(GLOBEX)), "globex ships parcels daily", "acme"),
    ):
        tool = RetrieverTool.from_defaults(retriever, name="search_support_memory")
        llm = MockFunctionCallingLLM(response_generator=_scripted_turn)
        outputs, _ = await _ask(FunctionAgent(tools=[tool], llm=llm), "when do parcels ship?")
        assert len(outputs) == 1 and want in outputs[0] and other not in outputs[0]
