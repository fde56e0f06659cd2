"""A follow-up turn of a task: the original request and the caller's answers, from its history.

Under the replay model (:mod:`skillrack.serve.execution.skill_context`) nothing of a task
lives in the process between turns: when a follow-up Message arrives (on any
replica, even after a restart) the request is parsed again from the task's
first user Message, and every later user Message is an answer to one of the
handler's questions, in order.  A user Message that follows an approval wait
is only a nudge to look again, not an answer, so it is not counted.  The
host's own Message saying a question's deadline passed
(:mod:`skillrack.serve.execution.input_deadline`) makes that question's
answer :class:`~skillrack.serve.execution.input_deadline.DeadlinePassed`,
whether no answer came or one came too late.
"""

from __future__ import annotations

from typing import Any

from a2a.server.tasks import TaskUpdater
from a2a.types import Message, Role, Task, TaskState

from skillrack.errors import ConditionError, ErrorCode
from skillrack.protocol.messages import (
    APPROVAL_KEY,
    SkillRequest,
    follow_up_value,
    parse_request,
)
from skillrack.protocol.values import from_value
from skillrack.serve.execution.input_deadline import (
    DeadlinePassed,
    InputDeadlines,
    asked_in,
    deadline_message,
    passed,
    passed_in,
)


async def replay_turn(
    task: Task, message: Message, deadlines: InputDeadlines, updater: TaskUpdater
) -> tuple[SkillRequest, list[Any]] | None:
    """:func:`replay` for the executor's follow-up turn, with a question's deadline kept.

    ``None`` when there is nothing to run: the host's turn after a deadline
    found the question answered meanwhile.  A caller's answer to a question
    whose deadline passed is followed by the host's Message saying so (sent
    through ``updater``), and counts as no answer.
    """
    asked = asked_in(task)
    host_said = passed_in(message)
    if host_said is not None and host_said != asked:
        return None  # the host's turn came after the question moved on
    deadlines.disarm(task.id)
    if host_said is None and asked is not None and passed(asked.deadline):
        late = deadline_message(task.id, task.context_id, asked)
        await updater.update_status(TaskState.TASK_STATE_WORKING, message=late)
        return replay(task, message, late)
    return replay(task, message)


def replay(task: Task, message: Message, *after: Message) -> tuple[SkillRequest, list[Any]]:
    """The request ``task`` started with, and the answers so far (``message`` is the newest).

    ``after``: Messages the executor adds to the task on this turn, after ``message``.
    """
    messages = _in_order(task, message, *after)
    user = _from_caller(messages)
    request = parse_request(user[0])
    if request.is_describe:
        raise ConditionError(ErrorCode.INPUT_INVALID, "describe_skill takes no follow-up")
    answers: list[Any] = []
    said = {id(each) for each in user[1:]}
    for each in messages:
        late = passed_in(each)
        if late is not None:
            if late.question < len(answers):
                answers[late.question] = DeadlinePassed(late.deadline)
            elif late.question == len(answers):
                answers.append(DeadlinePassed(late.deadline))
        elif id(each) in said:
            answers.append(follow_up_value(each))
    return request, answers


def user_messages(task: Task, message: Message) -> list[Message]:
    """The caller's Messages of ``task``, oldest first, ``message`` last; nudges left out."""
    return _from_caller(_in_order(task, message))


def _in_order(task: Task, *newest: Message) -> list[Message]:
    """Every Message of ``task``, oldest first, then ``newest`` not already among them."""
    messages: list[Message] = list(task.history)
    known = {m.message_id for m in messages}
    for extra in (task.status.message, *newest):
        if extra.message_id and extra.message_id not in known:
            messages.append(extra)
            known.add(extra.message_id)
    return messages


def _from_caller(messages: list[Message]) -> list[Message]:
    user: list[Message] = []
    nudge = False
    for each in messages:
        if each.role == Role.ROLE_AGENT:
            nudge = _is_approval_wait(each)
        elif each.role == Role.ROLE_USER:
            if not nudge or not user:
                user.append(each)
            nudge = False
    return user


def _is_approval_wait(message: Message) -> bool:
    if len(message.parts) != 1 or not message.parts[0].HasField("data"):
        return False
    value = from_value(message.parts[0].data)
    return isinstance(value, dict) and APPROVAL_KEY in value
