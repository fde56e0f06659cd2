"""A question asked with a deadline: the host, not the caller, runs the turn that follows it.

``await context.request_input(q, deadline=when)`` parks the task in
``TASK_STATE_INPUT_REQUIRED`` like any question, and the status Message
carries the deadline in its metadata (:data:`DEADLINE_METADATA_KEY`, so a
client, an operator or another replica can read it).  Under the replay model
a handler runs only when a Message arrives; a caller who never answers would
leave the task parked for ever, and a handler that must act on the silence
(roll back an unconfirmed change, RFC 6241 section 8.4) would never run.  So
the executor arms a timer here (:class:`InputDeadlines`), and when it fires
with the question still unanswered the host sends the task a Message of its
own (role ``agent``, one Data Part :data:`DEADLINE_PASSED_KEY`, built by
:func:`deadline_message`) through the same request handler every binding
uses, as the caller who asked.  That Message stays in the task's history:
replaying it (:mod:`skillrack.serve.execution.replay`), ``request_input``
raises :class:`~skillrack.errors.InputDeadlinePassed` for that question on
this turn and every later one, on any replica.

A caller's answer that arrives after the deadline, before the host's turn,
is too late all the same: the executor adds the same Message after it and
the question counts as unanswered (the deadline is read from the stored
status Message, so this holds after a restart too).

The timers live in the process that parked the task, and the park keeps the
caller in the task's metadata (:mod:`skillrack.serve.execution.stored_caller`)
for whichever process arms them again: in cluster mode a task parked with a
deadline holds a lease (:func:`skillrack.serve.stores.leases.holds_lease`),
so when its replica dies a survivor takes it over and re-arms the timer; one
process on SQLite re-arms every parked task's at start-up
(:mod:`skillrack.serve.execution.restarts`).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from a2a.server.tasks import TaskUpdater
from a2a.types import Message, Role, Task, TaskState

from skillrack.errors import InputRequired
from skillrack.protocol.task_metadata import DEADLINE_KEY
from skillrack.protocol.values import data_part, from_value
from skillrack.serve.execution.stored_caller import caller_metadata
from skillrack.serve.security.caller import Caller

logger = logging.getLogger(__name__)

#: Status Message metadata of a question asked with a deadline: ``{"deadline", "question"}``.
DEADLINE_METADATA_KEY = DEADLINE_KEY
#: The Data Part member of the host's Message that says a question's deadline passed.
DEADLINE_PASSED_KEY = "input_deadline_passed"
#: How long the host's turn waits for a question's park to reach the store (a tiny deadline).
PARK_WAIT_S = 5.0
_PARK_POLL_S = 0.1


def timestamp(moment: dt.datetime) -> str:
    """``moment`` as RFC 3339 UTC with milliseconds (how deadlines travel and are compared)."""
    if moment.tzinfo is None:
        raise ValueError("a deadline must be an aware datetime (datetime.now(UTC) + ...)")
    return moment.astimezone(dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def parse_timestamp(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00"))


def passed(deadline: str, now: dt.datetime | None = None) -> bool:
    """Whether ``deadline`` (RFC 3339) is now or earlier."""
    return parse_timestamp(deadline) <= (now or dt.datetime.now(dt.UTC))


@dataclass(frozen=True)
class DeadlinePassed:
    """The answer replay gives a question whose deadline passed: ``request_input`` raises."""

    deadline: str


@dataclass(frozen=True)
class Asked:
    """A question waiting with a deadline: which of the handler's questions, and until when."""

    question: int
    deadline: str

    def metadata(self) -> dict[str, Any]:
        return {DEADLINE_METADATA_KEY: {"deadline": self.deadline, "question": self.question}}


def asked_in(task: Task) -> Asked | None:
    """The question ``task`` waits on with a deadline, if it is parked on one."""
    if task.status.state != TaskState.TASK_STATE_INPUT_REQUIRED:
        return None
    if not task.status.HasField("message"):
        return None
    return _asked_of(task.status.message)


def _asked_of(message: Message) -> Asked | None:
    value = message.metadata.fields.get(DEADLINE_METADATA_KEY)
    if value is None or not value.HasField("struct_value"):
        return None
    fields = value.struct_value.fields
    if "deadline" not in fields or "question" not in fields:
        return None
    return Asked(int(fields["question"].number_value), fields["deadline"].string_value)


def deadline_message(task_id: str, context_id: str, asked: Asked) -> Message:
    """The host's Message to a task whose question went unanswered until its deadline."""
    return Message(
        message_id=str(uuid.uuid4()),
        role=Role.ROLE_AGENT,
        task_id=task_id,
        context_id=context_id,
        parts=[
            data_part(
                {
                    DEADLINE_PASSED_KEY: {
                        "question": asked.question,
                        "deadline": asked.deadline,
                        "message": "no answer came by the deadline; the skill goes on without one",
                    }
                }
            )
        ],
    )


