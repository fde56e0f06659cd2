"""A2A's gRPC binding: a2a-sdk's ``GrpcHandler`` over the request handler of the HTTP bindings.

``skillrack serve --grpc-port N`` (or ``[server] grpc_port``) serves the
``lf.a2a.v1.A2AService`` on a port of its own, from the same process, event
loop and request handler as JSON-RPC and HTTP+JSON
(:func:`skillrack.serve.server.build_server` builds one handler and hands it to
all three), so a task, its Artifacts and the draft's errors are the same
objects whichever binding carried the call.

The HTTP middleware does not see gRPC calls, so :class:`SkillrackGrpcHandler`
runs the gRPC step of each layer of the same middleware stack
(:mod:`skillrack.serve.middleware.stack`, :data:`GRPC_STEPS`), in the stack's
order and with the layer's own settings, before a2a-sdk's handler runs: the
failed-authentication limit (counted in the HTTP bindings' window),
authentication (gRPC metadata is read as the HTTP headers are:
``authorization``, ``x-api-key``, ... through
:func:`~skillrack.serve.middleware.authentication.admit`), the per-caller
rate limit (one budget across bindings), the request limits of the body
guard (parts, Data Part nesting, integers beyond 2^53-1, non-finite numbers;
the size is gRPC's ``max_receive_message_length``, and a parsed protobuf
message has no JSON nesting for ``max_json_depth`` to bound), and the ``A2A-Version``
check of the HTTP bindings.  The ``A2A-Extensions`` metadata activates the
schema-interface extension, and the response's initial metadata echoes it;
with tracing on, ``traceparent``/``tracestate`` metadata is the caller's
trace context, as the headers are
(:func:`~skillrack.serve.middleware.trace_context.attach_trace_context`).

Errors have one shape per kind on every binding.  A refusal before any task
exists is a gRPC status whose ``google.rpc.ErrorInfo`` (domain ``skillrack``)
carries the draft's code, as the HTTP bindings' errors do
(:func:`~skillrack.serve.middleware.binding_errors.error_info`): 401 is
``UNAUTHENTICATED`` (with the ``www-authenticate`` challenges as trailing
metadata), 429 ``RESOURCE_EXHAUSTED`` (with ``retry-after``), a refused
request ``INVALID_ARGUMENT``.  a2a-sdk's A2A errors keep its mapping
(``ErrorInfo`` domain ``a2a-protocol.org``) with ``error.data`` in
``metadata`` as over HTTP+JSON, and the error sanitizer's rules
(:func:`~skillrack.serve.middleware.error_sanitizer.sanitize`) keep internal
text away; an unexpected exception is ``INTERNAL`` "internal error".  Errors
the draft puts in a Task (``input_invalid``, ``authorization_failed``, ...)
are Tasks here too.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
from collections.abc import (
    AsyncIterable,
    AsyncIterator,
    Awaitable,
    Callable,
    Iterator,
    Mapping,
    Sequence,
)
from dataclasses import dataclass, field
from typing import Any, TypeVar

import grpc
import grpc.aio
from a2a.server.context import ServerCallContext
from a2a.server.request_handlers import GrpcHandler
from a2a.server.request_handlers.request_handler import RequestHandler
from a2a.types import SendMessageRequest, a2a_pb2
from a2a.utils.constants import PROTOCOL_VERSION_1_0
from a2a.utils.error_handlers import build_error_details
from a2a.utils.errors import A2A_ERROR_MAPPING, A2AError
from a2a.utils.grpc_status import status_to_grpc
from a2a.utils.version_validator import validate_version
from google.protobuf import any_pb2, json_format, message, message_factory
from google.rpc import error_details_pb2, status_pb2
from opentelemetry import context as otel_context

from skillrack.errors import ErrorCode, SkillrackError, StartupError
from skillrack.protocol.messages import EXTENSION_URI
from skillrack.protocol.values import DATA_PART_DEPTH, SAFE_INTEGER, UnsafeNumber, check_numbers
from skillrack.serve.bindings.call_context import bind_call
from skillrack.serve.bindings.grpc_streams import SharedStreamsHandler, as_sent
from skillrack.serve.bindings.stream_events import EventEncodings
from skillrack.serve.bindings.tls import TlsFiles, grpc_server_credentials
from skillrack.serve.middleware.authentication import Authenticator
from skillrack.serve.middleware.binding_errors import error_info, status_name
from skillrack.serve.middleware.body_guard import struct_too_deep
from skillrack.serve.middleware.drain import (
    DRAINING,
    RETRY_AFTER_S,
    STORE_RETRY_AFTER_S,
    DrainState,
    store_unreachable,
)
from skillrack.serve.middleware.error_sanitizer import sanitize
from skillrack.serve.middleware.rate_limit import rate_key
from skillrack.serve.middleware.stack import (
    AUTHENTICATION,
    BODY_GUARD,
    DRAIN,
    ERROR_SANITIZER,
    EXTENSION_ECHO,
    FAILED_AUTHENTICATION_LIMIT,
    RATE_LIMIT,
    TRACE_CONTEXT,
    Layer,
    Stack,
)
from skillrack.serve.middleware.trace_context import attach_trace_context
from skillrack.serve.observability.metrics import (
    REFUSED_DRAINING,
    REFUSED_LIMITS_STORE,
    REFUSED_TASK_STORE,
    Metrics,
)
from skillrack.serve.security.caller import Caller
from skillrack.serve.security.client_certificate import ClientCertificate
from skillrack.serve.stores.counters import OUTAGE_RETRY_AFTER_S, LimitCounter, LimitsUnavailable
from skillrack.serve.stores.sliding_window import SlidingWindow

logger = logging.getLogger(__name__)

#: The A2A service's path: what authentication plugins see as ``RequestCredentials.path``.
SERVICE_PATH = "/lf.a2a.v1.A2AService"

T = TypeVar("T")


class CallRefused(SkillrackError):
    """A gRPC call refused before any task exists: an HTTP-like status and the draft's code."""

    def __init__(
        self,
        status: int,
        code: ErrorCode,
        message: str,
        *,
        pointer: str | None = None,
        trailing: Sequence[tuple[str, str]] = (),
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.pointer = pointer
        self.trailing = tuple(trailing)


@dataclass
class _Call:
    """What the admission steps learn of one gRPC call, in the stack's order."""

    request: message.Message | Malformed
    context: grpc.aio.ServicerContext
    #: The client's address (the rate and failure windows' key without a caller).
    client_host: str | None
    #: The call's metadata as (name, value) pairs: what HTTP headers are to the middleware.
    metadata: list[tuple[str, str]]
    caller: Caller | None = None
    #: Extensions the call activated (the executor adds to it); echoed when the
    #: extension echo's step ran.
    activated: set[str] = field(default_factory=set)
    echo: bool = False
    #: ``traceparent`` / ``tracestate`` values, when the trace context's step ran.
    trace_carrier: dict[str, list[str]] = field(default_factory=dict)
    #: Called when authentication refuses the call (the failed-authentication window).
    refused_authentication: Callable[[], None] = lambda: None

    @property
    def key(self) -> str:
        return self.client_host or "?"

    @property
    def headers(self) -> dict[str, str]:
        return {name.lower(): value for name, value in self.metadata}


def peer_certificate(context: grpc.aio.ServicerContext) -> ClientCertificate | None:
    """The client certificate gRPC's handshake required and verified (``[server] ssl_client_ca``).

    gRPC puts it in the call's ``auth_context`` (``x509_pem_cert``) only when
    the server's credentials verify client certificates
    (:func:`~skillrack.serve.bindings.tls.grpc_server_credentials`), so what is found
    is verified, as on the HTTP bindings.
    """
    pem = (context.auth_context() or {}).get("x509_pem_cert")
    if not pem:
        return None
    try:
        return ClientCertificate.from_pem(pem[0])
    except ValueError as exc:
        logger.warning("a verified gRPC client certificate could not be parsed: %s", exc)
        return None


def peer_host(peer: str) -> str | None:
    """The client's address from gRPC's peer string (``ipv4:127.0.0.1:5000``, ``ipv6:[::1]:5``)."""
    kind, _, rest = peer.partition(":")
    if kind == "ipv4":
        return rest.rpartition(":")[0] or None
    if kind == "ipv6":
        return rest.rpartition(":")[0].strip("[]") or None
    return rest or None  # unix sockets and the like: the whole rest names the peer


def _any(detail: dict[str, Any]) -> any_pb2.Any | None:
    """One detail of a REST-shaped error as a packed ``google.protobuf.Any``."""
    kind = str(detail.get("@type", ""))
    fields = {k: v for k, v in detail.items() if k != "@type"}
    packed = any_pb2.Any()
    if kind.endswith("google.rpc.ErrorInfo"):
        metadata = {
            k: v if isinstance(v, str) else json.dumps(v)
            for k, v in (fields.get("metadata") or {}).items()
        }
        packed.Pack(
            error_details_pb2.ErrorInfo(
                reason=str(fields.get("reason", "")),
                domain=str(fields.get("domain", "")),
                metadata=metadata,
            )
        )
        return packed
    if kind.endswith("google.rpc.BadRequest"):
        packed.Pack(
            json_format.ParseDict(
                fields, error_details_pb2.BadRequest(), ignore_unknown_fields=True
            )
        )
        return packed
    return None


async def abort_with(
    context: grpc.aio.ServicerContext,
    status: str,
    text: str,
    details: list[dict[str, Any]],
    trailing: Sequence[tuple[str, str]] = (),
) -> None:
    """End the call with gRPC status ``status`` (its name), ``text`` and the rich details."""
    code = grpc.StatusCode[status]
    rich = status_pb2.Status(code=code.value[0], message=text)
    for detail in details:
        packed = _any(detail)
        if packed is not None:
            rich.details.append(packed)
    grpc_status = status_to_grpc(rich)
    context.set_trailing_metadata((*trailing, *grpc_status.trailing_metadata))
    await context.abort(grpc_status.code, grpc_status.details)


async def abort_refused(context: grpc.aio.ServicerContext, refused: CallRefused) -> None:
    """The gRPC form of a refusal before any task exists (the HTTP bindings' ``binding_error``)."""
    await abort_with(
        context,
        status_name(refused.status),
        refused.message,
        [error_info(refused.code, refused.pointer)],
        refused.trailing,
    )


def _numbers_as_written(value: Any) -> Any:
    """``value`` with integral doubles as ints, so that ``check_numbers`` sees them."""
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError("not finite")
        return int(value) if value.is_integer() else value
    if isinstance(value, dict):
        return {k: _numbers_as_written(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_numbers_as_written(v) for v in value]
    return value


class SkillrackGrpcHandler(SharedStreamsHandler):
    """a2a-sdk's gRPC servicer, behind the same middleware stack as the HTTP bindings.

    Its streams send each event's bytes from the encodings shared with the
    other bindings (:class:`~skillrack.serve.bindings.grpc_streams.SharedStreamsHandler`).

    Every A2A method of ``GrpcHandler`` runs through ``_handle_unary`` or
    ``_handle_stream``; both admit the call through :meth:`_admit`, which runs
    the gRPC step of each layer of the stack
    (:mod:`skillrack.serve.middleware.stack`) in the stack's order, with the
    layer's own settings.  No method escapes the gates, and a layer added to
    the stack without a step here stops the servicer from being built.
    """

    def __init__(
        self,
        request_handler: RequestHandler,
        stack: Stack,
        encodings: EventEncodings | None = None,
    ) -> None:
        super().__init__(request_handler, encodings)
        missing = [layer.name for layer in stack if layer.on_grpc and layer.name not in GRPC_STEPS]
        if missing:
            raise StartupError(
                f"the gRPC binding has no step for middleware {', '.join(missing)}: add one to "
                "skillrack.serve.bindings.grpc_server.GRPC_STEPS or say in the stack why "
                "it does not apply to gRPC (Layer.not_on_grpc)"
            )
        self._layers = tuple(layer for layer in stack if layer.on_grpc)
        self._drain: DrainState = stack.layer(DRAIN).options["state"]
        authentication = stack.layer(AUTHENTICATION).options
        self._authenticator = Authenticator(authentication["manager"], authentication["metrics"])

    # -- the gates -----------------------------------------------------------------------------

    async def _admit(
        self, request: message.Message | Malformed, context: grpc.aio.ServicerContext
    ) -> _Call:
        """Run each layer's gRPC step, outermost first; a refusal raises :class:`CallRefused`."""
        call = _Call(
            request,
            context,
            peer_host(context.peer()),
            [(str(k), v) for k, v in (context.invocation_metadata() or ()) if isinstance(v, str)],
        )
        for layer in self._layers:
            await GRPC_STEPS[layer.name](self, layer, call)
        return call

    @staticmethod
    async def _bind(server_context: ServerCallContext, call: _Call) -> None:
        """The caller on ``server_context``; the A2A version checked as the HTTP bindings do."""
        assert call.caller is not None, "the authentication step runs on every call"
        server_context.state["headers"] = call.headers
        bind_call(server_context, call.caller, call.client_host, call.activated)
        await _version_checked(server_context)

    @staticmethod
    async def _echo(context: grpc.aio.ServicerContext, call: _Call) -> None:
        """``a2a-extensions`` in the initial metadata when the call activated the extension."""
        if call.echo and EXTENSION_URI in call.activated:
            await context.send_initial_metadata((("a2a-extensions", EXTENSION_URI),))

    # -- the two paths every method takes ------------------------------------------------------

    async def _handle_unary(
        self,
        request: message.Message,
        context: grpc.aio.ServicerContext,
        handler_func: Callable[[ServerCallContext], Awaitable[T]],
        default_response: T,
    ) -> T:
        async with _answered_as_status(context, self._drain):
            call = await self._admit(request, context)

            async def bound(server_context: ServerCallContext) -> T:
                await self._bind(server_context, call)
                return await handler_func(server_context)

            with _trace_context(call):
                result: T = await super()._handle_unary(request, context, bound, default_response)
            await self._echo(context, call)
            return result
        return default_response

    async def _handle_stream(
        self,
        request: message.Message,
        context: grpc.aio.ServicerContext,
        handler_func: Callable[[ServerCallContext], AsyncIterable[T]],
    ) -> AsyncIterator[T]:
        async with _answered_as_status(context, self._drain):
            call = await self._admit(request, context)

            async def bound(server_context: ServerCallContext) -> AsyncIterator[T]:
                await self._bind(server_context, call)
                async for item in handler_func(server_context):
                    yield item

            first = True
            with _trace_context(call):
                async for item in super()._handle_stream(request, context, bound):
                    if first:
                        await self._echo(context, call)
                        first = False
                    yield item

    async def abort_context(self, error: A2AError, context: grpc.aio.ServicerContext) -> None:
        """a2a-sdk's A2A error mapping, with ``error.data`` and the sanitizer's rules."""
        mapping = A2A_ERROR_MAPPING.get(type(error))
        if mapping is None:
            await abort_with(context, "UNKNOWN", "unknown error", [])
            return
        text = error.message if getattr(error, "message", None) else str(error)
        payload = sanitize(
            {
                "error": {
                    "code": mapping.http_code,
                    "status": mapping.grpc_status,
                    "message": text,
                    "details": build_error_details(error),
                }
            }
        )["error"]
        await abort_with(context, mapping.grpc_status, payload["message"], payload["details"])


# -- each layer's step: what the middleware does, on a gRPC call ---------------------------------


def _store_unreachable(reason: str) -> CallRefused:
    """``UNAVAILABLE`` with ``retry-after``, naming the task store (the HTTP bindings' 503)."""
    return CallRefused(
        503,
        ErrorCode.RESOURCE_LIMIT_EXCEEDED,
        store_unreachable(reason),
        trailing=[("retry-after", str(STORE_RETRY_AFTER_S))],
    )


async def _drain_step(handler: SkillrackGrpcHandler, layer: Layer, call: _Call) -> None:
    """A draining replica refuses Messages: ``UNAVAILABLE`` with ``retry-after``."""
    state: DrainState = layer.options["state"]
    if state.unavailable is not None:
        state.refused(REFUSED_TASK_STORE)
        raise _store_unreachable(state.unavailable)
    if state.draining and isinstance(call.request, SendMessageRequest):
        state.refused(REFUSED_DRAINING)
        raise CallRefused(
            503,
            ErrorCode.RESOURCE_LIMIT_EXCEEDED,
            DRAINING,
            trailing=[("retry-after", str(RETRY_AFTER_S))],
        )


_Step = Callable[[SkillrackGrpcHandler, Layer, _Call], Awaitable[None]]


async def _trace_context_step(handler: SkillrackGrpcHandler, layer: Layer, call: _Call) -> None:
    """The caller's ``traceparent``/``tracestate`` metadata, as TraceContext reads headers."""
    for name, value in call.metadata:
        if name.lower() in ("traceparent", "tracestate"):
            call.trace_carrier.setdefault(name.lower(), []).append(value)


async def _error_sanitizer_step(handler: SkillrackGrpcHandler, layer: Layer, call: _Call) -> None:
    """Nothing to do before the call: :meth:`SkillrackGrpcHandler.abort_context` sanitizes.

    The HTTP middleware rewrites a2a-sdk's error bodies on their way out; on
    gRPC the same rules (:func:`~skillrack.serve.middleware.error_sanitizer.sanitize`)
    apply where a2a-sdk's errors become a status, which is every error's way out.
    """


async def _extension_echo_step(handler: SkillrackGrpcHandler, layer: Layer, call: _Call) -> None:
    """Echo ``a2a-extensions`` in the initial metadata once the call activated it."""
    call.echo = True


async def _failed_authentication_step(
    handler: SkillrackGrpcHandler, layer: Layer, call: _Call
) -> None:
    """Refuse an address with too many failed authentications, in the HTTP bindings' window."""
    failures: SlidingWindow = layer.options["failures"]
    metrics: Metrics | None = layer.options["metrics"]
    retry_after = failures.retry_after(call.key)
    if retry_after is not None:
        if metrics is not None:
            metrics.limit_refused("failed_authentication")
        raise _too_many("too many failed authentications", retry_after)
    call.refused_authentication = lambda: failures.record(call.key)


async def _authentication_step(handler: SkillrackGrpcHandler, layer: Layer, call: _Call) -> None:
    """The caller, from the metadata as from HTTP headers, or ``UNAUTHENTICATED``."""
    outcome = await handler._authenticator.admit(
        call.metadata,
        client_host=call.client_host,
        path=SERVICE_PATH,
        client_certificate=peer_certificate(call.context),
    )
    if outcome.caller is None:
        call.refused_authentication()
        raise CallRefused(
            401,
            ErrorCode.AUTHORIZATION_FAILED,
            outcome.message,
            trailing=[("www-authenticate", c) for c in outcome.challenges],
        )
    call.caller = outcome.caller


async def _rate_limit_step(handler: SkillrackGrpcHandler, layer: Layer, call: _Call) -> None:
    """One budget per caller across bindings (the HTTP rate limit's ``rate_key``)."""
    counter: LimitCounter = layer.options["counter"]
    metrics: Metrics | None = layer.options["metrics"]
    try:
        retry_after = await counter.rate(
            rate_key(call.caller, call.client_host), layer.options["per_minute"], 60.0
        )
    except LimitsUnavailable as exc:  # Redis down, limits_on_outage = "deny"
        if metrics is not None:
            metrics.unavailable_refused(REFUSED_LIMITS_STORE)
        raise CallRefused(
            503, exc.code, exc.message, trailing=[("retry-after", str(OUTAGE_RETRY_AFTER_S))]
        ) from None
    if retry_after is not None:
        if metrics is not None:
            metrics.limit_refused("rate")
        raise _too_many("too many requests", retry_after)


async def _body_guard_step(handler: SkillrackGrpcHandler, layer: Layer, call: _Call) -> None:
    """The body guard's refusals that still apply once protobuf has parsed the request.

    The size limit is gRPC's own ``max_receive_message_length`` (``max_body_bytes``).
    """
    request = call.request
    if isinstance(request, Malformed):  # after authentication, as the body guard
        raise CallRefused(
            400,
            ErrorCode.INPUT_INVALID,
            f"the request is not a valid {request.message_type} protobuf message",
        )
    if not isinstance(request, SendMessageRequest):  # the one request holding Values
        return
    if len(request.message.parts) > layer.options["max_parts"]:
        raise CallRefused(413, ErrorCode.RESOURCE_LIMIT_EXCEEDED, "the message has too many parts")
    try:
        value = json_format.MessageToDict(request)
    except (ValueError, json_format.Error):  # NaN or Infinity in a Value
        raise CallRefused(
            400, ErrorCode.INPUT_INVALID, "a number in the request is not finite"
        ) from None
    deep = struct_too_deep(value, False, layer.options.get("max_data_depth", DATA_PART_DEPTH))
    if deep is not None:
        raise CallRefused(
            413,
            ErrorCode.RESOURCE_LIMIT_EXCEEDED,
            f"the value at {deep} nests more deeply than an A2A Data Part carries; flatten it",
            pointer=deep,
        )
    try:
        check_numbers(_numbers_as_written(value))
    except UnsafeNumber as exc:
        raise CallRefused(
            400,
            ErrorCode.INPUT_INVALID,
            f"the integer at {exc.pointer} is outside +/-{SAFE_INTEGER} (2^53-1) "
            "and would be rounded; send it as a string",
            pointer=exc.pointer,
        ) from None
    except ValueError:
        raise CallRefused(
            400, ErrorCode.INPUT_INVALID, "a number in the request is not finite"
        ) from None


#: The gRPC step of each middleware layer that applies to gRPC, by the layer's name.
GRPC_STEPS: Mapping[str, _Step] = {
    TRACE_CONTEXT: _trace_context_step,
    ERROR_SANITIZER: _error_sanitizer_step,
    EXTENSION_ECHO: _extension_echo_step,
    FAILED_AUTHENTICATION_LIMIT: _failed_authentication_step,
    AUTHENTICATION: _authentication_step,
    RATE_LIMIT: _rate_limit_step,
    BODY_GUARD: _body_guard_step,
    DRAIN: _drain_step,
}


#: What the status converter leaves alone: an abort already made, or a stop.
_LET_THROUGH = (
    grpc.aio.AbortError,
    asyncio.CancelledError,
    GeneratorExit,
    KeyboardInterrupt,
    SystemExit,
)


class _answered_as_status:
    """Every way a call can fail before or around a2a-sdk's handler, as a gRPC status.

    A class rather than a generator so that type checkers know it may swallow
    the exception (its ``__aexit__`` answers ``True`` once the call is aborted).
    """

    def __init__(self, context: grpc.aio.ServicerContext, drain: DrainState) -> None:
        self.context = context
        self.drain = drain
        self.seen = drain.outages

    async def __aenter__(self) -> None:
        return None

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: Any
    ) -> bool:
        if isinstance(exc, CallRefused):
            await abort_refused(self.context, exc)
            return True
        if exc is None or isinstance(exc, _LET_THROUGH):
            return False  # none, an abort already made, or the call or process stopping
        outage = self.drain.outage_since(self.seen)
        if outage is not None:  # failed because the task store went away while it ran
            logger.warning("gRPC call failed: the task store is unreachable (%s)", outage)
            self.drain.refused(REFUSED_TASK_STORE)
            await abort_refused(self.context, _store_unreachable(outage))
            return True
        logger.error("gRPC call failed", exc_info=exc)
        await abort_with(self.context, "INTERNAL", "internal error", [])
        return True


@contextlib.contextmanager
def _trace_context(call: _Call) -> Iterator[None]:
    """The caller's trace context current while a2a-sdk's handler runs (when it sent one)."""
    token = attach_trace_context(call.trace_carrier)
    try:
        yield
    finally:
        if token is not None:
            otel_context.detach(token)


@validate_version(PROTOCOL_VERSION_1_0)
async def _version_checked(context: ServerCallContext) -> None:
    """Raises a2a-sdk's ``VersionNotSupportedError`` unless ``A2A-Version`` is 1.x."""


def _too_many(text: str, retry_after: int) -> CallRefused:
    return CallRefused(
        429,
        ErrorCode.RESOURCE_LIMIT_EXCEEDED,
        text,
        trailing=[("retry-after", str(retry_after))],
    )


async def start_grpc_server(
    request_handler: RequestHandler,
    stack: Stack,
    *,
    host: str,
    port: int,
    tls: TlsFiles | None,
    max_message_bytes: int,
    shared_port: bool = False,
    encodings: EventEncodings | None = None,
) -> grpc.aio.Server:
    """The gRPC server on ``host``:``port``, started (TLS with the HTTPS files when given).

    ``shared_port`` lets several processes (``serve --workers N``) listen on
    the port together (``SO_REUSEPORT``); otherwise a port another process
    holds is refused rather than silently shared.  ``encodings``: the streamed
    events' encodings, shared with the HTTP bindings.
    """
    server = grpc.aio.server(
        options=[
            ("grpc.max_receive_message_length", max_message_bytes),
            ("grpc.so_reuseport", 1 if shared_port else 0),
        ]
    )
    a2a_grpc_servicer(server, SkillrackGrpcHandler(request_handler, stack, encodings))
    enable_reflection(server)
    shown = f"[{host}]" if ":" in host else host
    address = f"{shown}:{port}"
    try:
        if tls is None:
            server.add_insecure_port(address)
        else:
            server.add_secure_port(address, grpc_server_credentials(tls))
    except (RuntimeError, OSError) as exc:
        raise StartupError(
            f"gRPC cannot listen on {host} port {port} ({exc}): the port may be in use; "
            "choose another --grpc-port"
        ) from None
    await server.start()
    return server


def enable_reflection(server: grpc.aio.Server) -> None:
    """gRPC server reflection (grpcio-reflection): ``grpcurl``/``grpcui`` list and call A2A.

    The A2A service's descriptors are public (a2a-sdk publishes the .proto),
    so reflection discloses nothing a caller could not read; it only spares
    the caller a copy of ``a2a.proto``.  Calls made after reflection go
    through the same handler, authentication included.
    """
    from grpc_reflection.v1alpha import reflection

    service = a2a_pb2.DESCRIPTOR.services_by_name["A2AService"].full_name
    reflection.enable_server_reflection((service, reflection.SERVICE_NAME), server)


@dataclass(frozen=True)
class Malformed:
    """A request whose bytes are not the method's protobuf message (what gRPC would raise on).

    grpcio answers a request it cannot parse with ``UNKNOWN`` and the parser's
    exception text, and logs a traceback; skillrack's parser hands this to the
    servicer instead, which refuses it as the body guard refuses a body that is
    not JSON: ``INVALID_ARGUMENT`` with ``input_invalid``.
    """

    message_type: str


def _lenient(cls: type[message.Message]) -> Callable[[bytes], message.Message | Malformed]:
    def parse(data: bytes) -> message.Message | Malformed:
        try:
            return cls.FromString(data)
        except message.DecodeError:
            return Malformed(cls.DESCRIPTOR.full_name)

    return parse


def a2a_grpc_servicer(server: grpc.aio.Server, servicer: GrpcHandler) -> None:
    """Register ``servicer`` as the ``lf.a2a.v1.A2AService`` of ``server``.

    As a2a-sdk's generated ``add_A2AServiceServicer_to_server`` does, method for
    method from the service's descriptor, but with :func:`_lenient` parsers and a
    response serializer that sends bytes as they are
    (:func:`~skillrack.serve.bindings.grpc_streams.as_sent`: a stream's shared encodings).
    """
    service = a2a_pb2.DESCRIPTOR.services_by_name["A2AService"]
    handlers = {}
    for method in service.methods:
        request_cls = message_factory.GetMessageClass(method.input_type)
        factory = (
            grpc.unary_stream_rpc_method_handler
            if method.server_streaming
            else grpc.unary_unary_rpc_method_handler
        )
        handlers[method.name] = factory(
            getattr(servicer, method.name),
            request_deserializer=_lenient(request_cls),
            response_serializer=as_sent,
        )
    server.add_generic_rpc_handlers(
        (grpc.method_handlers_generic_handler(service.full_name, handlers),)
    )


__all__ = [
    "SERVICE_PATH",
    "GRPC_STEPS",
    "Malformed",
    "CallRefused",
    "SkillrackGrpcHandler",
    "abort_refused",
    "abort_with",
    "enable_reflection",
    "peer_certificate",
    "peer_host",
    "start_grpc_server",
]
