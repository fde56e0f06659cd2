"""The JSON-RPC route: a2a-sdk's dispatcher, with the answers' Tasks converted faster.

``create_jsonrpc_routes`` is one ``Route`` around a ``JsonRpcDispatcher``;
this is the same route around a subclass that converts the Task of a
SendMessage or GetTask answer with :func:`skillrack.protocol.proto_json.message_to_dict`
(the dict ``json_format.MessageToDict`` writes, from a plan built once)
instead of ``json_format``'s per-call descriptor walk.  Parsing, the version
check, errors, streaming and the JSON-RPC envelope are a2a-sdk's.

A SendMessage answer carrying a remembered document (``describe_skill``'s,
see :func:`skillrack.protocol.proto_json.remember`) is written with that
document's JSON text, encoded once: the rest of the answer is encoded as
Starlette's ``JSONResponse`` encodes it, with a placeholder where the
document goes, and the placeholder replaced by the text.  The bytes are the
ones ``JSONResponse`` writes; a placeholder found anywhere else in the
answer (a caller could send one) falls back to encoding the whole answer.

The events of SendStreamingMessage and SubscribeToTask streams are written
once each, whatever the number of streams carrying them
(:mod:`skillrack.serve.bindings.stream_events`); the SSE response around
them is a2a-sdk's.

When a2a-sdk's OpenTelemetry instrumentation is off
(``OTEL_INSTRUMENTATION_A2A_SDK_ENABLED=false``, which ``skillrack serve``
sets when no exporter is configured), its tracing decorator still wraps the
request method and starts a no-op span for every request; the route then
calls :meth:`Dispatcher.answer`, which does what a2a-sdk's ``handle_requests``
does without the span.  For the common request, a ``SendMessage`` with an
``id`` and ``params`` and nothing else, it takes a shorter way to the same
answer: the JSON value the body guard parsed from these very bytes instead
of parsing them again, the JSON-RPC envelope checked and written by hand
instead of by the ``jsonrpc`` package's objects, and the params parsed by
:func:`skillrack.protocol.proto_parse.parse_dict` instead of
``json_format.ParseDict`` (together about 8% of an invocation's CPU).
Every other request, and one whose params ``parse_dict`` declines, goes
through a2a-sdk's ``handle_requests`` itself, so its errors stay a2a-sdk's.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import Any

from a2a.server.context import ServerCallContext
from a2a.server.jsonrpc_models import InternalError
from a2a.server.request_handlers.response_helpers import build_error_response
from a2a.server.routes import ServerCallContextBuilder
from a2a.server.routes.common import create_event_source_response
from a2a.server.routes.jsonrpc_dispatcher import JsonRpcDispatcher
from a2a.types import GetTaskRequest, SendMessageRequest, Task
from a2a.utils import constants, telemetry
from a2a.utils.errors import A2AError, TaskNotFoundError, UnsupportedOperationError
from a2a.utils.version_validator import validate_version
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from skillrack.interface.compact_json import compact_json
from skillrack.protocol.proto_json import Remembered, message_to_dict
from skillrack.protocol.proto_parse import parse_dict
from skillrack.serve.bindings.stream_events import EventEncodings, server_sent, written
from skillrack.serve.middleware.body_guard import Replay
from skillrack.serve.scope import PARSED_BODY_KEY

#: a2a-sdk's dispatcher logger: the shorter way logs what handle_requests would, there.
sdk_logger = logging.getLogger(JsonRpcDispatcher.__module__)
#: The members a JSON-RPC request may have (``jsonrpc``'s ``POSSIBLE_FIELDS``).
_ENVELOPE = frozenset({"jsonrpc", "method", "params", "id"})

#: Stands for a remembered document while the rest of an answer is encoded.
PLACEHOLDER = "\x00skillrack:remembered\x00"


class Dispatcher(JsonRpcDispatcher):
    """a2a-sdk's JSON-RPC dispatcher; SendMessage and GetTask results converted by proto_json,
    streamed events written once for all their streams."""

    def __init__(self, *args: Any, encodings: EventEncodings | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._encodings = encodings if encodings is not None else EventEncodings()

    @validate_version(constants.PROTOCOL_VERSION_1_0)
    async def _process_streaming_request(  # type: ignore[override]  # texts too: see below
        self, request_id: str | int | None, request_obj: Any, context: ServerCallContext
    ) -> AsyncGenerator[str | dict[str, Any], None]:
        """a2a-sdk's, but each event arrives as its JSON-RPC text, shared by every stream.

        Only :meth:`_create_response` below reads what this yields (a2a-sdk's own
        ``handle_requests`` passes it on unread), and it takes texts as well as dicts.
        """
        method = context.state.get("method")
        if method == "SendStreamingMessage":
            stream = self.request_handler.on_message_send_stream(request_obj, context)
        elif method == "SubscribeToTask":
            stream = self.request_handler.on_subscribe_to_task(request_obj, context)
        else:
            raise UnsupportedOperationError(message="Stream not supported")
        try:  # the first event now: an error before it is an answer, not a stream
            first = await anext(stream)
        except StopAsyncIteration:
            first = None
        return written(stream, first, request_id, self._encodings)

    async def handle_requests(self, request: Request) -> Response:
        """a2a-sdk's (traced) ``handle_requests``; the body guard's parsed value dropped first."""
        request.scope.pop(PARSED_BODY_KEY, None)  # a stream keeps its scope while open
        response: Response = await super().handle_requests(request)
        return response

    async def answer(self, request: Request) -> Response:
        """a2a-sdk's ``handle_requests`` (without its span), shorter for a plain SendMessage."""
        fast = await self._plain_send_message(request)
        if fast is None:
            return await _untraced_handle_requests(self, request)
        request_id, body, specific_request = fast
        sdk_logger.debug("Request body: %s", body)
        try:
            # From here on, what handle_requests does for a SendMessage, step by step.
            call_context = self._context_builder.build(request)
            call_context.tenant = specific_request.tenant
            call_context.state["method"] = "SendMessage"
            call_context.state["request_id"] = request_id
            handler_result: dict[str, Any]
            try:
                raw_result = await self._process_non_streaming_request(
                    specific_request, call_context
                )
                # JSONRPC20Response(result=raw_result, _id=request_id).data, member for member.
                handler_result = {"result": raw_result, "id": request_id, "jsonrpc": "2.0"}
            except A2AError as e:
                handler_result = build_error_response(request_id, e)
            response: Response = self._create_response(call_context, handler_result)
            return response
        except A2AError as e:
            return self._generate_error_response(request_id, e)
        except Exception as e:
            sdk_logger.exception("Unhandled exception")
            return self._generate_error_response(request_id, InternalError(message=str(e)))

    async def _plain_send_message(
        self, request: Request
    ) -> tuple[str | int, dict[str, Any], SendMessageRequest] | None:
        """(id, body, request) of a SendMessage that needs none of handle_requests' checks.

        None unless the body is the one the body guard parsed, a JSON-RPC 2.0
        object with exactly ``jsonrpc``, ``method`` ``SendMessage``, an ``id`` that
        is a string or an integer, and ``params`` that :func:`parse_dict` reads:
        then every check of ``handle_requests`` passes and its ``ParseDict``
        builds this very request.
        """
        # Taken out of the scope: a stream keeps its scope as long as it is open.
        parsed = request.scope.pop(PARSED_BODY_KEY, None)
        if parsed is None or self._v03_sends:
            return None
        data, body, replay = parsed
        if not (isinstance(replay, Replay) and request.receive is replay and not replay.replayed):
            # Not the guard's replay, untouched (whose body is ``data``): read what it is.
            raw = await request.body()
            if raw is not data and raw != data:
                return None  # not the body the guard parsed (nothing in skillrack does that)
        if type(body) is not dict or body.keys() != _ENVELOPE:
            return None
        request_id = body["id"]
        if (
            body["jsonrpc"] != "2.0"
            or body["method"] != "SendMessage"
            or type(request_id) not in (str, int)
            or type(body["params"]) is not dict
        ):
            return None
        specific_request = parse_dict(body["params"], SendMessageRequest())
        if specific_request is None:
            return None
        return request_id, body, specific_request

    @property
    def _v03_sends(self) -> bool:
        """Whether the 0.3 layer claims the method ``SendMessage`` (it does not in a2a-sdk 1.3)."""
        adapter = self._v03_adapter
        return adapter is not None and bool(adapter.supports_method("SendMessage"))

    async def _handle_send_message(
        self, request_obj: SendMessageRequest, context: ServerCallContext
    ) -> dict[str, Any]:
        result = await self.request_handler.on_message_send(request_obj, context)
        # SendMessageResponse's one field, as MessageToDict(SendMessageResponse(...)) writes it.
        key = "task" if isinstance(result, Task) else "message"
        return {key: message_to_dict(result)}

    def _create_response(self, context: ServerCallContext, handler_result: Any) -> Any:
        """a2a-sdk's ``JSONResponse(handler_result)`` (:class:`CompactAnswer`: the same bytes),
        or the same :class:`Answer` for a dict that carries a remembered document; a
        stream's SSE response, its texts as they are."""
        if type(handler_result) is dict:
            if _carries_remembered(handler_result):
                return Answer(handler_result)
            return CompactAnswer(handler_result)
        if isinstance(handler_result, AsyncGenerator):  # from _process_streaming_request
            return create_event_source_response(
                server_sent(handler_result, context.state.get("request_id")),
                shutdown_grace_period=self._shutdown_grace_period,
            )
        return super()._create_response(context, handler_result)

    async def _handle_get_task(
        self, request_obj: GetTaskRequest, context: ServerCallContext
    ) -> dict[str, Any]:
        task = await self.request_handler.on_get_task(request_obj, context)
        if task:
            converted: dict[str, Any] = message_to_dict(task)
            return converted
        raise TaskNotFoundError


