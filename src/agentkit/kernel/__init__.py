"""The kernel: context, scope, timeline, messages and the error tree."""

from agentkit.kernel.ctx import Ctx, Observation, Scope, Timeline
from agentkit.kernel.errors import (
    AgentkitError,
    CompositeQueryError,
    CompositeWriteError,
    InvalidArgument,
    InvalidArgumentType,
    InvalidFilter,
    MemoryWriteRefused,
    PathEscapeError,
    ScopeViolation,
    StoreError,
    SyncCallOnLoopThread,
    UnsupportedOperation,
)
from agentkit.kernel.messages import Message
from agentkit.kernel.threads import CommitGate, finish_or_undo, run_gated

__all__ = [
    "AgentkitError",
    "CommitGate",
    "CompositeQueryError",
    "CompositeWriteError",
    "Ctx",
    "InvalidArgument",
    "InvalidArgumentType",
    "InvalidFilter",
    "MemoryWriteRefused",
    "Message",
    "Observation",
    "PathEscapeError",
    "Scope",
    "ScopeViolation",
    "StoreError",
    "SyncCallOnLoopThread",
    "Timeline",
    "UnsupportedOperation",
    "finish_or_undo",
    "run_gated",
]
