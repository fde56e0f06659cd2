"""Cluster mode's blocking turn: a cancel that races the last save never loses or overwrites it.

In cluster mode every event is saved as it comes, and a settled state's save
is a commit other replicas read.  A local CancelTask that arrives while that
commit is under way must neither cut it off (the caller would be answered
COMPLETED while every replica still reads WORKING) nor store a CANCELED on
top of a COMPLETED already committed (a2a-sdk's consumer stops at a terminal
state).  Found by review; the saves here stand in for ClusterTaskStore's.
"""

from __future__ import annotations

import asyncio
from typing import Any

from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.cluster import ConcurrentTaskModificationError
from a2a.server.context import ServerCallContext
from a2a.server.events.event_queue import Event
from a2a.types import Message, Task, TaskState, TaskStatus, TaskStatusUpdateEvent
from a2a.utils.errors import InternalError

from skillrack.serve.bindings.blocking import SETTLED, BlockingTurn, Saves


class SlowCommits(Saves):
    """Every event saved; a settled one takes a commit's round trip."""

    every_event = True

    def __init__(self) -> None:
        self.committed: list[str] = []

    async def save(self, task: Task, event: Event | None) -> None:
        if task.status.state in SETTLED:
            await asyncio.sleep(0.05)
        self.committed.append(TaskState.Name(task.status.state))

    async def reload(self, task_id: str) -> Task | None:
        raise AssertionError("no other replica in these tests")


def update(state: Any) -> TaskStatusUpdateEvent:
    return TaskStatusUpdateEvent(task_id="t", context_id="c", status=TaskStatus(state=state))


class Completes(AgentExecutor):
    """Completes after a moment; its cancel either waits or enqueues CANCELED."""

    def __init__(self, cancel_enqueues: bool) -> None:
        self.cancel_enqueues = cancel_enqueues

    async def execute(self, context: RequestContext, queue: Any) -> None:
        submitted = TaskStatus(state=TaskState.TASK_STATE_SUBMITTED)
        await queue.enqueue_event(Task(id="t", context_id="c", status=submitted))
        await queue.enqueue_event(update(TaskState.TASK_STATE_WORKING))
        await asyncio.sleep(0.01)
        await queue.enqueue_event(update(TaskState.TASK_STATE_COMPLETED))

    async def cancel(self, context: RequestContext, queue: Any) -> None:
        if self.cancel_enqueues:
            await queue.enqueue_event(update(TaskState.TASK_STATE_CANCELED))
        else:
            await asyncio.sleep(0.015)


async def race(cancel_enqueues: bool, cancel_at: float) -> tuple[list[str], list[str]]:
    saves = SlowCommits()
    request = RequestContext(call_context=ServerCallContext(), task_id="t", context_id="c")
    turn = BlockingTurn(Completes(cancel_enqueues), request, ServerCallContext(), saves)
    run = turn.start()
    await asyncio.sleep(cancel_at)
    cancel = asyncio.ensure_future(turn.cancel(ServerCallContext()))
    answers = await asyncio.gather(run, cancel)
    states = [TaskState.Name(a.status.state) for a in answers if isinstance(a, Task)]
    return saves.committed, states


def test_a_cancel_does_not_cut_off_the_completed_commit() -> None:
    committed, answers = asyncio.run(race(cancel_enqueues=False, cancel_at=0.005))
    assert answers == ["TASK_STATE_COMPLETED", "TASK_STATE_COMPLETED"]
    assert committed[-1] == "TASK_STATE_COMPLETED"  # stored before either answer


def test_a_canceled_never_overwrites_a_committed_completed() -> None:
    committed, answers = asyncio.run(race(cancel_enqueues=True, cancel_at=0.02))
    assert committed == ["TASK_STATE_SUBMITTED", "TASK_STATE_WORKING", "TASK_STATE_COMPLETED"]
    assert answers == ["TASK_STATE_COMPLETED", "TASK_STATE_COMPLETED"]


class AnotherReplicaKeepsWriting(Saves):
    """The WORKING save is refused twice (another replica advanced the task each time)."""

    every_event = True

    def __init__(self) -> None:
        self.stored = Task(
            id="t", context_id="c", status=TaskStatus(state=TaskState.TASK_STATE_WORKING)
        )
        self.refusals = 2
        self.committed: list[str] = []

    async def save(self, task: Task, event: Event | None) -> None:
        if task.status.state == TaskState.TASK_STATE_WORKING and self.refusals:
            self.refusals -= 1
            raise ConcurrentTaskModificationError("t")
        self.committed.append(TaskState.Name(task.status.state))
        self.stored.CopyFrom(task)

    async def reload(self, task_id: str) -> Task | None:
        stored = Task()
        stored.CopyFrom(self.stored)
        return stored


def answer_of(executor: AgentExecutor, saves: Saves) -> BaseException | Task | Message:
    """What a blocking turn of ``executor`` answers (or raises), saving through ``saves``."""

    async def turn() -> BaseException | Task | Message:
        request = RequestContext(call_context=ServerCallContext(), task_id="t", context_id="c")
        run = BlockingTurn(executor, request, ServerCallContext(), saves).start()
        return (await asyncio.gather(run, return_exceptions=True))[0]

    return asyncio.run(turn())


def test_a_save_refused_twice_stores_failed_as_a2a_sdk_does() -> None:
    saves = AnotherReplicaKeepsWriting()
    answer, committed = answer_of(Completes(False), saves), saves.committed
    assert isinstance(answer, InternalError)  # the caller hears the turn failed
    assert committed[-1] == "TASK_STATE_FAILED"  # and every replica reads it so


class FirstSaveRefused(AnotherReplicaKeepsWriting):
    """The Task's first save is refused once; the stored task is still in progress."""

    async def save(self, task: Task, event: Event | None) -> None:
        if isinstance(event, Task) and self.refusals:
            self.refusals = 0
            raise ConcurrentTaskModificationError("t")
        self.committed.append(TaskState.Name(task.status.state))
        self.stored.CopyFrom(task)


def test_a_refused_task_save_over_a_running_task_is_made_again() -> None:
    saves = FirstSaveRefused()
    answer, committed = answer_of(Completes(False), saves), saves.committed
    assert isinstance(answer, Task)
    assert answer.status.state == TaskState.TASK_STATE_COMPLETED  # not the stored WORKING
    assert committed == ["TASK_STATE_SUBMITTED", "TASK_STATE_WORKING", "TASK_STATE_COMPLETED"]


class CanceledElsewhere(AnotherReplicaKeepsWriting):
    """Another replica cancelled the task: the WORKING save is refused, the stored one ended."""

    def __init__(self) -> None:
        super().__init__()
        self.stored.status.state = TaskState.TASK_STATE_CANCELED

    async def save(self, task: Task, event: Event | None) -> None:
        if task.status.state == TaskState.TASK_STATE_WORKING:
            raise ConcurrentTaskModificationError("t")
        self.committed.append(TaskState.Name(task.status.state))


class StoppedBadly(Completes):
    """Turns being stopped (CancelledError) into an error of its own."""

    async def execute(self, context: RequestContext, queue: Any) -> None:
        try:
            await super().execute(context, queue)
        except asyncio.CancelledError:
            raise RuntimeError("stopped") from None


def test_a_superseded_turn_answers_the_stored_task_whatever_the_executor_raises() -> None:
    answer = answer_of(StoppedBadly(False), CanceledElsewhere())
    assert isinstance(answer, Task), answer
    assert answer.status.state == TaskState.TASK_STATE_CANCELED
