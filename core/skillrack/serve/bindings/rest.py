"""The HTTP+JSON routes: a2a-sdk's, with each streamed event's JSON written once for all streams.

a2a-sdk's ``RestDispatcher`` converts every event of a ``message:stream`` or
``tasks/{id}:subscribe`` stream for that stream alone (``to_stream_response``,
``MessageToDict``, ``json_utils.dumps``), though every stream of the task
receives the very same event object.  :class:`Dispatcher` takes each status
and artifact update's JSON text from the server's
:class:`~skillrack.serve.bindings.stream_events.EventEncodings` (the text
a2a-sdk writes, made once, also shared with JSON-RPC's ``result``); the SSE
response around it, the errors before the first event
(``rest_stream_error_handler``: a JSON error answer) and after it (an SSE
``error`` event with ``build_rest_error_payload``) are a2a-sdk's.

:func:`rest_routes` is a2a-sdk's ``create_rest_routes`` itself, every route
of its dispatcher bound to :class:`Dispatcher` instead, so the route table
(paths, methods, the tenant mount, the 0.3 routes) stays a2a-sdk's.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from typing import Any, TypeVar

from a2a.server.context import ServerCallContext
from a2a.server.request_handlers.request_handler import RequestHandler
from a2a.server.routes import ServerCallContextBuilder, create_rest_routes
from a2a.server.routes.common import create_event_source_response
from a2a.server.routes.rest_dispatcher import RestDispatcher
from a2a.types import SendMessageRequest, SubscribeToTaskRequest
from a2a.utils import constants, json_utils, telemetry
from a2a.utils.error_handlers import build_rest_error_payload, rest_stream_error_handler
from a2a.utils.errors import InvalidRequestError
from a2a.utils.version_validator import validate_version
from google.protobuf.json_format import Parse
from opentelemetry.trace import SpanKind
from sse_starlette.event import ServerSentEvent
from sse_starlette.sse import EventSourceResponse
from starlette.requests import Request
from starlette.routing import BaseRoute, Mount, Route

from skillrack.serve.bindings.stream_events import EventEncodings

#: a2a-sdk's dispatcher logger: a stream's error is logged where a2a-sdk logs it.
sdk_logger = logging.getLogger(RestDispatcher.__module__)

F = TypeVar("F", bound=Callable[..., Any])


def _traced_as_sdk(method: F) -> F:
    """``method`` traced as a2a-sdk's ``trace_class`` traces its namesake: the same span name."""
    name = f"{RestDispatcher.__module__}.{RestDispatcher.__name__}.{method.__name__}"
    traced: F = telemetry.trace_function(span_name=name, kind=SpanKind.SERVER)(method)
    return traced


class Dispatcher(RestDispatcher):
    """a2a-sdk's HTTP+JSON dispatcher; streamed events' JSON from the shared encodings."""

    def __init__(self, *args: Any, encodings: EventEncodings, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._encodings = encodings

    @_traced_as_sdk
    @rest_stream_error_handler
    async def on_message_send_stream(self, request: Request) -> EventSourceResponse:
        """a2a-sdk's ``message:stream``, each event's text from the shared encodings."""

        @validate_version(constants.PROTOCOL_VERSION_1_0)
        async def _handler(context: ServerCallContext) -> AsyncIterator[str]:
            params = SendMessageRequest()
            Parse(await request.body(), params, ignore_unknown_fields=True)
            async for event in self.request_handler.on_message_send_stream(params, context):
                yield self._encodings.json(event)

        return await self._handle_streaming(request, _handler)

    @_traced_as_sdk
    @rest_stream_error_handler
    async def on_subscribe_to_task(self, request: Request) -> EventSourceResponse:
        """a2a-sdk's ``tasks/{id}:subscribe``, each event's text from the shared encodings."""
        task_id = request.path_params["id"]

        @validate_version(constants.PROTOCOL_VERSION_1_0)
        async def _handler(context: ServerCallContext) -> AsyncIterator[str]:
            subscribe = SubscribeToTaskRequest(id=task_id)
            async for event in self.request_handler.on_subscribe_to_task(subscribe, context):
                yield self._encodings.json(event)

        return await self._handle_streaming(request, _handler)

    async def _handle_streaming(
        self, request: Request, handler_func: Callable[[ServerCallContext], AsyncIterator[Any]]
    ) -> EventSourceResponse:
        """a2a-sdk's, step for step, but an item that is text already is sent as it is."""
        try:  # the body now: reading it once the SSE response has started would deadlock
            await request.body()
        except (ValueError, RuntimeError, OSError) as e:
            raise InvalidRequestError(message=f"Failed to pre-consume request body: {e}") from e
        context = self._build_call_context(request)
        stream = aiter(handler_func(context))
        try:  # the first event now: an error before it is a JSON answer, not a stream
            first_item = await anext(stream)
        except StopAsyncIteration:
            return create_event_source_response(
                iter([]), shutdown_grace_period=self._shutdown_grace_period
            )

        async def event_generator() -> AsyncIterator[ServerSentEvent]:
            yield ServerSentEvent(data=_text(first_item))
            try:
                async for item in stream:
                    yield ServerSentEvent(data=_text(item))
            except Exception as e:
                sdk_logger.exception("Error during REST SSE stream")
                yield ServerSentEvent(
                    data=json_utils.dumps(build_rest_error_payload(e)), event="error"
                )

        return create_event_source_response(
            event_generator(), shutdown_grace_period=self._shutdown_grace_period
        )


def _text(item: Any) -> str:
    """An SSE event's data: a text as it is, anything else as a2a-sdk dumps it."""
    return item if isinstance(item, str) else json_utils.dumps(item)


def rest_routes(
    request_handler: RequestHandler,
    context_builder: ServerCallContextBuilder,
    encodings: EventEncodings,
    enable_v0_3_compat: bool = False,
) -> list[BaseRoute]:
    """a2a-sdk's ``create_rest_routes(...)``, its dispatcher's routes bound to ours."""
    dispatcher = Dispatcher(
        request_handler=request_handler, context_builder=context_builder, encodings=encodings
    )
    routes = create_rest_routes(
        request_handler, context_builder=context_builder, enable_v0_3_compat=enable_v0_3_compat
    )
    return [_rebound(route, dispatcher) for route in routes]


def _rebound(route: BaseRoute, dispatcher: Dispatcher) -> BaseRoute:
    """``route`` with an a2a-sdk dispatcher's endpoint replaced by ``dispatcher``'s namesake."""
    if isinstance(route, Mount):
        return Mount(route.path, routes=[_rebound(r, dispatcher) for r in route.routes])
    if not isinstance(route, Route):
        return route
    bound_to = getattr(route.endpoint, "__self__", None)
    if not isinstance(bound_to, RestDispatcher) or isinstance(bound_to, Dispatcher):
        return route  # the 0.3 layer's, or ours
    endpoint = getattr(dispatcher, route.endpoint.__name__)
    return Route(route.path, endpoint, methods=list(route.methods or ()))
