"""An independent A2A agent built from a2a-sdk alone (no skillrack), served for real on loopback.

It has one base skill, ``echo`` (a plain text Message in, a completed Task
with the text back out), no schema-interface extension, and speaks
JSON-RPC, HTTP+JSON and gRPC, with push notification configs kept in
a2a-sdk's in-memory store.  skillrack's client commands are checked against
it so that they are known to work with an agent skillrack did not write.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import grpc.aio
import uvicorn
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler, GrpcHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes, create_rest_routes
from a2a.server.tasks import InMemoryPushNotificationConfigStore, InMemoryTaskStore, TaskUpdater
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    Part,
    Task,
    TaskState,
    TaskStatus,
    a2a_pb2_grpc,
)
from starlette.applications import Starlette

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


@dataclass(frozen=True)
class PlainAgent:
    url: str
    grpc_target: str
    #: The metadata of every gRPC call received, in order (what a client sent).
    grpc_metadata: list[dict[str, str]] = field(default_factory=list)


class _Recorder(grpc.aio.ServerInterceptor):  # type: ignore[misc]
    def __init__(self, seen: list[dict[str, str]]) -> None:
        self.seen = seen

    async def intercept_service(self, continuation: Any, details: Any) -> Any:
        self.seen.append({k: str(v) for k, v in details.invocation_metadata or ()})
        return await continuation(details)


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
def plain_agent() -> Iterator[PlainAgent]:
    """Serve the echo agent: HTTP (JSON-RPC and HTTP+JSON) in a thread, gRPC on its own loop."""
    http_port, grpc_port = free_port(), free_port()
    url, target = f"http://127.0.0.1:{http_port}", f"127.0.0.1:{grpc_port}"
    card = _card(url, target)
    handler = DefaultRequestHandler(
        agent_executor=EchoExecutor(),
        task_store=InMemoryTaskStore(),
        agent_card=card,
        push_config_store=InMemoryPushNotificationConfigStore(),
    )
    routes = [
        *create_agent_card_routes(card),
        *create_jsonrpc_routes(handler, rpc_url="/"),
        *create_rest_routes(handler),
    ]
    app = Starlette(routes=routes)
    config = uvicorn.Config(
        app, host="127.0.0.1", port=http_port, log_level="warning", lifespan="off"
    )
    web = uvicorn.Server(config)
    stop = threading.Event()
    seen: list[dict[str, str]] = []

    async def serve_both() -> None:
        """One event loop for both bindings: the handler's stores are not shared across loops."""
        rpc = grpc.aio.server(interceptors=[_Recorder(seen)])
        a2a_pb2_grpc.add_A2AServiceServicer_to_server(GrpcHandler(handler), rpc)
        rpc.add_insecure_port(target)
        await rpc.start()
        serving = asyncio.create_task(web.serve())
        while not stop.is_set():
            await asyncio.sleep(0.05)
        web.should_exit = True
        await serving
        await rpc.stop(None)

    thread = threading.Thread(target=lambda: asyncio.run(serve_both()), daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not web.started:
        if time.monotonic() > deadline or not thread.is_alive():
            stop.set()
            raise RuntimeError("the plain a2a-sdk agent did not start")
        time.sleep(0.02)
    try:
        yield PlainAgent(url, target, seen)
    finally:
        stop.set()
        thread.join(10)
