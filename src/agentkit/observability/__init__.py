"""agentkit.observability: OpenTelemetry spans for what agentkit does.

Memory operations (``query``, ``write``, ``delete``/``forget`` of every shipped source,
composite and decorator) emit spans following the OpenTelemetry GenAI semantic
conventions once ``opentelemetry-api`` is installed (``pip install
'agentkit-memory[otel]'``) and the application configures a tracer provider. A
third-party MemorySource gets the same spans with ``@traced_memory`` on its class.
See docs/tracing.md.
"""

from agentkit.observability._memory_spans import (
    CAPTURE_CONTENT_ENV,
    TRACING_AVAILABLE,
    content_capture_enabled,
    set_content_capture,
    set_tracer_provider,
    traced_memory,
)

__all__ = [
    "CAPTURE_CONTENT_ENV",
    "TRACING_AVAILABLE",
    "content_capture_enabled",
    "set_content_capture",
    "set_tracer_provider",
    "traced_memory",
]
