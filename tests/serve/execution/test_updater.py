"""TurnUpdater sends what a2a-sdk's TaskUpdater sends, with the timestamp read the same way."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

import pytest
from a2a.server.tasks import TaskUpdater
from a2a.types import Message, Part, Role, TaskState, TaskStatusUpdateEvent

from skillrack.serve.execution.updater import TurnUpdater, now


class Recorder:
    """The one method of an event queue an updater calls."""

    def __init__(self) -> None:
        self.events: list[Any] = []

    async def enqueue_event(self, event: Any) -> None:
        self.events.append(event)


async def drive(updater_type: type[TaskUpdater], steps: list[tuple[str, Any]]) -> list[Any]:
    queue = Recorder()
    updater = updater_type(queue, "task-1", "context-1")  # type: ignore[arg-type]
    message = Message(message_id="m", role=Role.ROLE_AGENT, parts=[Part(text="why")])
    for step, argument in steps:
        if step == "status":
            await updater.update_status(argument, message=message, metadata={"k": [1, "v"]})
        elif step == "stamped":
            await updater.update_status(argument, timestamp="2026-03-04T05:06:07.123456Z")
        else:
            await getattr(updater, step)()
    return queue.events


def without_time(event: TaskStatusUpdateEvent) -> TaskStatusUpdateEvent:
    copy = TaskStatusUpdateEvent()
    copy.CopyFrom(event)
    copy.status.ClearField("timestamp")
    return copy


STEPS = [
    ("start_work", None),
    ("status", TaskState.TASK_STATE_WORKING),
    ("stamped", TaskState.TASK_STATE_INPUT_REQUIRED),
    ("complete", None),
]


def test_the_same_events_as_a2a_sdks_updater() -> None:
    before = now().ToMicroseconds()
    ours = asyncio.run(drive(TurnUpdater, STEPS))
    theirs = asyncio.run(drive(TaskUpdater, STEPS))
    after = now().ToMicroseconds()
    assert [without_time(e) for e in ours] == [without_time(e) for e in theirs]
    stamped = [e.status.timestamp for e in ours]
    assert stamped[2] == theirs[2].status.timestamp  # a given timestamp, parsed as a2a-sdk does
    for stamp in stamped[:2] + stamped[3:]:
        assert before <= stamp.ToMicroseconds() <= after
        assert stamp.nanos % 1000 == 0  # whole microseconds, as datetime.now gives them


def test_the_clock_as_datetime_reads_it() -> None:
    ours = now().ToDatetime(tzinfo=UTC)
    theirs = datetime.now(UTC)
    assert abs((theirs - ours).total_seconds()) < 5
    assert ours <= theirs


@pytest.mark.parametrize("updater_type", [TurnUpdater, TaskUpdater])
@pytest.mark.parametrize("final", ["complete", "failed", "cancel", "reject"])
def test_nothing_after_a_final_state(updater_type: type[TaskUpdater], final: str) -> None:
    with pytest.raises(RuntimeError, match="already in a terminal state"):
        asyncio.run(drive(updater_type, [(final, None), ("start_work", None)]))
