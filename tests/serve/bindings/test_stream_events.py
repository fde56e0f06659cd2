"""The streams of one task share one serialization of each event (issue 34).

a2a-sdk hands the same event object to every stream of a task; skillrack's
JSON-RPC dispatcher writes its JSON once (:mod:`skillrack.serve.bindings.stream_events`)
and wraps it in each stream's own envelope.  Checked two ways: the bytes are
the ones a2a-sdk's own path writes, and against a real server, five streams
of one task (SendStreamingMessage and four SubscribeToTask) cost one write
of each update they all carried, counted at the serializer.
"""

from __future__ import annotations

import asyncio
import json
import threading
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from typing import Any, NamedTuple

import grpc
import grpc.aio
import httpx
import pytest
from a2a.server.events.event_queue import Event
from a2a.types import (
    Artifact,
    Message,
    Role,
    StreamResponse,
    SubscribeToTaskRequest,
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
)
from a2a.utils import json_utils, proto_utils
from a2a.utils.error_handlers import build_rest_error_payload
from a2a.utils.errors import TaskNotFoundError
from google.protobuf.json_format import MessageToDict
from helpers.agent_harness import running_agent
from helpers.agent_skills import AllowAll
from helpers.builders import SkillsPlugin, registry_of, simple_skill
from jsonrpc.jsonrpc2 import JSONRPC20Response

from skillrack import SkillContext
from skillrack.host.config import Config
from skillrack.host.registry import Registry
from skillrack.protocol.values import data_part, from_value
from skillrack.serve.bindings import stream_events
from skillrack.serve.bindings.request_handler import SkillrackRequestHandler
from skillrack.serve.bindings.stream_events import EventEncodings
from skillrack.serve.server import with_grpc_port
from skillrack.testing.serve import HEADERS, free_port, message

SUBSCRIBERS = 4  # besides the stream that started the task: five streams
REST_SUBSCRIBERS, GRPC_SUBSCRIBERS = 2, 3  # besides an HTTP+JSON message:stream: six streams
TICKS = 12

#: Opened by the test once every stream has its first event: the skill then ticks.
GATE = threading.Event()


async def gated_ticker(arguments: dict[str, Any], context: SkillContext) -> dict[str, Any]:
    await context.publish_progress({"tick": 0})
    await asyncio.to_thread(GATE.wait, 30)
    for tick in range(1, TICKS + 1):
        await context.publish_progress({"tick": tick})
        await asyncio.sleep(0.05)
    return {"ticks": TICKS}


def sdk_text(event: Event, request_id: str | int | None) -> str:
    """What a2a-sdk's JSON-RPC dispatcher writes for ``event`` (its ``_map_event``, dumped)."""
    result = MessageToDict(proto_utils.to_stream_response(event), preserving_proto_field_name=False)
    return json_utils.dumps(JSONRPC20Response(result=result, _id=request_id).data)


def events() -> list[Event]:
    status = TaskStatus(state=TaskState.TASK_STATE_WORKING)
    return [
        TaskStatusUpdateEvent(task_id="t-1", context_id="c-1", status=status),
        TaskArtifactUpdateEvent(
            task_id="t-1",
            context_id="c-1",
            artifact=Artifact(artifact_id="a", name="ünïcode ✓", parts=[data_part({"x": 1.5})]),
            last_chunk=True,
        ),
        Task(id="t-1", context_id="c-1", status=status),
        Message(message_id="m", role=Role.ROLE_AGENT, parts=[data_part({"ok": True})]),
    ]


@pytest.mark.parametrize("request_id", ["r-1", 7, None])
@pytest.mark.parametrize("event", events(), ids=lambda e: type(e).__name__)
def test_the_text_is_the_one_a2a_sdk_writes(event: Event, request_id: str | int | None) -> None:
    assert EventEncodings().text(event, request_id) == sdk_text(event, request_id)


@pytest.mark.parametrize("event", events(), ids=lambda e: type(e).__name__)
def test_the_json_and_the_bytes_are_the_ones_a2a_sdk_writes(event: Event) -> None:
    """HTTP+JSON's SSE data (``json_utils.dumps(MessageToDict(...))``) and gRPC's message."""
    response = proto_utils.to_stream_response(event)
    encodings = EventEncodings()
    assert encodings.json(event) == json_utils.dumps(MessageToDict(response))
    assert encodings.wire(event) == response.SerializeToString()


