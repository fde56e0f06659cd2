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
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from a2a.server.events.event_queue import Event
from a2a.types import (
    Artifact,
    Message,
    Role,
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
)
from a2a.utils import json_utils, proto_utils
from google.protobuf.json_format import MessageToDict
from helpers.agent_harness import running_agent
from helpers.agent_skills import AllowAll
from helpers.builders import SkillsPlugin, registry_of, simple_skill
from jsonrpc.jsonrpc2 import JSONRPC20Response

from skillrack import SkillContext
from skillrack.host.registry import Registry
from skillrack.protocol.values import data_part, from_value
from skillrack.serve.bindings import stream_events
from skillrack.serve.bindings.stream_events import SharedEvents
from skillrack.testing.serve import HEADERS, message

SUBSCRIBERS = 4  # besides the stream that started the task: five streams
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
    assert SharedEvents().text(event, request_id) == sdk_text(event, request_id)


def test_updates_are_written_once_and_tasks_each_time(monkeypatch: pytest.MonkeyPatch) -> None:
    written: list[Event] = []
    original = stream_events.write_result

    def counting(event: Event) -> str:
        written.append(event)
        return original(event)

    monkeypatch.setattr(stream_events, "write_result", counting)
    shared = SharedEvents(kept=2)
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
def base(registry: Registry) -> Iterator[str]:
    with running_agent(registry) as url:
        yield url


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
    skill = registry.skills["gated_ticker"]
    data = {
        "skill": "gated_ticker",
        "skill_version": "1.0",
        "interface_digest": skill.interface_digest,
        "arguments": {},
    }
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
