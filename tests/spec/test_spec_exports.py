"""Public names, defaults and the one-way dependency rule of kernel.md."""

from __future__ import annotations

import dataclasses
import inspect
import subprocess
import sys
import typing

import pytest

import agentkit.state.memory as memory

SPEC_NAMES = [
    "MemoryItem",
    "MemorySource",
    "Reranker",
    "DedupeMode",
    "OnWritePolicy",
    "CompositeMemory",
    "CompositeWriteError",
    "SequentialMemory",
    "CachedMemory",
    "CompactedMemory",
    "MemoryWriteRefused",
    "ReadOnlyMemory",
    "ScopedMemory",
    "FileMemory",
    "JournalMemory",
    "ScratchpadMemory",
    "ToolMemory",
    "VectorMemory",
    "score_sort_rerank",
    "as_grounder",
    "as_grounding_source",
    "default_parse",
    "render_grounding",
    "rrf_rerank",  # issue 2, beyond the spec
]


@pytest.mark.parametrize("name", SPEC_NAMES)
def test_every_public_name_is_importable(name: str) -> None:
    assert getattr(memory, name, None) is not None
    assert name in memory.__all__


def test_literal_aliases() -> None:
    assert typing.get_args(memory.DedupeMode) == ("id", "content")
    assert typing.get_args(memory.OnWritePolicy) == ("refuse", "ignore")


@pytest.mark.parametrize(
    "name",
    [
        "MemoryItem",
        "CompositeMemory",
        "SequentialMemory",
        "CachedMemory",
        "CompactedMemory",
        "ReadOnlyMemory",
        "ScopedMemory",
        "FileMemory",
        "JournalMemory",
        "ScratchpadMemory",
        "ToolMemory",
        "VectorMemory",
    ],
)
def test_documented_dataclasses_are_dataclasses(name: str) -> None:
    assert dataclasses.is_dataclass(getattr(memory, name))


def test_error_classes_are_the_kernel_ones() -> None:
    from agentkit import kernel

    assert memory.CompositeWriteError is kernel.CompositeWriteError
    assert memory.MemoryWriteRefused is kernel.MemoryWriteRefused


def test_supporting_import_paths() -> None:
    from agentkit.capabilities import Compactor, Grounder, GroundingSource, RequestBuilder
    from agentkit.kernel import AgentkitError, Ctx, Message, Observation, Scope, Timeline
    from agentkit.state.context import WorkingContext
    from agentkit.state.files import InMemoryFiles, LocalFiles
    from agentkit.state.journal import MutationJournal
    from agentkit.tools import FunctionTool, Tool
    from agentkit.vector import Chunk, Embedder, HashingEmbedder, InMemoryVectorStore, VectorPort

    assert all(
        x is not None
        for x in (
            Compactor,
            Grounder,
            GroundingSource,
            RequestBuilder,
            AgentkitError,
            Ctx,
            Message,
            Observation,
            Scope,
            Timeline,
            WorkingContext,
            InMemoryFiles,
            LocalFiles,
            MutationJournal,
            FunctionTool,
            Tool,
            Chunk,
            Embedder,
            HashingEmbedder,
            InMemoryVectorStore,
            VectorPort,
        )
    )


def _modules_after(import_stmt: str) -> set[str]:
    code = f"import sys\n{import_stmt}\nprint('\\n'.join(sorted(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    return set(out.stdout.split())


def test_memory_never_imports_capabilities() -> None:
    mods = _modules_after("import agentkit.state.memory")
    assert "agentkit.state.memory" in mods
    assert not any(m.startswith("agentkit.capabilities") for m in mods)


@pytest.mark.parametrize("package", ["agentkit.kernel", "agentkit.vector", "agentkit.tools"])
def test_lower_layers_depend_on_kernel_only(package: str) -> None:
    mods = _modules_after(f"import {package}")
    assert package in mods
    assert not any(m.startswith("agentkit.state") for m in mods)
    assert not any(m.startswith("agentkit.capabilities") for m in mods)
    if package == "agentkit.kernel":
        assert not any(m.startswith(("agentkit.vector", "agentkit.tools")) for m in mods)


@pytest.mark.parametrize(
    "name,params",
    [
        ("CompositeMemory", ["sources", "reranker", "name", "dedupe"]),
        ("SequentialMemory", ["sources", "name"]),
        ("CachedMemory", ["inner", "ttl_seconds", "max_entries", "name", "strict_scope"]),
        ("CompactedMemory", ["inner", "compactor", "max_items", "name"]),
        ("ReadOnlyMemory", ["inner", "on_write", "name"]),
        ("ScopedMemory", ["inner", "enforce", "name"]),
        ("FileMemory", ["files", "name"]),
        ("JournalMemory", ["journal", "render", "name"]),
        ("ScratchpadMemory", ["context", "name"]),
        ("ToolMemory", ["tool", "query_arg", "result_to_items", "name"]),
        ("VectorMemory", ["vector", "where", "name"]),
    ],
)
def test_documented_positional_parameters(name: str, params: list[str]) -> None:
    sig = inspect.signature(getattr(memory, name))
    positional = [
        p.name
        for p in sig.parameters.values()
        if p.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    ]
    assert positional == params


@pytest.mark.parametrize(
    "name,defaults",
    [
        ("CompositeMemory", {"reranker": None, "name": "composite", "dedupe": "id"}),
        ("SequentialMemory", {"name": "sequential"}),
        (
            "CachedMemory",
            {"ttl_seconds": 60.0, "max_entries": 256, "name": "", "strict_scope": False},
        ),
        ("CompactedMemory", {"max_items": None, "name": ""}),
        ("ReadOnlyMemory", {"on_write": "refuse", "name": ""}),
        ("ScopedMemory", {"enforce": None, "name": ""}),
        ("FileMemory", {"name": "files"}),
        ("JournalMemory", {"name": "journal"}),
        ("ScratchpadMemory", {"name": "scratchpad"}),
        ("ToolMemory", {"query_arg": "query", "result_to_items": None, "name": "tool"}),
        ("VectorMemory", {"where": None, "name": "vector"}),
    ],
)
def test_documented_defaults(name: str, defaults: dict[str, object]) -> None:
    sig = inspect.signature(getattr(memory, name))
    for param, value in defaults.items():
        assert sig.parameters[param].default == value, param
