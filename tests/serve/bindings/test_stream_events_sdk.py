"""HTTP+JSON and gRPC streams with shared encodings send the bytes a2a-sdk's own code sends.

One request handler, whose every stream carries a fresh Task snapshot and
then the same update objects (as a2a-sdk's event queue hands one object to
every stream), and, when asked, an error after them.  It is served twice
over the network, side by side: by a2a-sdk's own ``create_rest_routes`` and
``GrpcHandler`` (registered by a2a-sdk's generated code), and by skillrack's
(:mod:`skillrack.serve.bindings.rest`,
:class:`~skillrack.serve.bindings.grpc_streams.SharedStreamsHandler` registered
by :func:`~skillrack.serve.bindings.grpc_server.a2a_grpc_servicer`).  Several
streams of each side must receive the same bytes, error included (an SSE
``error`` event; a gRPC status with its details), and skillrack's side must
encode each update once whatever the number of streams, counted at the
encoders.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import grpc
import grpc.aio
import httpx
import pytest
from a2a.server.context import ServerCallContext
from a2a.server.request_handlers import GrpcHandler
from a2a.server.routes import DefaultServerCallContextBuilder, create_rest_routes
from a2a.types import (
    Artifact,
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
    a2a_pb2,
    a2a_pb2_grpc,
)
from a2a.utils.errors import TaskNotFoundError
from starlette.applications import Starlette
from starlette.routing import Mount

from skillrack.protocol.values import data_part
from skillrack.serve.bindings import stream_events
from skillrack.serve.bindings.grpc_server import a2a_grpc_servicer
from skillrack.serve.bindings.grpc_streams import SharedStreamsHandler
from skillrack.serve.bindings.rest import rest_routes
from skillrack.serve.bindings.stream_events import EventEncodings
from skillrack.testing.serve import HEADERS, free_port, serving_in_thread

STREAMS = 4
UPDATES = 6
SERVICE = "/lf.a2a.v1.A2AService/"


def updates() -> list[TaskStatusUpdateEvent | TaskArtifactUpdateEvent]:
    working = TaskStatus(state=TaskState.TASK_STATE_WORKING)
    found: list[TaskStatusUpdateEvent | TaskArtifactUpdateEvent] = [
        TaskStatusUpdateEvent(task_id="t-1", context_id="c-1", status=working)
    ]
    for tick in range(UPDATES - 2):
        value = {"tick": tick, "text": "ünïcode ✓ 東京", "x": tick + 0.5, "nested": {"k": [1, 2]}}
        found.append(
            TaskArtifactUpdateEvent(
                task_id="t-1",
                context_id="c-1",
                artifact=Artifact(artifact_id=f"a-{tick}", parts=[data_part(value)]),
                append=tick > 0,
            )
        )
    done = TaskStatus(state=TaskState.TASK_STATE_COMPLETED)
    found.append(TaskStatusUpdateEvent(task_id="t-1", context_id="c-1", status=done))
    return found


class Scripted:
    """The request handler both sides serve: every stream, the same update objects."""

    def __init__(self) -> None:
        self.updates = updates()
        #: Makes the error every stream raises after the updates (None: the streams end).
        self.error: Callable[[], Exception] | None = None

    async def _stream(self) -> AsyncIterator[Any]:
        yield Task(
            id="t-1", context_id="c-1", status=TaskStatus(state=TaskState.TASK_STATE_WORKING)
        )
        for update in self.updates:
            await asyncio.sleep(0)
            yield update
        if self.error is not None:
            raise self.error()

    def on_message_send_stream(self, params: Any, context: ServerCallContext) -> AsyncIterator[Any]:
        return self._stream()

    def on_subscribe_to_task(self, params: Any, context: ServerCallContext) -> AsyncIterator[Any]:
        return self._stream()


@pytest.fixture(scope="module")
def scripted() -> Scripted:
    return Scripted()


@pytest.fixture(scope="module")
def rest_base(scripted: Scripted) -> Iterator[str]:
    """a2a-sdk's HTTP+JSON routes under /sdk, skillrack's under /ours, on one server."""
    builder = DefaultServerCallContextBuilder()
    app = Starlette(
        routes=[
            Mount("/sdk", routes=create_rest_routes(scripted, context_builder=builder)),  # type: ignore[arg-type]
            Mount("/ours", routes=rest_routes(scripted, builder, EventEncodings())),  # type: ignore[arg-type]
        ]
    )
    with serving_in_thread(app) as url:
        yield url


@pytest.fixture(autouse=True)
def fresh(scripted: Scripted) -> Iterator[None]:
    """New update objects for each test (the servers keep the encodings of those they saw)."""
    scripted.updates = updates()
    yield
    scripted.error = None


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[Any]]:
    """The events skillrack's encoders wrote, by encoding."""
    seen: dict[str, list[Any]] = {"json": [], "wire": []}
    json_text, wire = stream_events.write_result, stream_events.write_wire
    monkeypatch.setattr(
        stream_events, "write_result", lambda e: seen["json"].append(e) or json_text(e)
    )
    monkeypatch.setattr(stream_events, "write_wire", lambda e: seen["wire"].append(e) or wire(e))
    return seen


