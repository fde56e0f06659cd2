"""The write-behind timer both grouping task stores share.

:class:`~skillrack.serve.stores.storage.SingleProcessTaskStore` (one process on
SQLite) and :class:`~skillrack.serve.stores.cluster.ClusterTaskStore` (cluster
mode) keep a save of an in-progress state in memory until the next commit,
which a save of a settled state makes at once.  :class:`WriteBehind` is the
bound on that wait: once something is pending it commits at most ``delay``
seconds later, in the background, logging (and retrying at the next arming)
a commit that failed, and it stops before the store's last commit at shutdown.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from skillrack.protocol.states import INTERRUPTED, TERMINAL

logger = logging.getLogger(__name__)

#: States a client may act on: a save of one commits before it returns.
SETTLED_STATES = TERMINAL | INTERRUPTED
#: How long an in-progress save may wait in memory before it is committed.
WRITE_BEHIND_S = 0.1


class WriteBehind:
    """Commits a store's pending saves ``delay`` seconds after :meth:`arm` (see the module)."""

    def __init__(
        self,
        commit: Callable[[], Awaitable[None]],
        pending: Callable[[], int],
        delay: float = WRITE_BEHIND_S,
    ) -> None:
        self.delay = delay
        self._commit = commit
        self._pending = pending
        self._timer: asyncio.TimerHandle | None = None
        self._background: set[asyncio.Task[None]] = set()
        self._closed = False

    def arm(self) -> None:
        """Commit within ``delay`` if anything is pending and no commit is scheduled already."""
        if self._timer is None and self._pending() and not self._closed:
            self._timer = asyncio.get_running_loop().call_later(self.delay, self._start)

    def _start(self) -> None:
        self._timer = None
        background = asyncio.get_running_loop().create_task(self._commit_logged())
        self._background.add(background)
        background.add_done_callback(self._background.discard)

    async def _commit_logged(self) -> None:
        try:
            await self._commit()
        except Exception as exc:  # kept pending; the next commit retries them
            logger.warning(
                "task store: %d task saves not yet written (%s); will retry",
                self._pending(),
                type(exc).__name__,
            )
            self.arm()

    async def close(self) -> None:
        """Schedule nothing more and wait for a background commit under way."""
        self._closed = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._background:
            await asyncio.gather(*self._background, return_exceptions=True)
