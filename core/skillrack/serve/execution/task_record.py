"""What the executor records in a task's metadata, and how the rest of the server reads it.

A task names its skill (so that CancelTask can be refused for a non-cancellable
skill before a2a-sdk touches the task, and a follow-up reaches the right base
skill) and who started it and when (follow-ups are accepted from the starter
only; the console lists it).  The keys are the camelCase ones A2A's data model
asks for (:mod:`skillrack.protocol.task_metadata`).
"""

from __future__ import annotations

from a2a.server.agent_execution import RequestContext
from a2a.types import Task, TaskState

from skillrack.protocol.clock import utc_now_millis
from skillrack.protocol.task_metadata import SKILL_KEY, STARTED_KEY
from skillrack.serve.execution.turn import caller_of
from skillrack.serve.security.caller import scheme_of

#: Task metadata key naming the skill, so that CancelTask can be refused for a
#: non-cancellable skill before a2a-sdk touches the task.
SKILL_METADATA_KEY = SKILL_KEY
#: Task metadata key: who started the task (identity and tenant, as authentication
#: established them, and the scheme where no tenant separates identities) and when,
#: for follow-ups and the operator console's task list.
STARTED_METADATA_KEY = STARTED_KEY

_SUBMITTED = TaskState.TASK_STATE_SUBMITTED


def skill_of(task: Task) -> str | None:
    """The skill a task invokes, as recorded when the task was created."""
    value = task.metadata.fields.get(SKILL_METADATA_KEY)
    return value.string_value if value is not None and value.string_value else None


def started_by(task: Task) -> tuple[str, str, str] | None:
    """Who started a task (identity, tenant, scheme), as recorded when it was created.

    ``scheme`` is :func:`~skillrack.serve.security.caller.scheme_of` the caller
    (``""`` with a tenant, or for a task recorded before schemes were).
    ``None`` when nothing was recorded.
    """
    value = task.metadata.fields.get(STARTED_METADATA_KEY)
    if value is None or not value.HasField("struct_value"):
        return None
    who = value.struct_value.fields
    if "identity" not in who:
        return None
    tenant = who["tenant"].string_value if "tenant" in who else ""
    scheme = who["scheme"].string_value if "scheme" in who else ""
    return who["identity"].string_value, tenant, scheme


def new_task(context: RequestContext, skill: str | None) -> Task:
    """The Task a turn that starts a task creates: it names the skill and who started it."""
    assert context.message is not None
    # Task(status=TaskStatus(state=SUBMITTED), history=[message]), set in place: no
    # TaskStatus built to be copied, no state looked up on the enum wrapper.
    task = Task(id=context.task_id, context_id=context.context_id)
    task.status.state = _SUBMITTED
    task.history.append(context.message)
    fields = task.metadata.fields
    if skill:
        fields[SKILL_METADATA_KEY].string_value = skill
    caller = caller_of(context)
    started = utc_now_millis()
    if type(caller.identity) is str and type(caller.tenant) is str:
        # Set in place: what Struct.update writes for these strings, without its Python walk.
        who = fields[STARTED_METADATA_KEY].struct_value.fields
        who["identity"].string_value = caller.identity
        who["tenant"].string_value = caller.tenant
        who["at"].string_value = started
        if scheme := scheme_of(caller):
            who["scheme"].string_value = scheme
    else:  # an authentication plugin's unusual Caller: the general conversion
        task.metadata.update(
            {
                STARTED_METADATA_KEY: {
                    "identity": caller.identity,
                    "tenant": caller.tenant,
                    "at": started,
                    "scheme": scheme_of(caller),
                }
            }
        )
    return task


__all__ = ["SKILL_METADATA_KEY", "STARTED_METADATA_KEY", "new_task", "skill_of", "started_by"]
