"""How long the conformance kit takes on the in-memory store, beside langchain-tests.

The target (issue 28): agentkit.testing's ``VectorPortTests`` on ``InMemoryVectorStore``
plus ``MemorySourceTests`` on ``VectorMemory`` over it run in under 10 s, the whole
pytest process included, since that is what a third party waits for. The peer is
``langchain-tests``' ``VectorStoreIntegrationTests`` on LangChain's own
``InMemoryVectorStore``: the suite a LangChain store author runs for the same purpose.

Each suite runs as its own ``pytest`` process in a scratch folder (so the repository's
conftest files play no part), ``--rounds`` times; the median wall time is reported, with
the number of checks each suite ran and the ratio between the two.

Run: ``python bench/conformance_kit.py [--rounds 3]``.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

TARGET_S = 10.0

KIT = textwrap.dedent(
    """
    import pytest

    from agentkit.state.memory import VectorMemory
    from agentkit.testing import MemorySourceTests, VectorPortTests
    from agentkit.vector import HashingEmbedder, InMemoryVectorStore


    class TestInMemoryVectorStore(VectorPortTests):
        @pytest.fixture
        def port(self):
            return InMemoryVectorStore(HashingEmbedder(dim=64))


    class TestVectorMemory(MemorySourceTests):
        @pytest.fixture
        def source(self):
            return VectorMemory(InMemoryVectorStore(HashingEmbedder(dim=64)))
    """
)

LANGCHAIN_TESTS = textwrap.dedent(
    """
    import pytest
    from langchain_core.vectorstores import InMemoryVectorStore
    from langchain_tests.integration_tests import VectorStoreIntegrationTests


    class TestInMemoryVectorStore(VectorStoreIntegrationTests):
        @pytest.fixture
        def vectorstore(self):
            return InMemoryVectorStore(embedding=self.get_embeddings())
    """
)

_SUMMARY = re.compile(r"(\d+) passed.* in ([0-9.]+)s")


def _run(code: str, folder: Path) -> tuple[float, float, int]:
    """Wall seconds of one pytest process over ``code``, the seconds pytest itself reports
    (collection and the tests, without interpreter start-up), and how many checks passed."""
    (folder / "test_suite.py").write_text(code, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    start = time.perf_counter()
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-o",
            "asyncio_mode=auto",
            "-o",
            "asyncio_default_fixture_loop_scope=function",
            "test_suite.py",
        ],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"the suite failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    found = _SUMMARY.search(proc.stdout)
    if found is None:
        raise SystemExit(f"no pytest summary in:\n{proc.stdout[-3000:]}")
    return seconds, float(found.group(2)), int(found.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    times: dict[str, list[float]] = {"kit": [], "langchain_tests": []}
    inner: dict[str, list[float]] = {"kit": [], "langchain_tests": []}
    checks: dict[str, int] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(args.rounds):
            for name, code in (("kit", KIT), ("langchain_tests", LANGCHAIN_TESTS)):
                folder = Path(tmp) / name
                folder.mkdir(exist_ok=True)
                seconds, in_pytest, passed = _run(code, folder)
                times[name].append(seconds)
                inner[name].append(in_pytest)
                checks[name] = passed
    kit, peer = statistics.median(times["kit"]), statistics.median(times["langchain_tests"])
    kit_in, peer_in = statistics.median(inner["kit"]), statistics.median(inner["langchain_tests"])
    verdict = "met" if kit < TARGET_S else "MISSED"
    print(
        f"agentkit.testing on InMemoryVectorStore + VectorMemory: {kit:.2f} s for "
        f"{checks['kit']} checks ({kit_in:.2f} s inside pytest; target < {TARGET_S:.0f} s: "
        f"{verdict})"
    )
    print(
        f"langchain-tests VectorStoreIntegrationTests on LangChain's InMemoryVectorStore: "
        f"{peer:.2f} s for {checks['langchain_tests']} checks ({peer_in:.2f} s inside pytest)"
    )
    print(
        f"ratio kit / langchain-tests: {kit / peer:.2f} (median of {args.rounds} round(s), "
        "each a whole pytest process)"
    )
    print(f"RESULT kit_in_memory_s={kit:.3f}")
    print(f"RESULT kit_in_memory_inside_pytest_s={kit_in:.3f}")
    print(f"RESULT kit_langchain_tests_in_memory_s={peer:.3f}")
    print(f"RESULT kit_vs_langchain_tests_ratio={kit / peer:.3f}")


if __name__ == "__main__":
    main()
