"""skillrack's client carries the current trace to the agent it calls (issue 16, item 2).

Every request of a :class:`SkillClient` goes through
:class:`~skillrack.client.transport.GuardedTransport`, which adds W3C
``traceparent``/``tracestate`` from the current span, and nothing when no
span is recording.  (Two real agents in one trace: tests/serve/observability/test_traces.py.)
"""

from __future__ import annotations

import httpx
from opentelemetry import baggage, context
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.trace import (
    NonRecordingSpan,
    SpanContext,
    TraceFlags,
    TraceState,
    set_span_in_context,
)

from skillrack.client.bounds import ReadBounds
from skillrack.client.origin import OriginPolicy
from skillrack.client.transport import http_client, origin_scope

AGENT = "http://agent.example"


async def sent_headers() -> httpx.Headers:
    """The headers of one request through the client's transport, as the agent receives them."""
    received: list[httpx.Request] = []

    def agent(request: httpx.Request) -> httpx.Response:
        received.append(request)
        return httpx.Response(200, json={})

    client = http_client(
        headers={}, timeout=5, bounds=ReadBounds(), transport=httpx.MockTransport(agent)
    )
    async with client:
        with origin_scope(OriginPolicy.for_url(AGENT)):
            await client.get(AGENT + "/.well-known/agent-card.json")
    (request,) = received
    return request.headers


async def test_the_current_span_goes_along_as_traceparent() -> None:
    tracer = TracerProvider().get_tracer("test")
    with tracer.start_as_current_span("handler") as span:
        headers = await sent_headers()
    ids = span.get_span_context()
    flags = int(ids.trace_flags)
    assert headers["traceparent"] == f"00-{ids.trace_id:032x}-{ids.span_id:016x}-{flags:02x}"


async def test_tracestate_goes_along_and_baggage_does_not() -> None:
    remote = SpanContext(
        trace_id=0x4BF92F3577B34DA6A3CE929D0E0E4736,
        span_id=0x00F067AA0BA902B7,
        is_remote=True,
        trace_flags=TraceFlags(TraceFlags.SAMPLED),
        trace_state=TraceState([("vendor", "opaque")]),
    )
    current = baggage.set_baggage("tenant", "acme", set_span_in_context(NonRecordingSpan(remote)))
    token = context.attach(current)
    try:
        headers = await sent_headers()
    finally:
        context.detach(token)
    assert headers["traceparent"] == "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    assert headers["tracestate"] == "vendor=opaque"
    assert "baggage" not in headers


async def test_without_a_span_nothing_is_added() -> None:
    headers = await sent_headers()
    assert "traceparent" not in headers and "tracestate" not in headers
