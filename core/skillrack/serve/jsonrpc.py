"""The JSON-RPC route: a2a-sdk's dispatcher, with the answers' Tasks converted faster.

``create_jsonrpc_routes`` is one ``Route`` around a ``JsonRpcDispatcher``;
this is the same route around a subclass that converts the Task of a
SendMessage or GetTask answer with :func:`skillrack.protocol.proto_json.message_to_dict`
(the dict ``json_format.MessageToDict`` writes, from a plan built once)
instead of ``json_format``'s per-call descriptor walk.  Parsing, the version
check, errors, streaming and the JSON-RPC envelope are a2a-sdk's.

When a2a-sdk's OpenTelemetry instrumentation is off
(``OTEL_INSTRUMENTATION_A2A_SDK_ENABLED=false``, which ``skillrack serve``
sets when no exporter is configured), its tracing decorator still wraps the
request method and starts a no-op span for every request; the route then
calls the method it wraps, a2a-sdk's own ``handle_requests``, directly.
"""

from __future__ import annotations

import types
from typing import Any

from a2a.server.context import ServerCallContext
from a2a.server.routes import ServerCallContextBuilder
from a2a.server.routes.jsonrpc_dispatcher import JsonRpcDispatcher
from a2a.types import GetTaskRequest, SendMessageRequest, Task
from a2a.utils import telemetry
from a2a.utils.errors import TaskNotFoundError
from starlette.routing import BaseRoute, Route

from skillrack.protocol.proto_json import message_to_dict


class Dispatcher(JsonRpcDispatcher):
    """a2a-sdk's JSON-RPC dispatcher; SendMessage and GetTask results converted by proto_json."""

    async def _handle_send_message(
        self, request_obj: SendMessageRequest, context: ServerCallContext
    ) -> dict[str, Any]:
        result = await self.request_handler.on_message_send(request_obj, context)
        # SendMessageResponse's one field, as MessageToDict(SendMessageResponse(...)) writes it.
        key = "task" if isinstance(result, Task) else "message"
        return {key: message_to_dict(result)}

    async def _handle_get_task(
        self, request_obj: GetTaskRequest, context: ServerCallContext
    ) -> dict[str, Any]:
        task = await self.request_handler.on_get_task(request_obj, context)
        if task:
            converted: dict[str, Any] = message_to_dict(task)
            return converted
        raise TaskNotFoundError


def jsonrpc_routes(
    request_handler: Any,
    rpc_url: str,
    context_builder: ServerCallContextBuilder,
    enable_v0_3_compat: bool = False,
) -> list[BaseRoute]:
    """a2a-sdk's ``create_jsonrpc_routes(...)``, with :class:`Dispatcher`."""
    dispatcher = Dispatcher(
        request_handler=request_handler,
        context_builder=context_builder,
        enable_v0_3_compat=enable_v0_3_compat,
    )
    endpoint: Any = dispatcher.handle_requests
    untraced = getattr(JsonRpcDispatcher.handle_requests, "__wrapped__", None)
    if untraced is not None and not (telemetry.otel_installed and telemetry.otel_enabled):
        endpoint = types.MethodType(untraced, dispatcher)  # a method: Starlette passes a Request
    return [Route(path=rpc_url, endpoint=endpoint, methods=["POST"])]
