"""agentkit.testing: the MemorySource and VectorPort contracts as tests to subclass.

Whoever writes a source for their own backend, or a port over a store agentkit has no
dialect for, subclasses ``MemorySourceTests`` or ``VectorPortTests``, provides one
fixture (``source`` / ``port``), and inherits every check of the contract; capabilities
the backend lacks are declared by overriding a property and show up as skips with the
reason. agentkit's own stores, sources and both bridges' ports run the same classes.

Needs pytest and pytest-asyncio (``pip install "agentkit-memory[testing]"``), nothing
else beyond agentkit-memory's own dependencies.
"""

from __future__ import annotations

import pytest

# Before the kit's modules are imported, so a failing check explains itself.
pytest.register_assert_rewrite("agentkit.testing._port", "agentkit.testing._source")

from agentkit.testing._cases import (  # noqa: E402
    ODD_SCOPES,
    WHERE_CASES,
    WHERE_RECORDS,
    WhereCase,
    WhereRecord,
)
from agentkit.testing._port import VectorPortTests  # noqa: E402
from agentkit.testing._source import MemorySourceTests  # noqa: E402

__all__ = [
    "ODD_SCOPES",
    "WHERE_CASES",
    "WHERE_RECORDS",
    "MemorySourceTests",
    "VectorPortTests",
    "WhereCase",
    "WhereRecord",
]
