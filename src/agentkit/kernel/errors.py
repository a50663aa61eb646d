"""The whole exception tree, in one place.

Every exception the framework raises derives from ``AgentkitError``, so one
``except AgentkitError`` catches the surface. Where a builtin is the natural catch
(``PermissionError``, ``ValueError``), the class subclasses both.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


class AgentkitError(Exception):
    """Root of every exception agentkit raises."""


class InvalidArgument(AgentkitError, ValueError):
    """An argument has the right type but an unusable value (``k=0``, unknown policy)."""


class InvalidArgumentType(AgentkitError, TypeError):
    """An argument has the wrong type (a non-str query, a non-mapping ``where``)."""


class InvalidFilter(InvalidArgument):
    """A ``where`` filter is malformed (unknown operator, wrong operand, too deep or too
    large); raised while parsing, before any store is touched.

    Args:
        message: What is wrong, naming the place in the filter.
        key: The metadata key being tested, when there is one.
        operator: The operator at fault, when there is one.
        path: Where in the filter, spelt ``where['$or'][1]['year']['$gt']``.
    """

    def __init__(
        self,
        message: str,
        *,
        key: str | None = None,
        operator: str | None = None,
        path: str | None = None,
    ) -> None:
        self.key = key
        self.operator = operator
        self.path = path
        super().__init__(message)


class ScopeViolation(AgentkitError, PermissionError):
    """A call crossed or lacked a tenant boundary; nothing was touched."""


class PathEscapeError(AgentkitError, PermissionError):
    """A file path tried to leave its root (``..``, absolute tricks, symlinks out)."""


class StoreError(AgentkitError, RuntimeError):
    """A durable store could not be opened or used (missing file, bad schema)."""


class UnsupportedOperation(StoreError, NotImplementedError):
    """The store behind a call does not offer the operation (a port without ``scan``).

    Also a NotImplementedError, because that is how LangChain's and LlamaIndex's base
    classes say "this store cannot do that", and callers of those interfaces catch it.
    """


class SyncCallOnLoopThread(AgentkitError, RuntimeError):
    """A sync entry point was called on the event loop thread it would wait for."""


class CompositeWriteError(AgentkitError, RuntimeError):
    """At least one member of a CompositeMemory write failed.

    The split tells an operator what to replay: ``accepted`` committed, ``refused``
    declared itself read-only and stored nothing, ``failed`` raised.

    Args:
        accepted: Names of the members that committed the write.
        failed: Each failed member's name and the exception it raised.
        refused: Names of the read-only members that stored nothing.
    """

    def __init__(
        self,
        *,
        accepted: list[str],
        failed: dict[str, BaseException],
        refused: list[str] | None = None,
    ) -> None:
        self.accepted = list(accepted)
        self.failed = dict(failed)
        self.refused = list(refused) if refused is not None else []
        detail = ", ".join(f"{n}: {type(e).__name__}: {e}" for n, e in self.failed.items())
        super().__init__(
            f"composite write failed on {len(self.failed)} source(s) ({detail}); "
            f"accepted={self.accepted}, refused={self.refused}"
        )


class CompositeQueryError(AgentkitError, RuntimeError):
    """A CompositeMemory query lost at least one source (error or timeout).

    Raised only once every source has settled; ``succeeded`` maps each healthy
    source to what it returned, ``failed`` maps the rest to their exception.

    Args:
        succeeded: Each healthy member's name and the items it returned.
        failed: Each failed member's name and its exception (``TimeoutError`` for one
            past the composite's ``timeout``).
    """

    def __init__(
        self,
        *,
        succeeded: Mapping[str, list[Any]],
        failed: Mapping[str, BaseException],
    ) -> None:
        self.succeeded = dict(succeeded)
        self.failed = dict(failed)
        detail = ", ".join(f"{n}: {type(e).__name__}: {e}" for n, e in self.failed.items())
        super().__init__(
            f"composite query failed on {len(self.failed)} source(s) ({detail}); "
            f"succeeded={list(self.succeeded)}"
        )


class MemoryWriteRefused(AgentkitError):
    """A ReadOnlyMemory turned a write away.

    Not a PermissionError on purpose: "wrong tenant" and "read-only by policy" must
    stay distinguishable where they are caught.

    Args:
        source: The read-only source's name.
        n: How many items the refused write carried.
    """

    def __init__(self, *, source: str, n: int) -> None:
        self.source = source
        self.n = n
        super().__init__(f"memory source {source!r} is read-only; refused a write of {n} item(s)")
