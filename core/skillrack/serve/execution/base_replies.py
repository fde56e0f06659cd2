"""The A2A side of a base-A2A skill's answers: one direct Message, or a Task's events.

A new exchange routed to a base skill has no Task yet: the Task is sent the
first time the turn needs one (a status message, an Artifact, a question, an
error, the end), so that a handler that answers with
:meth:`~skillrack.serve.execution.base_skill_context.BaseSkillContext.reply` sends one agent
Message and nothing else, which a2a-sdk returns to the caller as the result of
SendMessage (or the one event of its stream).  Every status message and
Artifact is counted against the task's
:class:`~skillrack.serve.execution.outputs.OutputBudget` before it is sent.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Awaitable, Callable, Sequence

from a2a.server.tasks import TaskUpdater
from a2a.types import (
    ContentTypeNotSupportedError,
    InternalError,
    InvalidParamsError,
    InvalidRequestError,
    Message,
    Part,
    Role,
    TaskState,
    UnsupportedOperationError,
)
from a2a.utils.errors import A2AError

from skillrack.errors import (
    BaseSkillUsageError,
    ConditionError,
    ErrorCode,
    ProtocolCode,
    ProtocolError,
)
from skillrack.protocol.parts import PartLike, to_parts
from skillrack.protocol.values import from_value
from skillrack.serve.execution.outputs import OutputBudget, check_safe_numbers

logger = logging.getLogger(__name__)


class TaskStart:
    """Sends a new task's first event once, when the turn first needs the task.

    Nothing is pending unless :meth:`defer` was called: a schema skill's
    turn sends its task at once and never defers it.
    """

    def __init__(self) -> None:
        self._send: Callable[[], Awaitable[None]] | None = None

    def defer(self, send: Callable[[], Awaitable[None]]) -> None:
        self._send = send

    @property
    def pending(self) -> bool:
        """True while the task has not been sent (a direct reply is still possible)."""
        return self._send is not None

    async def ensure(self) -> None:
        send, self._send = self._send, None
        if send is not None:
            await send()


class BaseReplies:
    """What one turn of a base skill sends, through its ``TaskUpdater`` or as one Message."""

    def __init__(
        self,
        updater: TaskUpdater,
        start: TaskStart,
        budget: OutputBudget,
        send_message: Callable[[Message], Awaitable[None]],
    ) -> None:
        self._updater = updater
        self._start = start
        self._budget = budget
        self._send_message = send_message
        self._working = False
        #: Whether the turn answered with a direct Message (then it sends nothing more).
        self.replied = False
        #: The state ``set_state`` left the task in when it is no longer working (the turn
        #: is over: settled, or waiting for the caller), else ``None``.
        self.left_in: TaskState | None = None

    def _parts(self, parts: Sequence[PartLike], what: str) -> list[Part]:
        """The parts as a2a-sdk Parts, counted against the budget (``output_invalid`` if bad)."""
        self._check_not_replied()
        self._budget.check_open()
        try:
            converted = to_parts(parts)
        except (TypeError, ValueError) as exc:
            raise ConditionError(
                ErrorCode.OUTPUT_INVALID, f"{self._budget.skill_id!r} sent a bad {what}: {exc}"
            ) from None
        for part in converted:
            if part.HasField("data"):
                check_safe_numbers(from_value(part.data), what)
        self._budget.admit(sum(part.ByteSize() for part in converted))
        return converted

    def _check_not_replied(self) -> None:
        if self.replied:
            raise ConditionError(
                ErrorCode.OUTPUT_INVALID,
                f"{self._budget.skill_id!r} already answered with a Message",
            )
        if self.left_in is not None:
            raise ConditionError(
                ErrorCode.OUTPUT_INVALID,
                f"{self._budget.skill_id!r} already put its task in "
                f"{TaskState.Name(self.left_in)}; return after set_state() instead of sending more",
            )

    @property
    def sent_anything(self) -> bool:
        """Whether the caller has been sent something (a task, a Message) this turn."""
        return self.replied or not self._start.pending

    async def _begin(self) -> None:
        """The task exists and is worked on (sent once, before the first event that needs it)."""
        await self._start.ensure()
        if not self._working:
            self._working = True
            await self._updater.start_work()

    async def reply(self, parts: Sequence[PartLike]) -> None:
        if not self._start.pending:
            raise ConditionError(
                ErrorCode.OUTPUT_INVALID,
                f"{self._budget.skill_id!r} replied with a Message after its task began; "
                "return the parts instead to end the task with them",
            )
        converted = self._parts(parts, "reply")
        self.replied = True
        await self._send_message(
            Message(
                message_id=str(uuid.uuid4()),
                role=Role.ROLE_AGENT,
                context_id=self._updater.context_id,
                parts=converted,
            )
        )

    async def status(self, parts: Sequence[PartLike]) -> None:
        converted = self._parts(parts, "status message")
        await self._begin()
        await self._updater.update_status(
            TaskState.TASK_STATE_WORKING, message=self._updater.new_agent_message(converted)
        )

    async def artifact(
        self,
        parts: Sequence[PartLike],
        *,
        name: str | None,
        artifact_id: str | None,
        append: bool,
        last_chunk: bool | None,
    ) -> str:
        converted = self._parts(parts, "artifact")
        chosen = artifact_id or str(uuid.uuid4())
        await self._begin()
        await self._updater.add_artifact(
            converted, artifact_id=chosen, name=name, append=append, last_chunk=last_chunk
        )
        return chosen

    async def ask(self, parts: Sequence[PartLike]) -> None:
        """Park the task in ``TASK_STATE_INPUT_REQUIRED``, ``parts`` (if any) its question."""
        converted = self._parts(parts, "question") if parts else []
        await self._begin()
        await self._updater.requires_input(
            self._updater.new_agent_message(converted) if converted else None
        )

    async def set_state(self, state: str, parts: Sequence[PartLike]) -> None:
        """Move the task to ``state`` directly, ``parts`` (if any) its status message."""
        target = _STATES.get(state)
        if target is None:
            raise BaseSkillUsageError(
                f"base skill {self._budget.skill_id!r}: set_state({state!r}) is not a task "
                f"state; use one of {', '.join(_STATES)}"
            )
        converted = self._parts(parts, "status message") if parts else []
        message = self._updater.new_agent_message(converted) if converted else None
        await self._start.ensure()
        if target == TaskState.TASK_STATE_WORKING:
            self._working = True
            await self._updater.update_status(target, message=message)
            return
        self.left_in = target
        await self._updater.update_status(target, message=message)

    async def end(self, result: object, where: str) -> None:
        """The handler returned ``result``: complete the task with it, unless the turn is over.

        After a direct reply or ``set_state`` the caller has its answer; parts
        returned then are dropped, and ``where`` (task, skill, plugin) says so
        in the log.
        """
        parts = returned_parts(result)
        if self.left_in is None and not self.replied:
            await self.complete(parts)
        elif parts and self.left_in is not None:
            logger.warning(
                "%s returned parts after set_state(); they were dropped (send them with it)", where
            )

    async def complete(self, parts: Sequence[PartLike]) -> None:
        """End the task ``TASK_STATE_COMPLETED``, with ``parts`` as its last message if any."""
        converted = self._parts(parts, "final message") if parts else []
        await self._begin()
        await self._updater.complete(
            self._updater.new_agent_message(converted) if converted else None
        )


#: ``set_state`` names -> A2A states.
_STATES = {
    "working": TaskState.TASK_STATE_WORKING,
    "input-required": TaskState.TASK_STATE_INPUT_REQUIRED,
    "auth-required": TaskState.TASK_STATE_AUTH_REQUIRED,
    "completed": TaskState.TASK_STATE_COMPLETED,
    "failed": TaskState.TASK_STATE_FAILED,
    "rejected": TaskState.TASK_STATE_REJECTED,
    "canceled": TaskState.TASK_STATE_CANCELED,
}


def returned_parts(value: object) -> list[PartLike]:
    """A handler's return value as parts: ``None`` is none, a ``str`` or a part is one."""
    if value is None:
        return []
    if isinstance(value, Sequence) and not isinstance(value, str | bytes):
        return list(value)  # any sequence of parts (a list, a tuple, a deque)
    return [value]  # type: ignore[list-item]  # checked when converted


#: Each protocol error a base skill may raise -> a2a-sdk's, which every binding renders.
_A2A_ERRORS: dict[ProtocolCode, type[A2AError]] = {
    ProtocolCode.INVALID_PARAMS: InvalidParamsError,
    ProtocolCode.INVALID_REQUEST: InvalidRequestError,
    ProtocolCode.UNSUPPORTED_OPERATION: UnsupportedOperationError,
    ProtocolCode.CONTENT_TYPE_NOT_SUPPORTED: ContentTypeNotSupportedError,
    ProtocolCode.INTERNAL_ERROR: InternalError,
}


def a2a_error(error: ProtocolError) -> A2AError:
    """a2a-sdk's error for a base skill's :class:`~skillrack.errors.ProtocolError`."""
    return _A2A_ERRORS[error.code](error.message)