ERRORS: dict[str, Callable[[], Exception] | None] = {
    "none": None,
    "a2a-error": TaskNotFoundError,
    "exception": lambda: RuntimeError("the store went away"),
}


async def rest_bodies(base: str, side: str) -> list[bytes]:
    """The raw SSE bodies of ``STREAMS`` streams of ``side``: a send, the rest subscriptions."""
    headers = {**HEADERS, "Accept": "text/event-stream"}
    send = {"message": {"messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": "go"}]}}
    async with httpx.AsyncClient(timeout=30) as http:

        async def body(path: str, payload: Any) -> bytes:
            response = await http.post(f"{base}/{side}{path}", json=payload, headers=headers)
            assert response.status_code == 200
            assert response.headers["content-type"].startswith("text/event-stream")
            return response.content

        return await asyncio.gather(
            body("/message:stream", send),
            *(body("/tasks/t-1:subscribe", None) for _ in range(STREAMS - 1)),
        )


@pytest.mark.parametrize("error", list(ERRORS))
async def test_rest_streams_send_a2a_sdks_bytes_with_one_encoding_of_each_update(
    rest_base: str, scripted: Scripted, counted: dict[str, list[Any]], error: str
) -> None:
    scripted.error = ERRORS[error]
    sdk = await rest_bodies(rest_base, "sdk")
    counted["json"].clear()
    ours = await rest_bodies(rest_base, "ours")
    assert len(set(sdk)) == 1  # a2a-sdk's streams agree among themselves
    assert ours == sdk
    assert sdk[0].count(b"data: ") == 1 + UPDATES + (error != "none")
    if error != "none":
        assert b"event: error" in sdk[0]
    # One JSON text of each update for all the streams; the Task snapshot once per stream.
    written = counted["json"]
    assert [w for w in written if not isinstance(w, Task)] == scripted.updates
    assert sum(isinstance(w, Task) for w in written) == STREAMS


@pytest.fixture
async def grpc_targets(scripted: Scripted) -> AsyncIterator[dict[str, str]]:
    """a2a-sdk's GrpcHandler and skillrack's SharedStreamsHandler, each on a port of its own."""
    sdk = grpc.aio.server()
    a2a_pb2_grpc.add_A2AServiceServicer_to_server(GrpcHandler(scripted), sdk)  # type: ignore[arg-type]
    ours = grpc.aio.server()
    a2a_grpc_servicer(ours, SharedStreamsHandler(scripted, EventEncodings()))  # type: ignore[arg-type]
    targets = {}
    for name, server in (("sdk", sdk), ("ours", ours)):
        port = free_port()
        server.add_insecure_port(f"127.0.0.1:{port}")
        await server.start()
        targets[name] = f"127.0.0.1:{port}"
    yield targets
    await asyncio.gather(sdk.stop(None), ours.stop(None))


async def grpc_streams(target: str) -> list[tuple[list[bytes], Any, str, Any]]:
    """Each stream's raw messages and its end (status code, details, trailing metadata)."""
    async with grpc.aio.insecure_channel(target) as channel:

        async def one(method: str, request: Any) -> tuple[list[bytes], Any, str, Any]:
            call = channel.unary_stream(
                SERVICE + method,
                request_serializer=lambda r: r.SerializeToString(),
                response_deserializer=None,  # the bytes as sent
            )(request)
            received = []
            try:
                async for raw in call:
                    received.append(raw)
            except grpc.aio.AioRpcError:
                pass
            trailing = sorted((k, v) for k, v in (await call.trailing_metadata() or ()))
            return received, await call.code(), await call.details(), trailing

        send = a2a_pb2.SendMessageRequest(
            message=a2a_pb2.Message(message_id="m-1", role=a2a_pb2.ROLE_USER)
        )
        return await asyncio.gather(
            one("SendStreamingMessage", send),
            *(
                one("SubscribeToTask", a2a_pb2.SubscribeToTaskRequest(id="t-1"))
                for _ in range(STREAMS - 1)
            ),
        )


@pytest.mark.parametrize("error", list(ERRORS))
async def test_grpc_streams_send_a2a_sdks_bytes_with_one_encoding_of_each_update(
    grpc_targets: dict[str, str], scripted: Scripted, counted: dict[str, list[Any]], error: str
) -> None:
    scripted.error = ERRORS[error]
    sdk = await grpc_streams(grpc_targets["sdk"])
    counted["wire"].clear()
    ours = await grpc_streams(grpc_targets["ours"])
    assert all(stream == sdk[0] for stream in sdk)  # a2a-sdk's streams agree among themselves
    assert ours == sdk
    messages, code, _, _ = sdk[0]
    assert len(messages) == 1 + UPDATES
    assert (code == grpc.StatusCode.OK) == (error == "none")
    written = counted["wire"]
    assert [w for w in written if not isinstance(w, Task)] == scripted.updates
    assert sum(isinstance(w, Task) for w in written) == STREAMS
