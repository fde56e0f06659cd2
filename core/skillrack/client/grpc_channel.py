"""The client's gRPC binding: channels for a2a-sdk's ``GrpcTransport``, under the client's rules.

a2a-sdk's gRPC transport takes a channel factory and sends only what a
call's ``service_parameters`` name as metadata.  The client's trust boundary
lives in an ``httpx`` transport (:mod:`skillrack.client.transport`), which
gRPC never passes through, so the same rules are applied here, where the
channel is made:

* a card's gRPC interface (``host:port``, a gRPC target, or a URL with a
  ``grpc``/``grpcs``/``http``/``https`` scheme) is an origin like any other:
  ``https://host:port`` when the call named an ``https`` agent (the channel
  then uses TLS), else ``http://host:port``.  It must be the named origin or
  an allowed one (``--allow-origin``), and an ``https`` agent never leads to
  plaintext gRPC; :func:`grpc_origin` gives the URL the origin policy judges;
* the caller's headers go as metadata (names in lower case, as gRPC wants
  them) on that channel only, by an interceptor, with the current span's
  ``traceparent``/``tracestate`` as over HTTP; an OAuth token goes as
  ``authorization`` metadata only to a gRPC interface on the named agent's
  host over TLS (or on loopback), or to an origin the caller named for it
  (:mod:`skillrack.client.token_reach`); elsewhere the call is refused first;
* the largest message read is ``max_response_bytes`` (grpcio's
  ``max_receive_message_length``); the client counts stream events as on
  the other bindings;
* TLS uses the client's ``ClientTls``: its CA bundle (else the system's),
  and its client certificate for mutual TLS.

:func:`grpc_failure` turns a gRPC status into the client's conditions: an
``UNAUTHENTICATED`` or ``PERMISSION_DENIED`` refusal is
``authorization_failed``, as HTTP 401 and 403 are; the agent's
``RESOURCE_EXHAUSTED`` and ``UNAVAILABLE`` are what HTTP 429 and 503 are
(:func:`grpc_busy`): ``resource_limit_exceeded`` before any task, with the
wait the agent asked for (a ``google.rpc.RetryInfo`` in the status details,
else ``retry-after`` trailing metadata, skillrack's), which ``--retry``
honours (:mod:`skillrack.client.busy`).  The statuses grpcio makes itself
are not the agent's: a message over the client's bound is the client's
``resource_limit_exceeded``, never retried; a connection that failed or was
lost is a ``transport_error``, as over HTTP, never retried either (grpcio
says so in its details, which are all there is to tell the two apart).
grpcio is imported only when a gRPC channel is made (the ``grpc`` extra).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from skillrack.client.busy import ADVICE, AgentBusy, retry_after
from skillrack.client.challenge import GRPC_HINT
from skillrack.client.oauth import TokenSource
from skillrack.client.origin import Origin
from skillrack.client.tls import ClientTls
from skillrack.errors import ClientCode, ErrorCode, SkillCallError

#: The card's protocolBinding of A2A's gRPC binding.
GRPC = "GRPC"
_SECURE = {"https", "grpcs"}
#: W3C Trace Context, as the HTTP transport sends it (skillrack.client.transport).
_TRACE_CONTEXT = TraceContextTextMapPropagator()


def grpc_target(url: str) -> tuple[str, bool | None]:
    """``(host:port, secure)`` of a card's gRPC interface; ``secure`` None when it has no scheme."""
    if "://" not in url:
        return url, None
    parts = urlsplit(url)
    return parts.netloc, parts.scheme.lower() in _SECURE


def grpc_origin(url: str, named_scheme: str) -> str:
    """The URL whose origin the client's origin policy judges for a gRPC interface."""
    target, secure = grpc_target(url)
    scheme = named_scheme if secure is None else ("https" if secure else "http")
    return f"{scheme}://{target}"


def judged_url(interface: Any, named_scheme: str) -> str:
    """The URL the origin policy judges for a card's interface (a gRPC target made a URL)."""
    url = str(interface.url)
    return grpc_origin(url, named_scheme) if interface.protocol_binding == GRPC else url