class CompactAnswer(JSONResponse):
    """Starlette's ``JSONResponse``, the same text written by :func:`compact_json`."""

    def render(self, content: Any) -> bytes:
        return compact_json(content).encode("utf-8")


class Answer(JSONResponse):
    """A SendMessage answer whose remembered documents are written from their JSON text."""

    def render(self, content: Any) -> bytes:
        task = content["result"]["task"]
        texts: list[str] = []
        artifacts = []
        for artifact in task["artifacts"]:
            parts = []
            for part in artifact.get("parts", ()):
                data = part.get("data")
                if isinstance(data, Remembered):
                    if data.text is None:
                        data.text = compact_json(data)
                    texts.append(data.text)
                    part = {**part, "data": PLACEHOLDER}
                parts.append(part)
            artifacts.append({**artifact, "parts": parts} if "parts" in artifact else artifact)
        placed = {
            **content,
            "result": {**content["result"], "task": {**task, "artifacts": artifacts}},
        }
        text = compact_json(placed)
        pieces = text.split(_ENCODED_PLACEHOLDER)
        if len(pieces) != len(texts) + 1:  # a placeholder the caller sent: the long way
            return super().render(content)
        out = [pieces[0]]
        for piece, document in zip(pieces[1:], texts, strict=True):
            out += (document, piece)
        return "".join(out).encode("utf-8")


