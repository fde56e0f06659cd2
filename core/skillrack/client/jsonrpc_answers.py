"""a2a-sdk's JSON-RPC client transport, without ``json_format`` for requests and answers.

a2a-sdk's ``JsonRpcTransport`` writes every request's params with
``json_format.MessageToDict`` and turns every answer's ``result`` into its
protobuf message with ``json_format.ParseDict(..., ignore_unknown_fields=True)``
(``parse_lenient``): pure Python that dispatches on every field, formats a
path string for every member and walks a Data Part's value one ``Value`` at a
time.  For a skill invocation answered by a completed Task with a result and
a record (and the request in its history) that is about 30 us to write and
150 us to parse, an eighth of a whole call in ``benchmarks/fanout.py``.
:class:`LeanJsonRpcTransport` writes the params of ``SendMessage`` and
``GetTask`` with :func:`skillrack.protocol.proto_json.message_to_dict` and
parses their answers with :func:`skillrack.protocol.proto_parse.parse_dict`,
which write and build the same dicts and messages, or hand anything they do
not handle to ``MessageToDict`` and ``parse_lenient``, which then do it or
raise as they always did: nothing sent or received is read or written
differently.  Everything else (the HTTP exchange, JSON-RPC errors, streams,
tracing spans under a2a-sdk's own names) is a2a-sdk's.

The span a2a-sdk opens around these two methods is opened only when it
could be recorded, an OpenTelemetry tracer provider being installed
(:func:`recording`): otherwise it is a non-recording copy of the current
span's context that nothing reads, and opening it (a tracer looked up, a
context attached and detached) cost about 2% of a call in
``benchmarks/fanout.py``.

A client made by :class:`LeanClientFactory` has this transport for the
JSON-RPC binding (a2a-sdk's own for an agent on protocol 0.3, and for every
other binding).
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any, TypeVar
from uuid import uuid4

from a2a.client import ClientCallContext, ClientConfig, ClientFactory
from a2a.client.transports.base import ClientTransport
from a2a.client.transports.jsonrpc import JsonRpcTransport
from a2a.types import AgentCard, GetTaskRequest, SendMessageRequest, SendMessageResponse, Task
from a2a.utils.constants import TransportProtocol
from a2a.utils.proto_utils import parse_lenient
from a2a.utils.telemetry import trace_function
from google.protobuf.message import Message
from opentelemetry import trace
from opentelemetry.trace import SpanKind

from skillrack.protocol.proto_json import message_to_dict
from skillrack.protocol.proto_parse import parse_dict

M = TypeVar("M", bound=Message)
#: What ``ClientFactory.register`` takes: (card, interface URL, config) -> transport.
TransportProducer = Callable[[AgentCard, str, ClientConfig], ClientTransport]

#: a2a-sdk's span names for these methods (``trace_class`` on ``JsonRpcTransport``).
_SPAN = f"{JsonRpcTransport.__module__}.{JsonRpcTransport.__name__}"


def parse_answer(result: Any, message: M) -> M:
    """``parse_lenient(result, message)``: the same message, built faster when it can be."""
    parsed = parse_dict(result, message)
    if parsed is not None:
        return parsed
    message.Clear()  # parse_dict may have filled part of it before declining
    return parse_lenient(result, message)


def _rpc(method: str, params: dict[str, Any]) -> dict[str, Any]:
    """The JSON-RPC 2.0 request a2a-sdk's transport sends (``JSONRPC20Request(...).data``)."""
    return {"method": method, "params": params, "id": str(uuid4()), "jsonrpc": "2.0"}


def recording() -> bool:
    """Whether a span would be recorded: a tracer provider other than OpenTelemetry's
    placeholders is installed (the module docstring)."""
    return not isinstance(
        trace.get_tracer_provider(), trace.ProxyTracerProvider | trace.NoOpTracerProvider
    )


class LeanJsonRpcTransport(JsonRpcTransport):
    """``JsonRpcTransport`` whose ``SendMessage`` and ``GetTask`` answers go through
    :func:`parse_answer` (the module docstring)."""

    def send_message(
        self,
        request: SendMessageRequest,
        *,
        context: ClientCallContext | None = None,
    ) -> Coroutine[Any, Any, SendMessageResponse]:
        if recording():
            traced: Coroutine[Any, Any, SendMessageResponse]
            traced = self._traced_send_message(request, context)
            return traced
        return self._send_message(request, context)

    async def _send_message(
        self, request: SendMessageRequest, context: ClientCallContext | None
    ) -> SendMessageResponse:
        params = message_to_dict(request)
        response_data = await self._send_request(_rpc("SendMessage", params), context)
        return parse_answer(response_data["result"], SendMessageResponse())

    _traced_send_message = trace_function(span_name=f"{_SPAN}.send_message", kind=SpanKind.CLIENT)(
        _send_message
    )

    def get_task(
        self,
        request: GetTaskRequest,
        *,
        context: ClientCallContext | None = None,
    ) -> Coroutine[Any, Any, Task]:
        if recording():
            traced: Coroutine[Any, Any, Task] = self._traced_get_task(request, context)
            return traced
        return self._get_task(request, context)

    async def _get_task(self, request: GetTaskRequest, context: ClientCallContext | None) -> Task:
        params = message_to_dict(request)
        response_data = await self._send_request(_rpc("GetTask", params), context)
        return parse_answer(response_data["result"], Task())

    _traced_get_task = trace_function(span_name=f"{_SPAN}.get_task", kind=SpanKind.CLIENT)(
        _get_task
    )


class LeanClientFactory(ClientFactory):
    """``ClientFactory`` whose JSON-RPC transports are :class:`LeanJsonRpcTransport`.

    Every producer is registered through the public ``register``, a2a-sdk's
    own defaults included (its ``__init__`` registers them so); the JSON-RPC
    one is wrapped: it still chooses the interface and the protocol version,
    and only a plain ``JsonRpcTransport`` it makes is replaced, by one on the
    same ``httpx`` client, card and URL (protocol 0.3's transport is kept).
    """

    def register(self, label: str, generator: TransportProducer) -> None:
        if label == TransportProtocol.JSONRPC:
            generator = _lean(generator)
        super().register(label, generator)


def _lean(default: TransportProducer) -> TransportProducer:
    def producer(card: AgentCard, url: str, config: ClientConfig) -> ClientTransport:
        made = default(card, url, config)
        if type(made) is not JsonRpcTransport:
            return made
        return LeanJsonRpcTransport(
            made.httpx_client, made.agent_card, made.url, is_shared_httpx=made.is_shared_httpx
        )

    return producer
