"""Tasks a stopped process left in progress, settled when the next one starts.

A task is run by the process that accepted it; nothing resumes a handler
after that process dies (SIGKILL, a crash, a power loss).  Left alone, such a
task would answer ``TASK_STATE_WORKING`` to every ``GetTask`` for ever, and a
client polling it would wait for ever.  So when ``skillrack serve`` starts on
a store only it writes (one process on SQLite), it fails every task still
submitted or working, with the draft's error object in the status message,
as a handler that failed before producing a result is failed
(``output_invalid``), unless its skill is restartable: then it is run
again (:mod:`skillrack.serve.execution.restarts` decides, with
:func:`fail`).  Tasks waiting for input are left as they are: a new process
can take the answer.

Cluster mode (PostgreSQL, ``--workers``) does not do this at start-up:
another replica may be running those tasks right now.  There a task's lease
says who runs it (:mod:`skillrack.serve.stores.leases`), and a surviving
replica ends the tasks of one whose leases expired with
:func:`fail_orphaned`, naming the lost replica.
"""

from __future__ import annotations

import uuid

from a2a.types import Message, Role, Task, TaskState
from google.protobuf.timestamp_pb2 import Timestamp

from skillrack.errors import ConditionError, ErrorCode
from skillrack.protocol.values import data_part

INTERRUPTED = (
    "the agent stopped while this task was running, so the skill did not finish; "
    "send the request again"
)


def fail_interrupted(task: Task) -> None:
    """Give ``task`` a FAILED status whose message carries the draft's error object."""
    fail(task, INTERRUPTED)


def orphaned(replica: str) -> str:
    """The error message of a task whose replica stopped renewing its lease."""
    return (
        f"replica {replica} stopped while this task was running (its task lease expired), "
        "so the skill did not finish; send the request again"
    )


def fail_orphaned(task: Task, replica: str) -> None:
    """Like :func:`fail_interrupted`, naming the replica that was running ``task``."""
    fail(task, orphaned(replica))


def fail(task: Task, reason: str) -> None:
    """Give ``task`` a FAILED status whose message carries ``reason`` as the error object."""
    error = ConditionError(ErrorCode.OUTPUT_INVALID, reason)
    if task.status.HasField("message"):
        task.history.append(task.status.message)
    now = Timestamp()
    now.GetCurrentTime()
    task.status.Clear()
    task.status.state = TaskState.TASK_STATE_FAILED
    task.status.timestamp.CopyFrom(now)
    task.status.message.CopyFrom(
        Message(
            role=Role.ROLE_AGENT,
            task_id=task.id,
            context_id=task.context_id,
            message_id=str(uuid.uuid4()),
            parts=[data_part(error.to_error_object())],
        )
    )
