"""LangChain's own standard retriever suite, run against AgentkitRetriever."""

from __future__ import annotations

from typing import Any

from agentkit_langchain import AgentkitRetriever
from langchain_core.retrievers import BaseRetriever
from langchain_tests.integration_tests import RetrieversIntegrationTests

from agentkit.state.journal import MutationJournal
from agentkit.state.memory import CompositeMemory, FileMemory, JournalMemory


def _memory() -> CompositeMemory:
    """A real stack: a journal of ten notes beside an (empty) file memory."""
    journal: MutationJournal[str] = MutationJournal()
    for i in range(10):
        journal.record(f"release note {i}: the agent shipped feature {i}")
    return CompositeMemory([JournalMemory(journal, render=str), FileMemory(None)])


class TestAgentkitRetrieverStandard(RetrieversIntegrationTests):
    @property
    def retriever_constructor(self) -> type[BaseRetriever]:
        return AgentkitRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"memory": _memory(), "k": 4}

    @property
    def retriever_query_example(self) -> str:
        return "agent"
