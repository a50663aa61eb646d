"""OpenTelemetry spans for memory operations, one class decorator for every source.

Conventions followed: the ``gen_ai.memory.client`` span of the OpenTelemetry GenAI
semantic conventions, open-telemetry/semantic-conventions-genai v0.1.0 (development
stability; the memory span came with its PR #140). From it:

* ``gen_ai.operation.name``: ``search_memory`` (``query``), ``upsert_memory``
  (``write``: a write may create or replace, the caller does not choose), and
  ``delete_memory`` (``delete``, ``forget``, ``delete_*``, ``forget_*``, wrapped
  whenever a class defines them).
* span name ``{gen_ai.operation.name}``, as the conventions say; which source a span
  belongs to is in ``gen_ai.memory.store.id``, which here is ``MemorySource.name``.
* span kind CLIENT for sources over a backend, INTERNAL for in-process ones,
  composites and decorators.
* ``gen_ai.memory.record.count``: items returned (search), offered (upsert) or named
  for deletion (delete); ``gen_ai.memory.record.id`` for a single-id delete.
* ``error.type`` and status ERROR on failure, with the exception recorded.
* opt-in ``gen_ai.memory.query.text`` and ``gen_ai.memory.records`` (a JSON string
  in the conventions' MemoryRecord shape), only while content capture is on:
  ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`` (read at import) or
  :func:`set_content_capture`.

Beyond the memory span: ``gen_ai.retrieval.top_k`` carries ``k`` (the registry's
attribute for "how many results were asked for"; ``gen_ai.request.top_k`` is the
sampling parameter since v0.1.0, so it is not used), and three ``agentkit.*``
attributes: the class (``agentkit.memory.source.type``, since decorators mirror the
wrapped source's name), ``agentkit.memory.cache.hit`` on CachedMemory, and
``agentkit.memory.accepts_writes`` on writes. A member cut off by its composite's
``timeout`` ends with ``error.type`` ``timeout``, any other cancellation with
``cancelled``.

Cost: without ``opentelemetry-api`` the decorator returns the class untouched, so there
is no wrapper at all. With the API but no provider configured (the global one still the
API's proxy) the wrapper calls straight through without building anything; the real
provider's tracer is looked up once it is set, and kept, since the API sets it once.
With a provider, what is known before the call goes into the span in one dict at its
start (what a sampler may decide on); the current context is read once and handed to
the SDK; results and content are looked at only for a recording span. The SDK's own
span (start, sampling, ids, attributes, processors) is most of what remains.
Spans go through the global tracer provider (or :func:`set_tracer_provider`'s) and the
current OTel context, a contextvar, so they nest under whatever span the caller has
open (a LangChain or LlamaIndex run traced through OpenTelemetry), and composite
members, which run as tasks with a copy of that context, nest under the composite's
span. OpenInference's LangChain tracer keeps its run spans out of the context, so that
one is asked for the run's span (see ``_framework_parent``).
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import json
import os
import sys
import time
from collections.abc import Awaitable, Callable, Collection, Mapping
from contextvars import ContextVar
from typing import Any, Literal, TypeVar, overload

from agentkit.kernel.errors import InvalidArgumentType

try:
    from opentelemetry import context as otel_context
    from opentelemetry import trace as otel_trace
    from opentelemetry.trace import SpanKind, Status, StatusCode
except ImportError:  # the ``otel`` extra is not installed: nothing is wrapped
    TRACING_AVAILABLE = False
else:
    TRACING_AVAILABLE = True

__all__ = [
    "CAPTURE_CONTENT_ENV",
    "TRACING_AVAILABLE",
    "content_capture_enabled",
    "set_content_capture",
    "set_tracer_provider",
    "traced_memory",
]

T = TypeVar("T")
SpanKindName = Literal["client", "internal"]

CAPTURE_CONTENT_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"

SEARCH = "search_memory"
UPSERT = "upsert_memory"
DELETE = "delete_memory"
_OPERATIONS = {"query": SEARCH, "write": UPSERT, "delete": DELETE, "forget": DELETE}
# delete_where, delete_scope, forget_scope...: the forgetting verbs, whatever they target.
_DELETE_PREFIXES = ("delete_", "forget_")


def _operation(method: str) -> str | None:
    found = _OPERATIONS.get(method)
    if found is None and method.startswith(_DELETE_PREFIXES):
        return DELETE
    return found


OPERATION_NAME = "gen_ai.operation.name"
STORE_ID = "gen_ai.memory.store.id"
RECORD_COUNT = "gen_ai.memory.record.count"
RECORD_ID = "gen_ai.memory.record.id"
QUERY_TEXT = "gen_ai.memory.query.text"
RECORDS = "gen_ai.memory.records"
TOP_K = "gen_ai.retrieval.top_k"
ERROR_TYPE = "error.type"
SOURCE_TYPE = "agentkit.memory.source.type"
CACHE_HIT = "agentkit.memory.cache.hit"
ACCEPTS_WRITES = "agentkit.memory.accepts_writes"

_TRACED = "__agentkit_traced__"

# The earliest moment a composite above us gives up on its members (time.monotonic()).
_DEADLINE: ContextVar[float | None] = ContextVar("agentkit_memory_deadline", default=None)
# Set by a cache's span: any traced call below it marks that the cache went to its source.
_REACHED: ContextVar[list[bool] | None] = ContextVar("agentkit_memory_reached", default=None)


def _env_capture() -> bool:
    return os.environ.get(CAPTURE_CONTENT_ENV, "").strip().lower() == "true"


_capture = _env_capture()


def set_content_capture(enabled: bool | None) -> None:
    """Switch recording of query text and records on (True) or off (False).

    ``None`` drops the override and re-reads ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT``.
    Off by default, as the conventions ask: queries and memories are user data.
    """
    global _capture
    if enabled is not None and not isinstance(enabled, bool):
        raise InvalidArgumentType(f"enabled must be a bool or None, got {type(enabled).__name__}")
    _capture = _env_capture() if enabled is None else enabled


_TRACER_NAME = "agentkit.memory"
# set_tracer_provider's tracer, which wins; else the global provider's, looked up once
# that provider is a real one (the API lets it be set once, so it stays). While the
# global provider is still the API's proxy nothing records, and calls go straight through.
_override: Any = None
_global: Any = None


def _resolve_global() -> Any:
    """The global provider's tracer, or None while that provider is the API's proxy."""
    global _global
    provider = otel_trace.get_tracer_provider()
    if isinstance(provider, otel_trace.ProxyTracerProvider):
        return None
    _global = provider.get_tracer(_TRACER_NAME)
    return _global


def set_tracer_provider(provider: Any) -> None:
    """Send memory spans to ``provider`` instead of the global one; ``None`` undoes it.

    For an application that keeps several providers, and for tests, which can then
    leave the process-wide provider (settable once) alone.
    """
    global _override
    if not TRACING_AVAILABLE:
        return
    if provider is not None and not callable(getattr(provider, "get_tracer", None)):
        raise InvalidArgumentType(
            f"provider must be an OpenTelemetry TracerProvider or None, "
            f"got {type(provider).__name__}"
        )
    _override = None if provider is None else provider.get_tracer(_TRACER_NAME)


def content_capture_enabled() -> bool:
    """Whether spans record query text and records right now."""
    return _capture


@overload
def traced_memory(cls: type[T], /) -> type[T]: ...


@overload
def traced_memory(
    *,
    kind: SpanKindName = "internal",
    member_timeout: str | None = None,
    cache: bool = False,
) -> Callable[[type[T]], type[T]]: ...


def traced_memory(
    cls: type[T] | None = None,
    /,
    *,
    kind: SpanKindName = "internal",
    member_timeout: str | None = None,
    cache: bool = False,
) -> type[T] | Callable[[type[T]], type[T]]:
    """Give every ``query``/``write`` of ``cls`` its span, and every forgetting verb.

    Forgetting verbs are ``delete``, ``forget`` and any ``delete_*``/``forget_*``
    coroutine method the class defines (``delete_memory``): counted by the ids they are
    given, else by the number they return.

    ``kind``: ``"client"`` for a source over a backend, ``"internal"`` otherwise.
    ``member_timeout`` names the attribute holding the per-member time limit of a
    fan-out, so a member it cuts off is told apart from one cancelled from outside.
    ``cache=True`` marks a cache in front of ``self.inner``; its search spans say
    whether the source behind it was asked (only when that source is traced too, the
    one way to know it without reaching into the cache).

    Without OpenTelemetry installed the class comes back untouched.
    """

    def apply(target: type[T]) -> type[T]:
        if not TRACING_AVAILABLE:
            return target
        for method, fn in list(vars(target).items()):
            operation = _operation(method)
            if operation is None or not inspect.iscoroutinefunction(fn) or hasattr(fn, _TRACED):
                continue
            wrapped = _wrap(fn, operation, target.__qualname__, kind, member_timeout, cache)
            setattr(target, method, wrapped)
        return target

    return apply if cls is None else apply(cls)


def _wrap(
    fn: Callable[..., Awaitable[Any]],
    operation: str,
    source_type: str,
    kind_name: SpanKindName,
    member_timeout: str | None,
    cache: bool,
) -> Callable[..., Awaitable[Any]]:
    kind = SpanKind.CLIENT if kind_name == "client" else SpanKind.INTERNAL
    attach, detach = otel_context.attach, otel_context.detach
    current = otel_context.get_current
    in_context = otel_trace.set_span_in_context
    is_search = operation == SEARCH
    is_upsert = operation == UPSERT
    default = source_type

    @functools.wraps(fn)
    async def traced(self: Any, *args: Any, **kwargs: Any) -> Any:
        tracer = _override
        if tracer is None:
            tracer = _global if _global is not None else _resolve_global()
        if tracer is None:  # no provider configured: the API would only hand out no-ops
            return await fn(self, *args, **kwargs)
        reached = _REACHED.get()
        if reached is not None:
            reached[0] = True
        # Everything known up front goes in at start: one dict, no per-key locking.
        attributes: dict[str, Any] = {
            OPERATION_NAME: operation,
            STORE_ID: str(getattr(self, "name", default)),
            SOURCE_TYPE: type(self).__qualname__,  # a subclass calling super() says so
        }
        counted = False
        if is_search:
            k = kwargs.get("k")
            if type(k) is int:
                attributes[TOP_K] = k
        elif is_upsert:
            _count_items(attributes, args, kwargs)
        else:
            counted = _count_targets(attributes, args, kwargs)
        # The current context, read once and handed on: the SDK would otherwise look it
        # up again for the parent, the sampler and the processors.
        parent = current()
        if _OI_LANGCHAIN in sys.modules:
            parent = _framework_parent(parent)
        span = tracer.start_span(
            operation,
            context=parent,
            kind=kind,
            attributes=attributes,
            record_exception=False,
            set_status_on_exception=False,
        )
        if not span.is_recording():
            if not span.get_span_context().is_valid:
                return await fn(self, *args, **kwargs)  # a no-op tracer
            # Sampled out, yet still the parent: the sampler's "no" carries down.
            token = attach(in_context(span, parent))
            try:
                return await fn(self, *args, **kwargs)
            finally:
                detach(token)
                span.end()

        inherited = _DEADLINE.get()
        token = attach(in_context(span, parent))
        deadline_token = None
        reached_token = None
        mine: list[bool] | None = None
        try:
            if is_upsert:
                _describe_write(span, self, args, kwargs)
            elif is_search and _capture:
                query = args[0] if args else kwargs.get("query")
                if isinstance(query, str):
                    span.set_attribute(QUERY_TEXT, query)
            if member_timeout is not None:
                limit = getattr(self, member_timeout, None)
                if isinstance(limit, (int, float)) and limit > 0:
                    deadline = time.monotonic() + limit
                    if inherited is not None:
                        deadline = min(deadline, inherited)
                    deadline_token = _DEADLINE.set(deadline)
            if cache and is_search and _is_traced(getattr(self, "inner", None)):
                mine = [False]
                reached_token = _REACHED.set(mine)
            result = await fn(self, *args, **kwargs)
        except BaseException as exc:
            _fail(span, exc, inherited)
            raise
        else:
            if is_search:
                _conclude_search(span, result, mine)
            elif not is_upsert and not counted and type(result) is int:
                # forget(where) names no ids; the count it returns is what it covered.
                span.set_attribute(RECORD_COUNT, result)
            return result
        finally:
            if reached_token is not None:
                _REACHED.reset(reached_token)
            if deadline_token is not None:
                _DEADLINE.reset(deadline_token)
            detach(token)
            span.end()

    setattr(traced, _TRACED, operation)
    return traced


_OI_LANGCHAIN = "openinference.instrumentation.langchain"


def _framework_parent(current: Any) -> Any:
    """The LangChain run's span, when OpenInference traces LangChain and nothing is current.

    OpenInference's LangChain tracer never makes its run spans current (a callback that
    errors would leave the context attached for good), so a memory called inside a
    retriever run would otherwise start a trace of its own. Its public
    ``get_current_span`` finds the run's span from LangChain's child config, which the
    bridges pass down to the memory.
    """
    if otel_trace.get_current_span(current).get_span_context().is_valid:
        return current
    module = sys.modules.get(_OI_LANGCHAIN)
    try:
        if not module.LangChainInstrumentor().is_instrumented_by_opentelemetry:  # type: ignore[union-attr]
            return current
        span = module.get_current_span()  # type: ignore[union-attr]
    except Exception:
        return current
    return current if span is None else otel_trace.set_span_in_context(span, current)


def _is_traced(source: object) -> bool:
    return source is not None and hasattr(getattr(type(source), "query", None), _TRACED)


# --- per operation: attributes from the arguments, then from the result ---------------


def _count_items(attributes: dict[str, Any], args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    # Only a list or tuple is looked into: an iterator would be used up before the
    # source saw it, and anything else is the source's to refuse, with its own error.
    items = args[0] if args else kw.get("items")
    if isinstance(items, (list, tuple)):
        attributes[RECORD_COUNT] = len(items)


def _count_targets(attributes: dict[str, Any], args: tuple[Any, ...], kw: dict[str, Any]) -> bool:
    """A delete's ids: one (``record.id``) or how many; False when it names none."""
    target = args[0] if args else kw.get("ids")
    if isinstance(target, str):
        attributes[RECORD_ID] = target
        attributes[RECORD_COUNT] = 1
        return True
    if isinstance(target, Collection) and not isinstance(target, (bytes, Mapping)):
        attributes[RECORD_COUNT] = len(target)
        one = _single_id(target)
        if one is not None:
            attributes[RECORD_ID] = one
        return True
    return False


