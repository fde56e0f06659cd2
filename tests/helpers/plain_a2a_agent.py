"""An independent A2A agent built from a2a-sdk alone (no skillrack), served for real on loopback.

It has one base skill, ``echo`` (a plain text Message in, a completed Task
with the text back out), no schema-interface extension, and speaks
JSON-RPC, HTTP+JSON and gRPC, with push notification configs kept in
a2a-sdk's in-memory store and delivered by a2a-sdk's own sender.
skillrack's client commands are checked against it so that they are known
to work with an agent skillrack did not write.

What a test may ask of it, each the way an agent written with a2a-sdk alone
would do it (plain ASGI middleware and a gRPC server interceptor):

* ``api_key``: the card's ``securitySchemes`` and ``securityRequirements``
  name an API key in the ``X-Plain-Key`` header, and a request without it is
  refused (HTTP 401, gRPC ``UNAUTHENTICATED``);
* ``card_max_age``: the card is served with ``Cache-Control: max-age=N``
  (a2a-sdk's own ``cache_control`` option; its ETag is always sent);
* :class:`Gate`: the next ``refuse`` messages (HTTP POSTs, gRPC calls) are
  refused with HTTP 429 or 503 and ``Retry-After``, or on gRPC with
  ``RESOURCE_EXHAUSTED`` or ``UNAVAILABLE`` and the wait as a standard
  ``google.rpc.RetryInfo`` in the status details (or, ``retry_info=False``,
  as ``retry-after`` trailing metadata); and every request received
  is recorded (:attr:`Gate.seen`), refused or not, so that a test can say
  exactly what a client sent.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import grpc.aio
import httpx
import uvicorn
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler, GrpcHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes, create_rest_routes
from a2a.server.tasks import (
    BasePushNotificationSender,
    InMemoryPushNotificationConfigStore,
    InMemoryTaskStore,
    TaskUpdater,
)
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    APIKeySecurityScheme,
    Part,
    SecurityRequirement,
    SecurityScheme,
    StringList,
    Task,
    TaskState,
    TaskStatus,
    a2a_pb2_grpc,
)
from google.protobuf import duration_pb2
from google.rpc import code_pb2, error_details_pb2, status_pb2
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from skillrack.ops.loopback import free_port


class EchoExecutor(AgentExecutor):
    """Answers every text with ``echo: TEXT`` in a completed Task."""

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        text = " ".join(p.text for p in context.message.parts if p.HasField("text"))
        if context.current_task is None:
            await event_queue.enqueue_event(
                Task(
                    id=context.task_id,
                    context_id=context.context_id,
                    status=TaskStatus(state=TaskState.TASK_STATE_SUBMITTED),
                    history=[context.message],
                )
            )
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        await updater.add_artifact([Part(text=f"echo: {text}")], name="echo")
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        await TaskUpdater(event_queue, context.task_id, context.context_id).cancel()


#: The API key header the card names with ``api_key=True``, and the key it takes.
KEY_HEADER, KEY = "X-Plain-Key", "plain-key"
CARD = "/.well-known/agent-card.json"
_GRPC_CODES = {429: grpc.StatusCode.RESOURCE_EXHAUSTED, 503: grpc.StatusCode.UNAVAILABLE}
_RPC_CODES = {429: code_pb2.RESOURCE_EXHAUSTED, 503: code_pb2.UNAVAILABLE}


@dataclass
class Gate:
    """What the agent refuses next, and every request it received."""

    #: How many of the next messages (HTTP POSTs, gRPC calls) to refuse.
    refuse: int = 0
    #: 429 or 503 (on gRPC: RESOURCE_EXHAUSTED or UNAVAILABLE).
    status: int = 429
    #: Seconds to ask the client to wait (None: no Retry-After, no RetryInfo).
    wait: int | None = 1
    #: On gRPC, the wait as a ``google.rpc.RetryInfo`` (else as ``retry-after`` metadata).
    retry_info: bool = True
    #: Cut the next gRPC stream after its first event with ``RESOURCE_EXHAUSTED``.
    cut_stream: bool = False
    #: How many of the next messages to refuse as unauthenticated (401, ``UNAUTHENTICATED``).
    unauthenticated: int = 0
    #: ``(monotonic time, "GET /path" or "gRPC Method", answer)`` of each request, in order;
    #: ``answer`` is 200 when let through, else the refusal (429, 503, 401).
    seen: list[tuple[float, str, int]] = field(default_factory=list)

    def judge(self, what: str, key: str | None, needs_key: bool, message: bool) -> int:
        """Record one request; the refusal to answer it with, or 200 to let it through."""
        answer = 200
        if needs_key and what != f"GET {CARD}" and key != KEY:
            answer = 401
        elif message and self.unauthenticated > 0:
            self.unauthenticated -= 1
            answer = 401
        elif message and self.refuse > 0:
            self.refuse -= 1
            answer = self.status
        self.seen.append((time.monotonic(), what, answer))
        return answer

    def requests(self) -> list[str]:
        """What was received, in order, as ``"GET /path"`` or ``"gRPC Method"``."""
        return [what for _, what, _ in self.seen]


@dataclass(frozen=True)
class PlainAgent:
    url: str
    grpc_target: str
    #: The metadata of every gRPC call received, in order (what a client sent).
    grpc_metadata: list[dict[str, str]] = field(default_factory=list)
    #: What the agent refuses next, and what it received (both bindings).
    gate: Gate = field(default_factory=Gate)


@dataclass
class _HttpGate:
    """The gate in front of the HTTP bindings (plain ASGI middleware)."""

    app: ASGIApp
    gate: Gate
    needs_key: bool

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        what = f"{scope['method']} {scope['path']}"
        answer = self.gate.judge(
            what, headers.get(KEY_HEADER.lower()), self.needs_key, scope["method"] == "POST"
        )
        if answer == 200:
            await self.app(scope, receive, send)
            return
        wait = self.gate.wait
        extra = {"Retry-After": str(wait)} if wait is not None and answer != 401 else {}
        body = {"error": {"code": -32000, "message": "slow down" if answer != 401 else "no key"}}
        await JSONResponse(body, answer, extra)(scope, receive, send)


class _Recorder(grpc.aio.ServerInterceptor):  # type: ignore[misc]
    def __init__(self, seen: list[dict[str, str]], gate: Gate, needs_key: bool) -> None:
        self.seen = seen
        self.gate = gate
        self.needs_key = needs_key

    async def intercept_service(self, continuation: Any, details: Any) -> Any:
        metadata = {k: str(v) for k, v in details.invocation_metadata or ()}
        self.seen.append(metadata)
        method = details.method.rsplit("/", 1)[-1]
        answer = self.gate.judge(
            f"gRPC {method}", metadata.get(KEY_HEADER.lower()), self.needs_key, True
        )
        handler = await continuation(details)
        if answer == 200 and self.gate.cut_stream and handler.response_streaming:
            self.gate.cut_stream = False
            return _cut(handler)
        if answer == 200:
            return handler
        wait, retry_info = self.gate.wait, self.gate.retry_info

        async def refuse(request: Any, context: grpc.aio.ServicerContext) -> Any:
            if answer == 401:
                await context.abort(grpc.StatusCode.UNAUTHENTICATED, "no key")
            status = status_pb2.Status(code=_RPC_CODES[answer], message="slow down")
            trailing: list[tuple[str, str | bytes]] = []
            if wait is not None and retry_info:
                info = error_details_pb2.RetryInfo(retry_delay=duration_pb2.Duration(seconds=wait))
                status.details.add().Pack(info)
            elif wait is not None:
                trailing.append(("retry-after", str(wait)))
            trailing.append(("grpc-status-details-bin", status.SerializeToString()))
            await context.abort(_GRPC_CODES[answer], "slow down", trailing_metadata=tuple(trailing))

        kind = grpc.unary_stream_rpc_method_handler if handler.response_streaming else None
        make = kind or grpc.unary_unary_rpc_method_handler
        return make(
            refuse,
            request_deserializer=handler.request_deserializer,
            response_serializer=handler.response_serializer,
        )


def _cut(handler: Any) -> Any:
    """``handler``'s stream ended after its first event by ``RESOURCE_EXHAUSTED``."""
    inner = handler.unary_stream

    async def cut(request: Any, context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
        async for response in inner(request, context):
            yield response
            break
        await context.abort(
            grpc.StatusCode.RESOURCE_EXHAUSTED, "cut", trailing_metadata=(("retry-after", "1"),)
        )

    return grpc.unary_stream_rpc_method_handler(
        cut,
        request_deserializer=handler.request_deserializer,
        response_serializer=handler.response_serializer,
    )


def _security(card: AgentCard) -> None:
    """An API key in the ``X-Plain-Key`` header, required of every call."""
    card.security_schemes["plain_key"].CopyFrom(
        SecurityScheme(
            api_key_security_scheme=APIKeySecurityScheme(location="header", name=KEY_HEADER)
        )
    )
    card.security_requirements.append(SecurityRequirement(schemes={"plain_key": StringList()}))


def _card(url: str, grpc_target: str) -> AgentCard:
    return AgentCard(
        name="plain a2a-sdk agent",
        description="an agent written with a2a-sdk alone",
        version="1.0.0",
        supported_interfaces=[
            AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version="1.0"),
            AgentInterface(url=url, protocol_binding="HTTP+JSON", protocol_version="1.0"),
            AgentInterface(url=grpc_target, protocol_binding="GRPC", protocol_version="1.0"),
        ],
        capabilities=AgentCapabilities(streaming=True, push_notifications=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[
            AgentSkill(
                id="echo",
                name="Echo",
                description="says back what it is told",
                tags=["test"],
                examples=["hello"],
            )
        ],
    )


@contextmanager
def plain_agent(
    *, api_key: bool = False, card_max_age: int | None = None, grpc_host: str = "127.0.0.1"
) -> Iterator[PlainAgent]:
    """Serve the echo agent: HTTP (JSON-RPC and HTTP+JSON) in a thread, gRPC on its own loop.

    ``api_key``: the card requires the ``X-Plain-Key`` header, and the agent
    refuses requests without it; ``card_max_age``: the card's
    ``Cache-Control: max-age``; ``grpc_host``: where gRPC is served, and the
    card says it is (``127.0.0.2``: another host than the card's, on loopback).
    """
    http_port, grpc_port = free_port(), free_port()
    url, target = f"http://127.0.0.1:{http_port}", f"{grpc_host}:{grpc_port}"
    card = _card(url, target)
    if api_key:
        _security(card)
    gate = Gate()
    configs = InMemoryPushNotificationConfigStore()
    webhooks = httpx.AsyncClient(timeout=5)  # a2a-sdk's sender POSTs through it, unscreened
    handler = DefaultRequestHandler(
        agent_executor=EchoExecutor(),
        task_store=InMemoryTaskStore(),
        agent_card=card,
        push_config_store=configs,
        push_sender=BasePushNotificationSender(webhooks, configs),
    )
    cache_control = f"max-age={card_max_age}" if card_max_age is not None else None
    routes = [
        *create_agent_card_routes(card, cache_control=cache_control),
        *create_jsonrpc_routes(handler, rpc_url="/"),
        *create_rest_routes(handler),
    ]
    app = _HttpGate(Starlette(routes=routes), gate, api_key)
    config = uvicorn.Config(
        app, host="127.0.0.1", port=http_port, log_level="warning", lifespan="off"
    )
    web = uvicorn.Server(config)
    stop = threading.Event()
    seen: list[dict[str, str]] = []

    async def serve_both() -> None:
        """One event loop for both bindings: the handler's stores are not shared across loops."""
        rpc = grpc.aio.server(interceptors=[_Recorder(seen, gate, api_key)])
        a2a_pb2_grpc.add_A2AServiceServicer_to_server(GrpcHandler(handler), rpc)
        rpc.add_insecure_port(target)
        await rpc.start()
        serving = asyncio.create_task(web.serve())
        while not stop.is_set():
            await asyncio.sleep(0.05)
        web.should_exit = True
        await serving
        await rpc.stop(None)
        await webhooks.aclose()

    thread = threading.Thread(target=lambda: asyncio.run(serve_both()), daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not web.started:
        if time.monotonic() > deadline or not thread.is_alive():
            stop.set()
            raise RuntimeError("the plain a2a-sdk agent did not start")
        time.sleep(0.02)
    try:
        yield PlainAgent(url, target, seen, gate)
    finally:
        stop.set()
        thread.join(10)
