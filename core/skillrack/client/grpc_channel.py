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
  ``traceparent``/``tracestate`` as over HTTP; an OAuth token is sent only
  to the origin the call named, as over HTTP, so it never reaches a gRPC
  port (another origin) and OAuth callers use JSON-RPC or HTTP+JSON;
* the largest message read is ``max_response_bytes`` (grpcio's
  ``max_receive_message_length``); the client counts stream events as on
  the other bindings;
* TLS uses the client's ``ClientTls``: its CA bundle (else the system's),
  and its client certificate for mutual TLS.

:func:`grpc_failure` turns a gRPC status into the client's conditions: an
``UNAUTHENTICATED`` or ``PERMISSION_DENIED`` refusal is
``authorization_failed``, ``RESOURCE_EXHAUSTED`` is
``resource_limit_exceeded``, as the HTTP statuses 401, 403 and 429 are.
grpcio is imported only when a gRPC channel is made (the ``grpc`` extra).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

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
) -> Callable[[str], Any]:
    """a2a-sdk's ``grpc_channel_factory``: one ``grpc.aio`` channel per target, headers attached."""
    import grpc
    import grpc.aio

    metadata = tuple((name.lower(), value) for name, value in headers.items())

    def with_headers(details: Any) -> Any:
        trace: dict[str, str] = {}
        _TRACE_CONTEXT.inject(trace)  # the current span's, as over HTTP; nothing without one
        return details._replace(metadata=[*(details.metadata or ()), *metadata, *trace.items()])

    # Two classes: grpc.aio files an interceptor under the first kind it is an instance of.
    class _Unary(grpc.aio.UnaryUnaryClientInterceptor):  # type: ignore[misc]
        async def intercept_unary_unary(self, continuation: Any, details: Any, request: Any) -> Any:
            return await continuation(with_headers(details), request)

    class _Stream(grpc.aio.UnaryStreamClientInterceptor):  # type: ignore[misc]
        async def intercept_unary_stream(
            self, continuation: Any, details: Any, request: Any
        ) -> Any:
            return await continuation(with_headers(details), request)

    options = [
        ("grpc.max_receive_message_length", max_message_bytes),
        ("grpc.enable_http_proxy", 0),  # as trust_env=False over HTTP: no proxy routes around
    ]
    interceptors = [_Unary(), _Stream()]

    def factory(url: str) -> Any:
        target, _ = grpc_target(url)
        if not secure:
            return grpc.aio.insecure_channel(target, options=options, interceptors=interceptors)
        credentials = grpc.ssl_channel_credentials(
            root_certificates=_read(tls.cafile) if tls else None,
            private_key=_read(tls.keyfile or tls.certfile) if tls and tls.certfile else None,
            certificate_chain=_read(tls.certfile) if tls else None,
        )
        return grpc.aio.secure_channel(
            target, credentials, options=options, interceptors=interceptors
        )

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
            f"{what}: the agent refused the call over gRPC ({code.name}: {details}); send "
            "the agent's credentials with --header (they go as gRPC metadata)",
        )
    if code == grpc.StatusCode.RESOURCE_EXHAUSTED:
        wait = dict(cause.trailing_metadata() or ()).get("retry-after")
        after = f"; the agent asks to wait {wait} s" if wait else ""
        return SkillCallError.local(
            ErrorCode.RESOURCE_LIMIT_EXCEEDED,
            f"{what}: the agent's limit was reached over gRPC ({details}){after}",
        )
    if code == grpc.StatusCode.UNAVAILABLE:
        return SkillCallError(
            ClientCode.TRANSPORT_ERROR, f"{what}: the gRPC interface is unavailable ({details})"
        )
    return None


__all__ = [
    "GRPC",
    "binding_name",
    "channel_factory",
    "grpc_failure",
    "grpc_origin",
    "grpc_target",
    "judged_url",
]
