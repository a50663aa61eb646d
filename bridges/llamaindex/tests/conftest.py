"""Offline LlamaIndex for every test here: a mock LLM and agentkit's hashing embedder."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from agentkit_llamaindex import AgentkitEmbedding
from llama_index.core import Settings
from llama_index.core.llms import MockLLM

from agentkit.vector import HashingEmbedder

# Chroma (the real-store tests) must never try to phone home.
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")


@pytest.fixture(autouse=True)
def offline_settings() -> Iterator[None]:
    """Nothing may reach for OpenAI: both defaults are replaced for each test."""
    saved = (Settings._llm, Settings._embed_model)  # the raw slots: the getters resolve OpenAI
    Settings.llm = MockLLM()
    Settings.embed_model = AgentkitEmbedding(HashingEmbedder(dim=256))
    yield
    Settings._llm, Settings._embed_model = saved
