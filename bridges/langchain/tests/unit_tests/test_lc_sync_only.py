"""Which retrievers LangChainMemory runs on agentkit's wide thread pool.

A retriever without its own ``_aget_relevant_documents`` (LangChain's documented async
hook) has only LangChain's thread hand-off, on asyncio's default executor (cpu count
+ 4 threads); those run on the interop pool instead, so a wide fan-out is not
capped. A retriever with a native async path runs it on the event loop.
"""

from __future__ import annotations

import asyncio
import os
import threading
from typing import Any

import pytest
from agentkit_langchain import LangChainMemory
from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever

from agentkit.kernel import Ctx
from agentkit.state.memory import CompositeMemory

# More than asyncio's default executor has threads (min(32, cpus + 4)) on any machine.
_WIDTH = min(32, (os.cpu_count() or 1) + 4) + 2


class Legacy(BaseRetriever):
    """The pre-run_manager signature, which LangChain still accepts (it installs its
    own async hand-off for it)."""

    label: str
    barrier: Any

    def _get_relevant_documents(self, query: str) -> list[Document]:  # type: ignore[override]
        self.barrier.wait()  # every one of them must be running at once
        return [Document(page_content=f"{self.label}: {query}")]


class Current(BaseRetriever):
    label: str
    barrier: Any

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        self.barrier.wait()
        return [Document(page_content=f"{self.label}: {query}")]


class NativeAsync(BaseRetriever):
    """Its sync path must never be taken: the async one is its own."""

    loop_threads: Any

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        raise AssertionError("the sync path ran although a native async one exists")

    async def _aget_relevant_documents(self, query: str, **kwargs: Any) -> list[Document]:
        self.loop_threads.append(threading.get_ident())
        await asyncio.sleep(0)
        return [Document(page_content=f"async: {query}")]


@pytest.mark.parametrize("kind", [Legacy, Current])
async def test_sync_only_retrievers_all_run_at_once(kind: type[BaseRetriever]) -> None:
    barrier = threading.Barrier(_WIDTH, timeout=20)  # broken if fewer run at once
    sources: list[Any] = [
        LangChainMemory(kind(label=f"r{i}", barrier=barrier), name=f"r{i}")  # type: ignore[call-arg]
        for i in range(_WIDTH)
    ]
    items = await CompositeMemory(sources, dedupe=None).query("q", k=50, ctx=Ctx())
    assert sorted(i.source for i in items) == sorted(f"r{i}" for i in range(_WIDTH))
    assert not barrier.broken


async def test_a_native_async_retriever_runs_on_the_event_loop() -> None:
    threads: list[int] = []
    items = await LangChainMemory(NativeAsync(loop_threads=threads)).query("q", k=1, ctx=Ctx())
    assert [i.content for i in items] == ["async: q"]
    assert threads == [threading.get_ident()]