_ENCODED_PLACEHOLDER = compact_json(PLACEHOLDER)


def _carries_remembered(handler_result: Any) -> bool:
    """Whether a JSON-RPC answer is a SendMessage Task with a remembered document in an Artifact."""
    result = handler_result.get("result") if isinstance(handler_result, dict) else None
    task = result.get("task") if isinstance(result, dict) else None
    if not isinstance(task, dict):
        return False
    return any(
        isinstance(part.get("data"), Remembered)
        for artifact in task.get("artifacts", ())
        for part in artifact.get("parts", ())
    )


def jsonrpc_routes(
    request_handler: Any,
    rpc_url: str,
    context_builder: ServerCallContextBuilder,
    enable_v0_3_compat: bool = False,
    encodings: EventEncodings | None = None,
) -> list[BaseRoute]:
    """a2a-sdk's ``create_jsonrpc_routes(...)``, with :class:`Dispatcher`.

    ``encodings``: the streamed events' encodings, shared with the other bindings.
    """
    dispatcher = Dispatcher(
        request_handler=request_handler,
        context_builder=context_builder,
        enable_v0_3_compat=enable_v0_3_compat,
        encodings=encodings,
    )
    endpoint: Any = dispatcher.handle_requests
    if not (telemetry.otel_installed and telemetry.otel_enabled):
        endpoint = dispatcher.answer  # a method: Starlette passes a Request
    return [Route(path=rpc_url, endpoint=endpoint, methods=["POST"])]


#: The function a2a-sdk's tracing decorator wraps (the method itself when it wraps none).
_untraced_handle_requests: Callable[[JsonRpcDispatcher, Request], Awaitable[Response]] = getattr(
    JsonRpcDispatcher.handle_requests, "__wrapped__", JsonRpcDispatcher.handle_requests
)
