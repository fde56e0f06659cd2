"""A2A task states by what they mean to a caller, shared by the client and the task store."""

from __future__ import annotations

from typing import Final

from a2a.types import TaskState

#: States after which a task never changes again.
TERMINAL: Final = frozenset(
    {
        TaskState.TASK_STATE_COMPLETED,
        TaskState.TASK_STATE_FAILED,
        TaskState.TASK_STATE_CANCELED,
        TaskState.TASK_STATE_REJECTED,
    }
)
#: States in which a task waits for its caller (input, authentication).
INTERRUPTED: Final = frozenset(
    {TaskState.TASK_STATE_INPUT_REQUIRED, TaskState.TASK_STATE_AUTH_REQUIRED}
)
