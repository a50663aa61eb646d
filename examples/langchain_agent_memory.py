"""agentkit memory in LangChain v1 agents: recall through middleware, a LangGraph store.

Needs `pip install 'agentkit-langchain[langgraph]'`. The chat model is a scripted
stand-in so that this runs offline: give create_agent your own model instead.
docs/agents.md shows the two parts marked below.
"""

# ruff: noqa: E402 - each part imports what it uses, so docs/agents.md can show it whole

import asyncio
import json
from typing import Any

from langchain.tools import ToolRuntime, tool
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from agentkit.kernel import Ctx, Scope
from agentkit.state.memory import MemoryItem, VectorMemory
from agentkit.vector import InMemoryVectorStore


class ScriptedModel(BaseChatModel):
    """Stands in for your chat model: replies from a script, prints any recall it is shown."""

    script: list[str | dict[str, Any]]

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        for message in messages:
            if message.name == "agentkit_memory":
                records = message.text.split("<agentkit-memory>")[1]
                print("recalled for the model:", " ".join(records.split()))
        step = self.script.pop(0)
        if isinstance(step, dict):  # a tool call
            reply = AIMessage("", tool_calls=[{**step, "id": f"call-{len(self.script)}"}])
        else:
            reply = AIMessage(step)
        return ChatResult(generations=[ChatGeneration(message=reply)])

    def bind_tools(self, tools: Any, **kwargs: Any) -> "ScriptedModel":
        return self


# The memory the agent recalls from: any MemorySource (here one vector store) holding a
# fact for tenant acme/support.
memory = VectorMemory(InMemoryVectorStore(), name="vector")
fact = MemoryItem("the refund window is 30 days", "kb")
asyncio.run(memory.write([fact], ctx=Ctx(Scope("acme", "support"))))
model = ScriptedModel(script=["Refunds are accepted for 30 days."])

# --- docs/agents.md: AgentkitMemoryMiddleware ---
from dataclasses import dataclass

from agentkit_langchain import AgentkitMemoryMiddleware
from langchain.agents import create_agent


@dataclass
class Context:
    org_id: str
    domain_id: str


agent = create_agent(
    model,
    tools=[],  # your tools
    system_prompt="You are a support agent.",
    middleware=[AgentkitMemoryMiddleware(memory, k=4, write_back=True)],
    context_schema=Context,
)
agent.invoke(
    {"messages": [{"role": "user", "content": "How long is the refund window?"}]},
    context=Context("acme", "support"),
)
# write_back=True stored the exchange in the tenant's memory:
exchanges = asyncio.run(memory.query("refund window", k=4, ctx=Ctx(Scope("acme", "support"))))
print("remembered:", [i.content for i in exchanges if i.metadata.get("kind") == "exchange"])


# Two tools that keep facts in the agent's LangGraph store (runtime.store).
@tool
def remember(fact: str, runtime: ToolRuntime) -> str:
    """Remember a fact about the customer."""
    assert runtime.store is not None  # create_agent(..., store=...) below
    key = f"fact-{len(runtime.store.search(('memories',)))}"
    runtime.store.put(("memories",), key, {"text": fact})
    return "stored"


@tool
def recall(query: str, runtime: ToolRuntime) -> str:
    """Recall what is known about the customer."""
    assert runtime.store is not None
    hits = runtime.store.search(("memories",), query=query, limit=1)
    return json.dumps([hit.value["text"] for hit in hits])


model = ScriptedModel(
    script=[
        {"name": "remember", "args": {"fact": "prefers refunds as store credit"}},
        {"name": "recall", "args": {"query": "how does the customer like refunds"}},
        "They prefer store credit.",
    ]
)

# --- docs/agents.md: AgentkitStore ---
from agentkit_langchain import AgentkitStore
from langchain.agents import create_agent

from agentkit.kernel import Scope

with AgentkitStore.from_conn_string(
    "memories.db", scope=Scope("acme", "support"), index={"fields": ["text"]}
) as store:
    agent = create_agent(model, tools=[remember, recall], store=store)
    result = agent.invoke({"messages": [{"role": "user", "content": "Refund me in credit."}]})
    print("recall tool said:", result["messages"][-2].text)
    print("in the store:", [item.value for item in store.search(("memories",))])