def binding_name(name: str | None) -> str | None:
    """A binding's name as the card spells it (``grpc`` -> ``GRPC``), or ValueError."""
    if name is None:
        return None
    for known in ("JSONRPC", "HTTP+JSON", GRPC):
        if name.upper() == known:
            return known
    raise ValueError(f"binding {name!r} is not JSONRPC, HTTP+JSON or GRPC")


def _read(path: str | None) -> bytes | None:
    return Path(path).read_bytes() if path else None


def channel_factory(
    *,
    secure: bool,
    headers: Mapping[str, str],
    tls: ClientTls | None,
    max_message_bytes: int,
    bearer: TokenSource | None = None,
    bearer_to: Callable[[Origin], bool] = lambda target: False,
) -> Callable[[str], Any]:
    """a2a-sdk's ``grpc_channel_factory``: one ``grpc.aio`` channel per target, headers attached.

    ``bearer``'s token goes as ``authorization`` metadata to the targets
    ``bearer_to`` accepts (:mod:`skillrack.client.token_reach`), to no other;
    a call refused with ``UNAUTHENTICATED`` drops it from the cache.
    """
    import grpc
    import grpc.aio

    metadata = tuple((name.lower(), value) for name, value in headers.items())
    checks: set[asyncio.Future[None]] = set()  # refusal checks under way (kept from the GC)
    options = [
        ("grpc.max_receive_message_length", max_message_bytes),
        ("grpc.enable_http_proxy", 0),  # as trust_env=False over HTTP: no proxy routes around
    ]

    def interceptors(token: TokenSource | None) -> list[Any]:
        async def with_headers(details: Any) -> tuple[Any, str | None]:
            """``details`` with the metadata to send, and the token sent (None: none)."""
            trace: dict[str, str] = {}
            _TRACE_CONTEXT.inject(trace)  # the current span's, as over HTTP; nothing without one
            sent = [*(details.metadata or ()), *metadata, *trace.items()]
            value = (await token.token()).value if token is not None else None
            if value is not None:
                sent.append(("authorization", f"Bearer {value}"))
            return details._replace(metadata=sent), value

        async def forget_if_refused(call: Any, value: str) -> None:
            """As after a 401 over HTTP: a refused token is dropped, the next call asks anew."""
            if token is not None and await call.code() == grpc.StatusCode.UNAUTHENTICATED:
                token.invalidate(value)

        def ended(value: str) -> Callable[[Any], None]:
            """A stream's done callback: check it (a task, held in ``checks`` until it ran)."""

            def check(call: Any) -> None:
                running = asyncio.ensure_future(forget_if_refused(call, value))
                checks.add(running)
                running.add_done_callback(checks.discard)

            return check

        # Two classes: grpc.aio files an interceptor under the first kind it is an instance of.
        class _Unary(grpc.aio.UnaryUnaryClientInterceptor):  # type: ignore[misc]
            async def intercept_unary_unary(
                self, continuation: Any, details: Any, request: Any
            ) -> Any:
                details, value = await with_headers(details)
                call = await continuation(details, request)
                if value is not None:  # before the caller sees the answer: its next call asks anew
                    await forget_if_refused(call, value)
                return call

        class _Stream(grpc.aio.UnaryStreamClientInterceptor):  # type: ignore[misc]
            async def intercept_unary_stream(
                self, continuation: Any, details: Any, request: Any
            ) -> Any:
                details, value = await with_headers(details)
                call = await continuation(details, request)
                if value is not None:
                    call.add_done_callback(ended(value))
                return call

        return [_Unary(), _Stream()]

    def factory(url: str) -> Any:
        target, _ = grpc_target(url)
        origin = Origin.of(f"{'https' if secure else 'http'}://{target}")
        chosen = interceptors(bearer if bearer is not None and bearer_to(origin) else None)
        if not secure:
            return grpc.aio.insecure_channel(target, options=options, interceptors=chosen)
        credentials = grpc.ssl_channel_credentials(
            root_certificates=_read(tls.cafile) if tls else None,
            private_key=_read(tls.keyfile or tls.certfile) if tls and tls.certfile else None,
            certificate_chain=_read(tls.certfile) if tls else None,
        )
        return grpc.aio.secure_channel(target, credentials, options=options, interceptors=chosen)

    return factory