def passed_in(message: Message) -> Asked | None:
    """The question a host's deadline Message (:func:`deadline_message`) is about, else None."""
    if message.role != Role.ROLE_AGENT or len(message.parts) != 1:
        return None
    part = message.parts[0]
    if not part.HasField("data"):
        return None
    value = from_value(part.data)
    if not isinstance(value, dict) or set(value) != {DEADLINE_PASSED_KEY}:
        return None
    said = value[DEADLINE_PASSED_KEY]
    if not isinstance(said, dict):
        return None
    question, deadline = said.get("question"), said.get("deadline")
    if not isinstance(question, int | float) or not isinstance(deadline, str):
        return None
    return Asked(int(question), deadline)


@dataclass(frozen=True)
class Armed:
    """A task parked on a question with a deadline, as the executor left it."""

    task_id: str
    context_id: str
    #: The caller who asked (as authentication established it): the host's turn runs as them.
    caller: Caller
    asked: Asked


#: What runs the host's turn (the request handler's, wired by ``build_server``).
Resume = Callable[[Armed], Awaitable[None]]


class InputDeadlines:
    """The timers of the questions this process parked with a deadline, by task id."""

    def __init__(self) -> None:
        self._resume: Resume | None = None
        self._timers: dict[str, asyncio.TimerHandle] = {}
        self._running: set[asyncio.Task[None]] = set()

    def bind(self, resume: Resume) -> None:
        """Who runs the host's turn; until bound, a deadline only logs (a bare executor)."""
        self._resume = resume

    async def park(self, updater: TaskUpdater, asked: InputRequired, caller: Caller) -> None:
        """Park the task on ``asked`` (a handler's question); with a deadline, arm its timer."""
        deadline = Asked(asked.question, asked.deadline) if asked.deadline is not None else None
        await updater.update_status(
            TaskState.TASK_STATE_INPUT_REQUIRED,
            message=updater.new_agent_message(
                [data_part(asked.request)],
                metadata=deadline.metadata() if deadline is not None else None,
            ),
            # The caller, for a process that re-arms this deadline after a restart.
            metadata=caller_metadata(caller) if deadline is not None else None,
        )
        if deadline is not None:
            self.arm(Armed(updater.task_id, updater.context_id, caller, deadline))

    def arm(self, armed: Armed) -> None:
        """Run the host's turn for ``armed`` at its deadline (replacing the task's earlier one)."""
        loop = asyncio.get_running_loop()
        delay = (parse_timestamp(armed.asked.deadline) - dt.datetime.now(dt.UTC)).total_seconds()
        self.disarm(armed.task_id)
        self._timers[armed.task_id] = loop.call_later(max(delay, 0.0), self._fire, armed)

    def disarm(self, task_id: str) -> None:
        timer = self._timers.pop(task_id, None)
        if timer is not None:
            timer.cancel()

    @property
    def armed(self) -> int:
        """How many deadlines this process waits for."""
        return len(self._timers)

    def _fire(self, armed: Armed) -> None:
        self._timers.pop(armed.task_id, None)
        run = asyncio.get_running_loop().create_task(self._run(armed))
        self._running.add(run)
        run.add_done_callback(self._running.discard)

    async def _run(self, armed: Armed) -> None:
        if self._resume is None:
            logger.warning(
                "task %s: its question's deadline %s passed; nothing runs the task on "
                "(no request handler bound)",
                armed.task_id,
                armed.asked.deadline,
            )
            return
        try:
            await self._resume(armed)
        except Exception as exc:  # the operator must hear of it; the task waits for its caller
            logger.error(
                "task %s: the turn after its question's deadline %s failed (%s); the task "
                "waits for its caller's next message",
                armed.task_id,
                armed.asked.deadline,
                type(exc).__name__,
            )

    async def close(self) -> None:
        """At shutdown: no more timers; the host's turns under way are let finish."""
        for timer in self._timers.values():
            timer.cancel()
        if self._timers:
            logger.warning(
                "%d task(s) waiting for an answer with a deadline lose their timer here at "
                "shutdown; another replica (cluster mode) or the next start arms it again",
                len(self._timers),
            )
        self._timers.clear()
        if self._running:
            await asyncio.wait(set(self._running), timeout=PARK_WAIT_S)


async def stored_park(load: Callable[[], Awaitable[Task | None]], armed: Armed) -> Task | None:
    """The stored task once its park on ``armed``'s question is saved; None if it moved on.

    The park is saved by the store's consumer a moment after the executor
    armed the timer, so a deadline of a few milliseconds may fire first: the
    task is read again until it is parked or has left the question.
    """
    loop = asyncio.get_running_loop()
    give_up = loop.time() + PARK_WAIT_S
    while True:
        task = await load()
        if task is None:
            return None
        asked = asked_in(task)
        if asked is not None:
            return task if asked == armed.asked else None
        if (
            task.status.state
            not in (
                TaskState.TASK_STATE_SUBMITTED,
                TaskState.TASK_STATE_WORKING,
            )
            or loop.time() > give_up
        ):
            return None
        await asyncio.sleep(_PARK_POLL_S)
