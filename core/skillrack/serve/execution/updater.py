"""a2a-sdk's ``TaskUpdater`` with a status update that reads the clock once, directly.

Every turn sends at least two status updates (``WORKING``, then the end).
a2a-sdk's ``TaskUpdater.update_status`` timestamps each with
``Timestamp.FromDatetime(datetime.now(timezone.utc))``: a timetuple, a
``calendar.timegm`` and protobuf's pure-Python conversion, about 2% of an
invocation's CPU.  :class:`TurnUpdater` writes the same value (the system
clock, whole microseconds, as ``datetime.now`` reads it) from
``time.time_ns()``, and builds the same ``TaskStatusUpdateEvent``; the rest
(the lock that orders concurrent updates, the refusal after a final state)
is the same as a2a-sdk's, kept in attributes of its own (a2a-sdk's are
private), and so is the parsing of a ``timestamp`` a caller passes.
"""

from __future__ import annotations

import asyncio
import time
from datetime import datetime
from typing import Any

from a2a.server.events import EventQueue
from a2a.server.tasks import TaskUpdater
from a2a.types import Message, TaskState, TaskStatus, TaskStatusUpdateEvent
from google.protobuf.timestamp_pb2 import Timestamp

WORKING = TaskState.TASK_STATE_WORKING
COMPLETED = TaskState.TASK_STATE_COMPLETED
#: The states after which a2a-sdk's updater refuses another status update.
FINAL_STATES = frozenset(
    {
        TaskState.TASK_STATE_COMPLETED,
        TaskState.TASK_STATE_CANCELED,
        TaskState.TASK_STATE_FAILED,
        TaskState.TASK_STATE_REJECTED,
    }
)


def now() -> Timestamp:
    """``Timestamp().FromDatetime(datetime.now(timezone.utc))``, from one clock read."""
    nanoseconds = time.time_ns()
    seconds, rest = divmod(nanoseconds, 1_000_000_000)
    return Timestamp(seconds=seconds, nanos=rest - rest % 1000)  # datetime keeps microseconds


class TurnUpdater(TaskUpdater):
    """``TaskUpdater``; ``update_status`` without a given timestamp built from the clock.

    ``start_work`` and ``complete``, a turn's two usual updates, name their state by
    a module constant instead of looking it up on the enum wrapper each time.
    """

    def __init__(self, event_queue: EventQueue, task_id: str, context_id: str) -> None:
        super().__init__(event_queue, task_id, context_id)
        self._status_lock = asyncio.Lock()
        self._ended = False

    async def update_status(
        self,
        state: TaskState,
        message: Message | None = None,
        timestamp: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> None:
        """a2a-sdk's ``update_status``, step for step."""
        async with self._status_lock:
            if self._ended:
                raise RuntimeError(f"Task {self.task_id} is already in a terminal state.")
            if timestamp:  # parsed as a2a-sdk parses it
                stamp = Timestamp()
                stamp.FromDatetime(datetime.fromisoformat(timestamp.replace("Z", "+00:00")))
            else:
                stamp = now()
            status = TaskStatus(state=state, timestamp=stamp)
            if message:
                status.message.CopyFrom(message)
            event = TaskStatusUpdateEvent(
                task_id=self.task_id, context_id=self.context_id, metadata=metadata, status=status
            )
            if state in FINAL_STATES:
                self._ended = True
            await self.event_queue.enqueue_event(event)

    @property
    def ended(self) -> bool:
        """Whether a final state was sent: the task cannot be failed any more."""
        return self._ended

    async def start_work(self, message: Message | None = None) -> None:
        """Marks the task as working (a2a-sdk's ``start_work``)."""
        await self.update_status(WORKING, message=message)

    async def complete(self, message: Message | None = None) -> None:
        """Marks the task as completed (a2a-sdk's ``complete``)."""
        await self.update_status(COMPLETED, message=message)
