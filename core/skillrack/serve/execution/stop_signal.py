"""The executor's stop signal: why every running handler is to end now (a replica stopping).

A replica that stops (``SIGTERM``) lets running handlers finish within
``[server] shutdown_grace`` (:mod:`skillrack.serve.bindings.shutdown`); then
:meth:`StopSignal.stop` ends the rest as their deadline would,
``TASK_STATE_FAILED`` with the reason given, through each task's own event
path, so a stream of the task gets that terminal event before the process goes.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from skillrack.errors import ConditionError, ErrorCode


class StopSignal:
    """A future on the running loop that :meth:`stop` resolves to the reason.

    ``count`` says how many handlers are running (the executor's own count).
    """

    def __init__(self, count: Callable[[], int]) -> None:
        self._future: asyncio.Future[str] | None = None
        self._count = count

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

        If the waiting turn is cancelled, so is the handler.
        """
        try:
            done, _ = await asyncio.wait(
                {running, self.future()}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED
            )
        except asyncio.CancelledError:  # the task was cancelled: so is its handler
            running.cancel()
            raise
        return running in done

    def check(self) -> None:
        """Raise ``output_invalid`` with the stop's reason, once :meth:`stop` was called."""
        future = self.future()
        if future.done():
            raise ConditionError(ErrorCode.OUTPUT_INVALID, future.result())

    def stop(self, reason: str) -> None:
        """End every handler waiting on :meth:`future` with ``reason`` (once)."""
        future = self.future()
        if not future.done():
            future.set_result(reason)