def test_every_encoding_of_an_update_is_made_once(monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[tuple[str, Event]] = []
    json_text, wire = stream_events.write_result, stream_events.write_wire
    monkeypatch.setattr(
        stream_events, "write_result", lambda e: made.append(("json", e)) or json_text(e)
    )
    monkeypatch.setattr(stream_events, "write_wire", lambda e: made.append(("wire", e)) or wire(e))
    encodings = EventEncodings()
    _, artifact, task, _ = events()
    for request_id in range(3):  # JSON-RPC, HTTP+JSON and gRPC streams of one task
        encodings.text(artifact, request_id)
        encodings.json(artifact)
        encodings.wire(artifact)
        encodings.wire(task)
    assert made.count(("json", artifact)) == 1
    assert made.count(("wire", artifact)) == 1
    assert made.count(("wire", task)) == 3


def test_updates_are_written_once_and_tasks_each_time(monkeypatch: pytest.MonkeyPatch) -> None:
    written: list[Event] = []
    original = stream_events.write_result

    def counting(event: Event) -> str:
        written.append(event)
        return original(event)

    monkeypatch.setattr(stream_events, "write_result", counting)
    shared = EventEncodings(kept=2)
    update, artifact, task, _ = events()
    for request_id in range(5):
        shared.text(update, request_id)
        shared.text(task, request_id)
    assert [type(e).__name__ for e in written].count("TaskStatusUpdateEvent") == 1
    assert [type(e).__name__ for e in written].count("Task") == 5
    shared.text(artifact, 0)
    shared.text(TaskStatusUpdateEvent(task_id="t-2"), 0)  # the bound: update is dropped
    written.clear()
    assert shared.text(update, 9) == sdk_text(update, 9)
    assert written == [update]


@pytest.fixture(scope="module")
def registry() -> Registry:
    skill = simple_skill("gated_ticker", handler=gated_ticker)
    return registry_of([("ticker", SkillsPlugin(skill)), ("allow", AllowAll())])


@pytest.fixture(scope="module")
def served(registry: Registry, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """One agent serving JSON-RPC, HTTP+JSON and gRPC (its own port)."""
    grpc_port = free_port()
    config = with_grpc_port(Config(base_dir=tmp_path_factory.mktemp("streams")), grpc_port)
    with running_agent(registry, config) as url:
        yield Served(url, f"127.0.0.1:{grpc_port}")


@pytest.fixture(scope="module")
def base(served: Served) -> str:
    return served.url


class Served(NamedTuple):
    url: str
    grpc_target: str


def request(method: str, params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": str(uuid.uuid4()), "method": method, "params": params}


class Stream:
    """One SSE stream: every ``data`` line read, and an event set at the first."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.first = asyncio.Event()

    async def read(self, http: httpx.AsyncClient, base: str, body: dict[str, Any]) -> None:
        headers = {**HEADERS, "Accept": "text/event-stream"}
        async with http.stream("POST", base + "/", json=body, headers=headers) as response:
            assert response.status_code == 200
            async for line in response.aiter_lines():
                if line.startswith("data:"):
                    self.lines.append(line.removeprefix("data:").strip())
                    self.first.set()

    def results(self) -> list[Any]:
        return [json.loads(line)["result"] for line in self.lines]


def tick_of(data: Any) -> int | None:
    """The tick of a progressive result (``{"skill", "result": {"tick"}}``); None otherwise."""
    result = data.get("result") if isinstance(data, dict) else None
    tick = result.get("tick") if isinstance(result, dict) else None
    return int(tick) if tick is not None else None


def ticks_of(stream: Stream) -> dict[int, str]:
    """tick -> the ``result`` text of the progress event that carried it."""
    found = {}
    for line, result in zip(stream.lines, stream.results(), strict=True):
        update = result.get("artifactUpdate")
        tick = tick_of(update["artifact"]["parts"][0]["data"]) if update else None
        if tick is not None:
            found[tick] = line[line.index('"result": ') : line.rindex(', "id": ')]
    return found


def gated_ticker_request(registry: Registry) -> dict[str, Any]:
    """The request object of the gated ticker, bound to its interface digest."""
    return {
        "skill": "gated_ticker",
        "skill_version": "1.0",
        "interface_digest": registry.skills["gated_ticker"].interface_digest,
        "arguments": {},
    }


async def test_five_streams_of_a_task_share_one_serialization_of_each_event(
    base: str, registry: Registry, monkeypatch: pytest.MonkeyPatch
) -> None:
    written: list[Event] = []
    original = stream_events.write_result

    def counting(event: Event) -> str:
        written.append(event)
        return original(event)

    monkeypatch.setattr(stream_events, "write_result", counting)
    GATE.clear()
    data = gated_ticker_request(registry)
    async with httpx.AsyncClient(timeout=30) as http:
        starter = Stream()
        started = asyncio.create_task(
            starter.read(http, base, request("SendStreamingMessage", {"message": message(data)}))
        )
        await asyncio.wait_for(starter.first.wait(), 30)
        task_id = starter.results()[0]["task"]["id"]
        subscribers = [Stream() for _ in range(SUBSCRIBERS)]
        reading = [
            asyncio.create_task(s.read(http, base, request("SubscribeToTask", {"id": task_id})))
            for s in subscribers
        ]
        await asyncio.wait_for(asyncio.gather(*(s.first.wait() for s in subscribers)), 30)
        GATE.set()
        await asyncio.wait_for(asyncio.gather(started, *reading), 30)
    streams = [starter, *subscribers]
    for stream in streams:  # every stream ended with the task
        assert stream.results()[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
    seen = [ticks_of(stream) for stream in streams]
    common = set.intersection(*(set(ticks) for ticks in seen))
    assert {TICKS - 2, TICKS - 1, TICKS} <= common  # the last ticks reached every stream
    for tick in common:  # the same text in every stream
        assert len({ticks[tick] for ticks in seen}) == 1
    # One write of each update, whatever the number of streams that carried it.
    updates = [e for e in written if isinstance(e, TaskArtifactUpdateEvent)]
    per_tick = Counter(tick_of(from_value(e.artifact.parts[0].data)) for e in updates)
    assert all(per_tick[tick] == 1 for tick in common), per_tick
    finals = [
        e
        for e in written
        if isinstance(e, TaskStatusUpdateEvent) and e.status.state == TaskState.TASK_STATE_COMPLETED
    ]
    assert len(finals) == 1
    # The Tasks (each stream's first event, a snapshot of its own) are written per stream.
    assert sum(isinstance(e, Task) for e in written) == len(streams)


# -- HTTP+JSON and gRPC: the same sharing, the same bytes ------------------------------------


class RestStream:
    """One HTTP+JSON SSE stream: every event (its kind and data) read, an event set at the first."""

    def __init__(self) -> None:
        self.events: list[tuple[str | None, str]] = []
        self.first = asyncio.Event()

    async def read(self, http: httpx.AsyncClient, url: str, body: Any) -> None:
        headers = {**HEADERS, "Accept": "text/event-stream"}
        kind = None
        async with http.stream("POST", url, json=body, headers=headers) as response:
            assert response.status_code == 200
            async for line in response.aiter_lines():
                if line.startswith("event:"):
                    kind = line.removeprefix("event:").strip()
                elif line.startswith("data:"):
                    self.events.append((kind, line.removeprefix("data:").strip()))
                    kind = None
                    self.first.set()

    def texts(self) -> list[str]:
        return [data for kind, data in self.events if kind is None]


class GrpcStream:
    """One gRPC SubscribeToTask: every message's bytes as sent, its end, an event at the first."""

    def __init__(self) -> None:
        self.messages: list[bytes] = []
        self.first = asyncio.Event()
        self.code: grpc.StatusCode | None = None
        self.details: str | None = None

    async def read(self, target: str, task_id: str) -> None:
        metadata = [(k.lower(), v) for k, v in HEADERS.items()]
        async with grpc.aio.insecure_channel(target) as channel:
            call = channel.unary_stream(
                "/lf.a2a.v1.A2AService/SubscribeToTask",
                request_serializer=lambda r: r.SerializeToString(),
                response_deserializer=None,  # the bytes as sent
            )(SubscribeToTaskRequest(id=task_id), metadata=metadata)
            try:
                async for raw in call:
                    self.messages.append(raw)
                    self.first.set()
            except grpc.aio.AioRpcError:
                pass
            self.code, self.details = await call.code(), await call.details()

    def responses(self) -> list[StreamResponse]:
        return [StreamResponse.FromString(raw) for raw in self.messages]


def tick_in(response: dict[str, Any]) -> int | None:
    """The tick a StreamResponse (as a dict) carries, if it is a progress update."""
    update = response.get("artifactUpdate")
    return tick_of(update["artifact"]["parts"][0]["data"]) if update else None


async def six_streams(
    served: Served, registry: Registry
) -> tuple[list[RestStream], list[GrpcStream]]:
    """A task started by an HTTP+JSON message:stream, watched by HTTP+JSON and gRPC subscribers."""
    GATE.clear()
    data = gated_ticker_request(registry)
    async with httpx.AsyncClient(timeout=30) as http:
        starter = RestStream()
        started = asyncio.create_task(
            starter.read(http, served.url + "/message:stream", {"message": message(data)})
        )
        await asyncio.wait_for(starter.first.wait(), 30)
        task_id = json.loads(starter.texts()[0])["task"]["id"]
        rest = [RestStream() for _ in range(REST_SUBSCRIBERS)]
        grpc_streams = [GrpcStream() for _ in range(GRPC_SUBSCRIBERS)]
        url = f"{served.url}/tasks/{task_id}:subscribe"
        reading = [asyncio.create_task(s.read(http, url, None)) for s in rest]
        reading += [asyncio.create_task(s.read(served.grpc_target, task_id)) for s in grpc_streams]
        firsts = [s.first.wait() for s in (*rest, *grpc_streams)]
        await asyncio.wait_for(asyncio.gather(*firsts), 30)
        GATE.set()
        await asyncio.wait_for(asyncio.gather(started, *reading), 30)
    return [starter, *rest], grpc_streams


def counted_encodings(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, Event]]:
    """Every encoding the server's encoders make from now on: ("json" | "wire", event)."""
    made: list[tuple[str, Event]] = []
    json_text, wire = stream_events.write_result, stream_events.write_wire

    def counted_json(event: Event) -> str:
        made.append(("json", event))
        return json_text(event)

    def counted_wire(event: Event) -> bytes:
        made.append(("wire", event))
        return wire(event)

    monkeypatch.setattr(stream_events, "write_result", counted_json)
    monkeypatch.setattr(stream_events, "write_wire", counted_wire)
    return made


async def test_rest_and_grpc_streams_of_a_task_share_one_encoding_of_each_event(
    served: Served, registry: Registry, monkeypatch: pytest.MonkeyPatch
) -> None:
    made = counted_encodings(monkeypatch)
    rest, grpc_streams = await six_streams(served, registry)
    for grpc_stream in grpc_streams:
        assert grpc_stream.code == grpc.StatusCode.OK, grpc_stream.details
    # Every stream ended with the task; each carried the same text (bytes) of each tick.
    for stream in rest:
        last = json.loads(stream.texts()[-1])
        assert last["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
    for grpc_stream in grpc_streams:
        last_response = grpc_stream.responses()[-1]
        assert last_response.status_update.status.state == TaskState.TASK_STATE_COMPLETED
    texts = [{tick_in(json.loads(t)): t for t in s.texts()} for s in rest]
    wires = [
        {tick_in(MessageToDict(StreamResponse.FromString(raw))): raw for raw in s.messages}
        for s in grpc_streams
    ]
    common = set.intersection(*(set(found) for found in (*texts, *wires))) - {None}
    assert {TICKS - 2, TICKS - 1, TICKS} <= common  # the last ticks reached every stream
    for tick in common:
        assert len({found[tick] for found in texts}) == 1
        assert len({found[tick] for found in wires}) == 1
        text, raw = texts[0][tick], wires[0][tick]
        response = StreamResponse.FromString(raw)
        # What a2a-sdk writes of that response: its HTTP+JSON SSE data, its gRPC message.
        # As values, and the gRPC bytes not against a serialization of their parse: a Struct
        # parsed from the wire may list (and serialize) its members in another order than the
        # event it was written from; test_stream_events_sdk.py compares the bytes a2a-sdk
        # writes of the same event objects, JSON and protobuf.
        assert json.loads(text) == json.loads(json_utils.dumps(MessageToDict(response)))
    # One encoding of each update per form, however many streams carried it.
    for kind in ("json", "wire"):
        updates = [e for k, e in made if k == kind and isinstance(e, TaskArtifactUpdateEvent)]
        per_tick = Counter(tick_of(from_value(e.artifact.parts[0].data)) for e in updates)
        assert all(per_tick[tick] == 1 for tick in common), (kind, per_tick)
    # The Tasks (each stream's first event, a snapshot of its own) are encoded per stream.
    assert sum(k == "json" and isinstance(e, Task) for k, e in made) == len(rest)
    assert sum(k == "wire" and isinstance(e, Task) for k, e in made) == len(grpc_streams)


async def test_an_error_mid_stream_ends_rest_and_grpc_streams_as_a2a_sdk_does(
    served: Served, registry: Registry, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A subscription failing after its first update: the SSE ``error`` event, the gRPC status."""
    subscribe = SkillrackRequestHandler.on_subscribe_to_task

    async def failing(self: Any, params: Any, context: Any) -> AsyncIterator[Event]:
        async for event in subscribe(self, params, context):
            yield event
            if isinstance(event, TaskArtifactUpdateEvent):
                raise TaskNotFoundError(message="the task went away")

    monkeypatch.setattr(SkillrackRequestHandler, "on_subscribe_to_task", failing)
    rest, grpc_streams = await six_streams(served, registry)
    starter, subscribers = rest[0], rest[1:]
    assert starter.events[-1][0] is None  # the message:stream did not subscribe: it ran on
    error = TaskNotFoundError(message="the task went away")
    for stream in subscribers:
        kinds = [kind for kind, _ in stream.events]
        assert kinds[-1] == "error" and kinds.count("error") == 1
        assert stream.events[-1][1] == json_utils.dumps(build_rest_error_payload(error))
        assert json.loads(stream.events[-2][1])["artifactUpdate"]  # the update, then the end
    for grpc_stream in grpc_streams:
        assert grpc_stream.code == grpc.StatusCode.NOT_FOUND
        assert grpc_stream.details == "the task went away"
        assert grpc_stream.responses()[-1].HasField("artifact_update")
