"""The executor's stop signal: why every running handler is to end now (a replica stopping).

A replica that stops (``SIGTERM``) lets running handlers finish within
``[server] shutdown_grace`` (:mod:`skillrack.serve.bindings.shutdown`); then
:meth:`StopSignal.stop` ends the rest as their deadline would,
``TASK_STATE_FAILED`` with the reason given, through each task's own event
path, so a stream of the task gets that terminal event before the process goes;
in cluster mode a task of a restartable skill is handed over instead
(:class:`HandedOver`): nothing is written, and a survivor runs it again.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from skillrack.errors import ConditionError, ErrorCode, SkillrackError


class HandedOver(SkillrackError):
    """A running task a stopping replica leaves, unended, for a survivor to run again.

    Raised instead of the stop's ``output_invalid`` for a restartable skill in
    cluster mode (:attr:`StopSignal.hands_over`): the executor writes nothing,
    the drain gives the task's lease up, and a surviving replica runs the
    task again (:mod:`skillrack.serve.execution.restarts`).
    """


class StopSignal:
    """A future on the running loop that :meth:`stop` resolves to the reason.

    ``count`` says how many handlers are running (the executor's own count).
    """

    def __init__(self, count: Callable[[], int]) -> None:
        self._future: asyncio.Future[str] | None = None
        self._count = count
        #: Whether a running task of this skill is handed over rather than failed at a stop
        #: (cluster mode, a restartable skill; set by ``build_server``).
        self.hands_over: Callable[[str], bool] = lambda skill_id: False

    @property
    def running(self) -> int:
        """How many handlers are running now."""
        return self._count()

    def future(self) -> asyncio.Future[str]:
        """What a running handler waits on beside itself (made anew on another loop)."""
        loop = asyncio.get_running_loop()
        if self._future is None or self._future.get_loop() is not loop:
            self._future = loop.create_future()
        return self._future

    async def wait(self, running: asyncio.Future[Any], timeout: float | None) -> bool:
        """True once ``running`` (a handler) is done; False at ``timeout`` or at a stop.

        If the waiting turn is cancelled, so is the handler.  A handler that needs
        no I/O ends in its first step: the handler's task takes it as soon as this
        one yields once, and nothing else is set up for it (no waiter, callbacks or
        timer of ``asyncio.wait``; timeouts are positive, so it is always in time).
        """
        try:
            await asyncio.sleep(0)
            if running.done():
                return True
            done, _ = await asyncio.wait(
                {running, self.future()}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED
            )
        except asyncio.CancelledError:  # the task was cancelled: so is its handler
            running.cancel()
            raise
        return running in done

    def check(self, skill_id: str = "") -> None:
        """Raise ``output_invalid`` with the stop's reason, once :meth:`stop` was called.

        :class:`HandedOver` instead for a task of ``skill_id`` that :attr:`hands_over`.
        """
        future = self.future()
        if future.done():
            if skill_id and self.hands_over(skill_id):
                raise HandedOver(f"task of {skill_id!r} handed over to another replica")
            raise ConditionError(ErrorCode.OUTPUT_INVALID, future.result())

    def stop(self, reason: str) -> None:
        """End every handler waiting on :meth:`future` with ``reason`` (once)."""
        future = self.future()
        if not future.done():
            future.set_result(reason)
