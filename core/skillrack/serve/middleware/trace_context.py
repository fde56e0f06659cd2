"""The caller's W3C trace context (``traceparent``, ``tracestate``) made current for its request.

So that an invocation's spans (:mod:`skillrack.serve.observability.traces`), and a2a-sdk's
when its tracing is on, join the caller's trace: a two-hop workflow (caller,
agent A, agent B) is one trace.  a2a-sdk runs the executor in a copy of the
request's context, so what is attached here reaches it on both bindings.

Installed only when a tracer provider is (``build_server``): with tracing off
the headers are not even read.  Only the W3C Trace Context headers are read,
with OpenTelemetry's own propagator, which ignores a malformed or oversized
value (the request then starts a new trace); ``baggage`` is not read, since
one vendor's key-value pairs are not this agent's to act on.
"""

from __future__ import annotations

from contextvars import Token

from opentelemetry import context
from opentelemetry.context import Context
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator
from starlette.types import ASGIApp, Receive, Scope, Send

#: The one propagator of both ends (the client injects with the same class).
W3C_TRACE_CONTEXT = TraceContextTextMapPropagator()
_HEADERS = {b"traceparent": "traceparent", b"tracestate": "tracestate"}


class TraceContext:
    """Attaches the context extracted from the request's ``traceparent`` while it is served."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        carrier: dict[str, list[str]] = {}
        if scope["type"] == "http":
            for name, value in scope["headers"]:
                key = _HEADERS.get(name.lower())
                if key is not None:
                    carrier.setdefault(key, []).append(value.decode("latin-1"))
        token = attach_trace_context(carrier)
        if token is None:
            await self.app(scope, receive, send)
            return
        try:
            await self.app(scope, receive, send)
        finally:
            context.detach(token)


def attach_trace_context(carrier: dict[str, list[str]]) -> Token[Context] | None:
    """Make the context in ``carrier`` (``traceparent``/``tracestate`` values) current.

    None when there is no ``traceparent``; otherwise the token to detach with.
    The gRPC binding calls this with the call's metadata.
    """
    if "traceparent" not in carrier:
        return None
    # Repeated tracestate headers are one list (RFC 9110 field combination).
    if "tracestate" in carrier:
        carrier["tracestate"] = [",".join(carrier["tracestate"])]
    return context.attach(W3C_TRACE_CONTEXT.extract(carrier))