def grpc_failure(exc: BaseException, what: str) -> SkillCallError | None:
    """The client's condition for a gRPC status under ``exc`` (a2a-sdk wraps it), else None."""
    try:
        import grpc
        import grpc.aio
    except ImportError:  # pragma: no cover - no gRPC channel was ever made then
        return None
    cause = exc if isinstance(exc, grpc.aio.AioRpcError) else exc.__cause__
    if not isinstance(cause, grpc.aio.AioRpcError):
        return None
    code, details = cause.code(), cause.details() or ""
    if code in (grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.PERMISSION_DENIED):
        return SkillCallError.local(
            ErrorCode.AUTHORIZATION_FAILED,
            f"{what}: the agent refused the call over gRPC ({code.name}: {details}); {GRPC_HINT}",
        )
    if code == grpc.StatusCode.RESOURCE_EXHAUSTED and any(t in details for t in _TOO_LARGE):
        return SkillCallError.local(  # grpcio's own refusal, here: the agent is not busy
            ErrorCode.RESOURCE_LIMIT_EXCEEDED,
            f"{what}: a message is over this client's bound ({details}); raise "
            "--max-response-bytes if the agent's answers are expected to be this large",
        )
    said = details.lower()
    if code == grpc.StatusCode.UNAVAILABLE and any(part in said for part in _CONNECTION):
        return SkillCallError(
            ClientCode.TRANSPORT_ERROR,
            f"{what}: the gRPC connection failed ({details})",
        )
    if code in (grpc.StatusCode.RESOURCE_EXHAUSTED, grpc.StatusCode.UNAVAILABLE):
        return grpc_busy(code.name, details, cause.trailing_metadata(), what)
    return None


#: How grpcio words the statuses it makes itself, which are not the agent's answers: a
#: message over a bound (``Received message larger than max (N vs. M)``, perhaps inside
#: ``Stream removed (...)``), and a connection that failed or was lost (the message may
#: have reached the agent: never resent).
_TOO_LARGE = tuple(f"{way} message larger than max" for way in ("Received", "Sent"))
_CONNECTION = (
    "failed to connect",
    "dns resolution failed",
    "socket closed",
    "connection reset",
    "broken pipe",
    "goaway",
    "keepalive",
    "stream removed",
    "end of tcp stream",
)


def grpc_wait(trailing: Any) -> float | None:
    """The wait an agent asked for: ``google.rpc.RetryInfo`` in the status details, else the
    ``retry-after`` trailing metadata (seconds or an HTTP date, as over HTTP); None if neither."""
    from google.rpc import error_details_pb2, status_pb2

    pairs = [(str(k).lower(), v) for k, v in trailing or ()]
    for name, value in pairs:
        if name != "grpc-status-details-bin" or not isinstance(value, bytes):
            continue
        try:
            status = status_pb2.Status.FromString(value)
        except ValueError:  # protobuf's DecodeError: no details then
            continue
        for detail in status.details:
            info = error_details_pb2.RetryInfo()
            if detail.Unpack(info) and info.HasField("retry_delay"):
                seconds: float = info.retry_delay.ToTimedelta().total_seconds()
                return max(0.0, seconds)
    text = {name: str(value) for name, value in pairs if isinstance(value, str)}
    return retry_after(text)


def grpc_busy(code: str, details: str, trailing: Any, what: str) -> AgentBusy:
    """``RESOURCE_EXHAUSTED`` or ``UNAVAILABLE`` from the agent, as HTTP 429 and 503 are:
    ``resource_limit_exceeded`` with the wait it asked for, sent again by ``--retry``."""
    wait = grpc_wait(trailing)
    told = f" ({details[:200]})" if details else ""
    when = f"; it asks to retry after {wait:g} s" if wait is not None else ""
    return AgentBusy(
        ErrorCode.RESOURCE_LIMIT_EXCEEDED,
        f"{what}: the agent answered gRPC {code}{told}{when}{ADVICE}",
        retry_after=wait,
    )


__all__ = [
    "GRPC",
    "binding_name",
    "channel_factory",
    "grpc_busy",
    "grpc_failure",
    "grpc_origin",
    "grpc_target",
    "grpc_wait",
    "judged_url",
]