def _single_id(ids: Collection[Any]) -> str | None:
    """The id a delete names when it names exactly one (every source takes a list,
    so ``["a"]`` is the single-id delete; ``["a", "a"]`` still deletes one record)."""
    if not ids:
        return None
    first = next(iter(ids))
    if not isinstance(first, str) or any(other != first for other in ids):
        return None
    return first


def _describe_write(span: Any, source: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> None:
    span.set_attribute(ACCEPTS_WRITES, _accepts_writes(source))
    if _capture:
        items = args[0] if args else kw.get("items")
        if isinstance(items, (list, tuple)):
            _set_records(span, items)


def _conclude_search(span: Any, result: Any, reached: list[bool] | None) -> None:
    if reached is not None:
        span.set_attribute(CACHE_HIT, not reached[0])
    if isinstance(result, list):
        span.set_attribute(RECORD_COUNT, len(result))
        if _capture:
            _set_records(span, result)


def _accepts_writes(source: Any) -> bool:
    try:
        return bool(getattr(source, "accepts_writes", True))
    except Exception:
        return True


def _set_records(span: Any, items: Collection[Any]) -> None:
    """``gen_ai.memory.records`` as JSON (MemoryRecord: content, id, score, metadata)."""
    try:
        records = []
        for item in items:
            record: dict[str, Any] = {"content": getattr(item, "content", None)}
            for field in ("id", "score", "source"):
                value = getattr(item, field, None)
                if value is not None:
                    record[field] = value
            metadata = getattr(item, "metadata", None)
            if isinstance(metadata, Mapping) and metadata:
                record["metadata"] = dict(metadata)
            records.append(record)
        span.set_attribute(RECORDS, json.dumps(records, default=str, ensure_ascii=False))
    except Exception:
        return  # content is a courtesy: never let it break the call


# --- failure ------------------------------------------------------------------------


def _fail(span: Any, exc: BaseException, deadline: float | None) -> None:
    if isinstance(exc, asyncio.CancelledError):
        # A composite's per-member limit arrives as a cancellation; the deadline it
        # left in the context says whether that limit had passed.
        reason = "timeout" if deadline is not None and time.monotonic() >= deadline else "cancelled"
        span.set_attribute(ERROR_TYPE, reason)
        span.set_status(Status(StatusCode.ERROR, reason))
        return
    span.set_attribute(ERROR_TYPE, _error_type(exc))
    span.record_exception(exc, escaped=True)
    span.set_status(Status(StatusCode.ERROR, f"{type(exc).__name__}: {exc}"))


def _error_type(exc: BaseException) -> str:
    kind = type(exc)
    if kind.__module__ == "builtins":
        return kind.__qualname__
    return f"{kind.__module__}.{kind.__qualname__}"
