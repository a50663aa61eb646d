"""The kernel: context, scope, timeline, messages and the error tree."""

from agentkit.kernel.ctx import Ctx, Observation, Scope, Timeline
from agentkit.kernel.errors import (
    AgentkitError,
    CompositeQueryError,
    CompositeWriteError,
    InvalidArgument,
    InvalidArgumentType,
    MemoryWriteRefused,
    PathEscapeError,
    ScopeViolation,
    StoreError,
)
from agentkit.kernel.messages import Message

__all__ = [
    "AgentkitError",
    "CompositeQueryError",
    "CompositeWriteError",
    "Ctx",
    "InvalidArgument",
    "InvalidArgumentType",
    "MemoryWriteRefused",
    "Message",
    "Observation",
    "PathEscapeError",
    "Scope",
    "ScopeViolation",
    "StoreError",
    "Timeline",
]
