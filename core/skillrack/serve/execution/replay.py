"""A follow-up turn of a task: the original request and the caller's answers, from its history.

Under the replay model (:mod:`skillrack.serve.execution.skill_context`) nothing of a task
lives in the process between turns: when a follow-up Message arrives (on any
replica, even after a restart) the request is parsed again from the task's
first user Message, and every later user Message is an answer to one of the
handler's questions, in order.  A user Message that follows an approval wait
is only a nudge to look again, not an answer, so it is not counted.
"""

from __future__ import annotations

from typing import Any

from a2a.types import Message, Role, Task

from skillrack.errors import ConditionError, ErrorCode
from skillrack.protocol.messages import (
    APPROVAL_KEY,
    SkillRequest,
    follow_up_value,
    parse_request,
)
from skillrack.protocol.values import from_value


def replay(task: Task, message: Message) -> tuple[SkillRequest, list[Any]]:
    """The request ``task`` started with, and the answers so far (``message`` is the newest)."""
    user = user_messages(task, message)
    request = parse_request(user[0])
    if request.is_describe:
        raise ConditionError(ErrorCode.INPUT_INVALID, "describe_skill takes no follow-up")
    return request, [follow_up_value(m) for m in user[1:]]


def user_messages(task: Task, message: Message) -> list[Message]:
    """The caller's Messages of ``task``, oldest first, ``message`` last; nudges left out."""
    messages: list[Message] = list(task.history)
    known = {m.message_id for m in messages}
    for extra in (task.status.message, message):
        if extra.message_id and extra.message_id not in known:
            messages.append(extra)
            known.add(extra.message_id)
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
