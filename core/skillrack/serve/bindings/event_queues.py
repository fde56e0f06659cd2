"""a2a-sdk's event queues on ``asyncio.Queue``, as a2a-sdk itself has them on Python 3.13.

Every event of a task passes through several a2a-sdk queues: the agent's
(:class:`EventQueueSource` and its sink, read by the task's consumer), the
subscribers' (one sink per stream), and the task's request queue.  Python 3.13
gave ``asyncio.Queue`` a ``shutdown()``, which those queues need; before it,
a2a-sdk makes them with ``culsans`` (``a2a.utils._async_queue_compat``), a
queue that threads may share, whose every ``put`` and ``get`` takes a lock, a
condition of ``aiologic`` and a checkpoint that yields to the event loop once
more.  Nothing of a2a-sdk's server shares these queues with a thread (it uses
the async side only), so that safety costs without protecting anything: with
10,000 open streams it was about a sixth of the server's CPU per delivered
event (``benchmarks/streams.py`` under py-spy), and each extra turn of the loop
lengthens the time from publish to delivery.

:class:`ClosableQueue` is ``asyncio.Queue`` with Python 3.13's ``shutdown``
semantics (``shutdown(immediate=False)``: puts refused, gets drain what is
left, then refused; ``immediate=True``: what is left is dropped and counted
done, so ``join()`` returns; waiting puts and gets are woken to be refused),
raising the ``QueueShutDown`` a2a-sdk catches.  :func:`use_asyncio_queues`
makes a2a-sdk build its queues with it; ``skillrack serve`` calls it for the
process it owns (a library embedding skillrack keeps a2a-sdk as it is).  On
Python 3.13 and later a2a-sdk already uses ``asyncio.Queue`` and nothing is
changed.
"""

from __future__ import annotations

import asyncio
import sys
from collections import deque
from typing import Any, TypeVar

from a2a.utils._async_queue_compat import QueueShutDown

T = TypeVar("T")


class ClosableQueue(asyncio.Queue[T]):
    """``asyncio.Queue`` with ``shutdown()``, refusing with a2a-sdk's ``QueueShutDown``."""

    def __init__(self, maxsize: int = 0) -> None:
        super().__init__(maxsize)
        self._is_shut_down = False

    async def put(self, item: T) -> None:
        """Wait for room, then put ``item``; refused once the queue is shut down."""
        while self.full() and not self._is_shut_down:
            await self._wait(self._putters)  # type: ignore[attr-defined]
        self.put_nowait(item)

    def put_nowait(self, item: T) -> None:
        if self._is_shut_down:
            raise QueueShutDown
        super().put_nowait(item)

    async def get(self) -> T:
        """Wait for an item; once shut down, what is left, then refused."""
        while self.empty() and not self._is_shut_down:
            await self._wait(self._getters)  # type: ignore[attr-defined]
        return self.get_nowait()

    def get_nowait(self) -> T:
        if self._is_shut_down and self.empty():
            raise QueueShutDown
        return super().get_nowait()

    def shutdown(self, immediate: bool = False) -> None:
        """Refuse puts from now on; ``immediate``: drop what is left (counted done) too.

        Every waiting put and get is woken: it finds the queue shut down (or,
        for a get, an item still left) and acts on it.
        """
        self._is_shut_down = True
        if immediate:
            while not self.empty():
                self._get()  # asyncio.Queue's storage hook
                if self._unfinished_tasks > 0:  # type: ignore[attr-defined]
                    self._unfinished_tasks -= 1  # type: ignore[attr-defined]
            if self._unfinished_tasks == 0:  # type: ignore[attr-defined]
                self._finished.set()  # type: ignore[attr-defined]
        for waiters in (self._getters, self._putters):  # type: ignore[attr-defined]
            while waiters:
                waiter = waiters.popleft()
                if not waiter.done():
                    waiter.set_result(None)

    async def _wait(self, waiters: deque[asyncio.Future[None]]) -> None:
        """Wait among ``waiters`` (asyncio.Queue's ``_getters`` or ``_putters``) to be woken.

        A cancelled waiter that had been woken passes its turn to the next one,
        as ``asyncio.Queue`` does, so no wake-up is lost.
        """
        waiter: asyncio.Future[None] = self._get_loop().create_future()  # type: ignore[attr-defined]
        waiters.append(waiter)
        try:
            await waiter
        except BaseException:
            waiter.cancel()
            try:
                waiters.remove(waiter)
            except ValueError:  # woken already: the turn goes to the next waiter
                if not waiter.cancelled():
                    self._wakeup_next(waiters)  # type: ignore[attr-defined]
            raise


def create_queue(maxsize: int = 0) -> ClosableQueue[Any]:
    """``a2a.utils._async_queue_compat.create_async_queue``'s replacement."""
    return ClosableQueue(maxsize)


def use_asyncio_queues() -> bool:
    """Make a2a-sdk build its event queues as :class:`ClosableQueue`; whether anything changed.

    Python 3.13 and later: nothing to change (a2a-sdk's queues are ``asyncio.Queue``).
    """
    if sys.version_info >= (3, 13):
        return False
    from a2a.server.agent_execution import active_task
    from a2a.server.events import event_queue, event_queue_v2
    from a2a.utils import _async_queue_compat

    # Each bound the factory at import (``from ... import create_async_queue``).
    for module in (_async_queue_compat, event_queue, event_queue_v2, active_task):
        module.create_async_queue = create_queue  # type: ignore[attr-defined]
    return True
