"""Confirmed changes (RFC 6241 section 8.4): what to undo, kept between a task's turns.

A change skill called with ``confirm_within`` applies its change, registers
how to undo it here, and asks its caller for a confirmation with the host's
deadline (``context.request_input(..., deadline=...)``), which parks the task
in ``input-required``.  Under the host's replay model the handler's run ends
there; the next turn (the caller's answer, or the host's own turn at the
deadline when nobody answered) runs the handler again from the start and finds
the entry here, keyed by the task id: it confirms the change or rolls it back,
and ends the task saying which.

The entry also holds a timer of its own for the same deadline, a backstop:
should the host's turn not run (its store failing), the change is undone all
the same and the task's next turn reports it.  Rolling back twice is once
(:meth:`Confirmations.roll_back` is locked and idempotent).

The entries live in the agent's process: an agent restarted while a change
waits for its confirmation loses them and the change stays applied
(docs/linux-lab.md, known limits).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

logger = logging.getLogger("skillrack_linux")

PENDING, CONFIRMED, ROLLED_BACK = "pending", "confirmed", "rolled_back"
#: How long a finished entry is kept for the task's last follow-up to read it.
KEEP_FINISHED_S = 3600.0


@dataclass
class Pending:
    """One applied change that waits for its caller's confirmation."""

    task_id: str
    owner: tuple[str, str]
    #: When the change is rolled back unless confirmed (the host's question deadline too).
    deadline: dt.datetime
    confirm_by: str
    restore: Callable[[], Awaitable[Any]]
    #: The applied change's result, which the follow-up turn completes.
    result: dict[str, Any] = field(default_factory=dict)
    state: str = PENDING
    restored: Any = None
    failure: str | None = None
    finished_at: float | None = None
    handle: asyncio.TimerHandle | None = None
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)


class Confirmations:
    """The changes of one agent that wait for a confirmation, by task id."""

    def __init__(self) -> None:
        self._entries: dict[str, Pending] = {}
        self._running: set[asyncio.Task[Any]] = set()

    def get(self, task_id: str) -> Pending | None:
        self._forget_old()
        return self._entries.get(task_id)

    def schedule(
        self,
        task_id: str,
        owner: tuple[str, str],
        deadline: dt.datetime,
        confirm_by: str,
        restore: Callable[[], Awaitable[Any]],
        result: dict[str, Any],
    ) -> Pending:
        """Undo the change with ``restore`` at ``deadline`` unless it is confirmed first."""
        pending = Pending(task_id, owner, deadline, confirm_by, restore, result)
        loop = asyncio.get_running_loop()
        seconds = (deadline - dt.datetime.now(dt.UTC)).total_seconds()
        pending.handle = loop.call_later(max(seconds, 0.0), self._expire, pending)
        self._entries[task_id] = pending
        return pending

    async def confirm(self, pending: Pending) -> bool:
        """Keep the change; False when it was rolled back already."""
        async with pending.lock:
            if pending.state != PENDING:
                return pending.state == CONFIRMED
            self._cancel_timer(pending)
            pending.state, pending.finished_at = CONFIRMED, time.monotonic()
            return True

    async def roll_back(self, pending: Pending) -> None:
        """Undo the change now (the deadline passed, or the caller declined it)."""
        async with pending.lock:
            if pending.state != PENDING:
                return
            self._cancel_timer(pending)
            try:
                pending.restored = await pending.restore()
            except Exception as exc:  # the operator must hear of it; the caller is told too
                pending.failure = type(exc).__name__
                logger.error(
                    "skillrack-linux: task %s: the rollback failed (%s); the change may "
                    "still be applied",
                    pending.task_id,
                    type(exc).__name__,
                )
            pending.state, pending.finished_at = ROLLED_BACK, time.monotonic()
            logger.warning(
                "skillrack-linux: task %s: not confirmed by %s; rolled back",
                pending.task_id,
                pending.confirm_by,
            )

    def _expire(self, pending: Pending) -> None:
        task = asyncio.get_running_loop().create_task(self.roll_back(pending))
        self._running.add(task)
        task.add_done_callback(self._running.discard)

    @staticmethod
    def _cancel_timer(pending: Pending) -> None:
        if pending.handle is not None:
            pending.handle.cancel()
            pending.handle = None

    def _forget_old(self) -> None:
        now = time.monotonic()
        for task_id, entry in list(self._entries.items()):
            if entry.finished_at is not None and now - entry.finished_at > KEEP_FINISHED_S:
                del self._entries[task_id]
