"""The ASGI application: the Agent Card, both A2A bindings, and the middleware around them.

Routes come from a2a-sdk's factories (JSON-RPC at ``/``, HTTP+JSON after it,
last, because its ``/{tenant}`` mount shadows anything added later); the card
route is skillrack's own so that its bytes are built once.  Two small pure
ASGI middlewares close gaps a2a-sdk 1.3 leaves:

* :class:`BodyGuard` reads each POST body once with a size cap and refuses
  bodies that are not UTF-8 JSON or nest too deeply, answering in the
  binding's own error form (JSON-RPC ``-32700``/``-32600``, REST 400/413 with
  an ``ErrorInfo``) with the draft's code, instead of a ``-32603`` carrying the
  Python exception text;
* :class:`ExtensionEcho` writes ``A2A-Extensions`` on the response when the
  request activated the schema-interface extension (a2a-sdk never echoes it).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

from a2a.server.cluster.task_store import StoredTask
from a2a.server.context import ServerCallContext
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import (
    DefaultServerCallContextBuilder,
    create_jsonrpc_routes,
    create_rest_routes,
)
from a2a.server.tasks import InMemoryTaskStore, TaskStore
from a2a.types import CancelTaskRequest, Task
from a2a.utils.errors import TaskNotCancelableError
from starlette.applications import Starlette
from starlette.datastructures import MutableHeaders
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .card import CARD_PATH, CardEndpoint, build_card
from .client import SkillClient
from .compose import Peers
from .config import Config
from .dispatch import ACTIVATED_STATE_KEY, SKILL_METADATA_KEY, SkillExecutor
from .errors import ErrorCode
from .limits import json_depth
from .registry import Registry
from .requests import EXTENSION_URI

JSONRPC_PATH = "/"
#: Diagnostics: the most recent delegation hops (upstream/downstream agents and task ids).
HOPS_PATH = "/-/hops"
_SCOPE_KEY = "skillrack.activated_extensions"


class ContextBuilder(DefaultServerCallContextBuilder):
    """Keeps a2a-sdk's state (headers: the A2A-Version check needs them) and adds ours."""

    def build(self, request: Request) -> ServerCallContext:
        context = super().build(request)
        context.state[ACTIVATED_STATE_KEY] = request.scope.setdefault(_SCOPE_KEY, set())
        return context


class SkillrackRequestHandler(DefaultRequestHandler):
    """Refuses CancelTask for non-cancellable skills before a2a-sdk touches the task.

    a2a-sdk cancels the executor and marks the task FAILED even when the
    executor refuses to cancel; refusing here leaves the task running to its
    normal end, as A2A's TaskNotCancelableError promises.
    """

    def __init__(self, *args: Any, registry: Registry, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._registry = registry

    async def on_cancel_task(
        self, params: CancelTaskRequest, context: ServerCallContext
    ) -> Task | None:
        stored = await self.task_store.get(params.id, context)
        task = stored.task if isinstance(stored, StoredTask) else stored
        if task is not None:
            value = task.metadata.fields.get(SKILL_METADATA_KEY)
            skill = self._registry.get(value.string_value) if value is not None else None
            if skill is not None and not skill.skill.interaction.cancellable:
                raise TaskNotCancelableError(message=f"skill {skill.skill_id!r} is not cancellable")
        result: Task | None = await super().on_cancel_task(params, context)
        return result


def _error_info(code: ErrorCode) -> dict[str, Any]:
    return {
        "@type": "type.googleapis.com/google.rpc.ErrorInfo",
        "reason": code.value.upper(),
        "domain": "skillrack",
        "metadata": {"code": code.value},
    }


class BodyGuard:
    """Reads a POST body once, within limits, and refuses what is not UTF-8 JSON."""

    def __init__(self, app: ASGIApp, *, max_bytes: int, max_depth: int) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.max_depth = max_depth

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        body = bytearray()
        more = True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            body += message.get("body", b"")
            more = message.get("more_body", False)
            if len(body) > self.max_bytes:
                await self._refuse(
                    scope,
                    send,
                    ErrorCode.RESOURCE_LIMIT_EXCEEDED,
                    "the request body is larger than this agent accepts",
                )
                return
        problem = self._problem(bytes(body))
        if problem is not None:
            await self._refuse(scope, send, ErrorCode.INPUT_INVALID, problem)
            return
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": bytes(body), "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    def _problem(self, body: bytes) -> str | None:
        try:
            value = json.loads(body.decode("utf-8"))
        except UnicodeDecodeError:
            return "the request body is not valid UTF-8"
        except RecursionError:
            return "the request body nests too deeply"
        except ValueError:
            return "the request body is not JSON"
        if json_depth(value, self.max_depth) > self.max_depth:
            return "the request body nests too deeply"
        return None

    async def _refuse(self, scope: Scope, send: Send, code: ErrorCode, message: str) -> None:
        too_large = code is ErrorCode.RESOURCE_LIMIT_EXCEEDED
        if scope["path"] == JSONRPC_PATH:
            status = 200
            payload: dict[str, Any] = {
                "jsonrpc": "2.0",
                "id": None,
                "error": {
                    "code": -32600 if too_large else -32700,
                    "message": message,
                    "data": [_error_info(code)],
                },
            }
        else:
            status = 413 if too_large else 400
            payload = {
                "error": {
                    "code": status,
                    "status": "INVALID_ARGUMENT",
                    "message": message,
                    "details": [_error_info(code)],
                }
            }
        body = json.dumps(payload).encode()
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})


class ExtensionEcho:
    """Adds ``A2A-Extensions`` to the response when the request activated the extension."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        activated: set[str] = scope.setdefault(_SCOPE_KEY, set())

        async def send_with_header(message: Message) -> None:
            if message["type"] == "http.response.start" and EXTENSION_URI in activated:
                MutableHeaders(scope=message).append("A2A-Extensions", EXTENSION_URI)
            await send(message)

        await self.app(scope, receive, send_with_header)


def _hops_view(peers: Peers) -> Any:
    async def hops(request: Request) -> JSONResponse:
        return JSONResponse({"hops": [hop.to_json() for hop in peers.hops.recent()]})

    return hops


def create_app(
    registry: Registry,
    config: Config,
    base_url: str,
    task_store: TaskStore | None = None,
) -> Starlette:
    """The composed agent as an ASGI app."""
    assert registry.manager is not None, "a registry built from plugins carries its manager"
    card = build_card(registry, config, base_url)
    peers = Peers(config.peers, base_url, lambda: SkillClient(limits=config.limits))
    handler = SkillrackRequestHandler(
        agent_executor=SkillExecutor(registry, registry.manager, peers),
        task_store=task_store or InMemoryTaskStore(),
        agent_card=card,
        registry=registry,
    )
    builder = ContextBuilder()
    card_endpoint = CardEndpoint.of(card, config.server.card_max_age)
    routes: list[BaseRoute] = [
        Route(CARD_PATH, card_endpoint.respond, methods=["GET"]),
        Route(HOPS_PATH, _hops_view(peers), methods=["GET"]),
    ]
    routes += create_jsonrpc_routes(handler, rpc_url=JSONRPC_PATH, context_builder=builder)
    routes += create_rest_routes(handler, context_builder=builder)  # last: see module docstring

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        await handler.aclose()
        await peers.aclose()

    app = Starlette(routes=routes, lifespan=lifespan)
    app.add_middleware(
        BodyGuard,
        max_bytes=config.server.max_body_bytes,
        max_depth=config.server.max_json_depth,
    )
    app.add_middleware(ExtensionEcho)
    return app
