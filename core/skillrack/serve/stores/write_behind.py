"""The write-behind commit loop both grouping task stores share.

:class:`~skillrack.serve.stores.storage.SingleProcessTaskStore` (one process on
SQLite) and :class:`~skillrack.serve.stores.cluster.ClusterTaskStore` (cluster
mode) keep a save of an in-progress state in memory until the next commit,
which a save of a settled state makes at once.  :class:`WriteBehind` holds
those saves and commits them: one commit at a time, every pending save in one
batch, the batch put back pending when its write fails, and at most ``delay``
seconds after a save in the background (logging, and retrying at the next
arming, a commit that failed).  At shutdown it stops the timer and makes the
store's last commit.  What a batch is and how it is written is the store's:
the ``write`` and ``keep`` functions it gives.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

from skillrack.protocol.states import INTERRUPTED, TERMINAL

logger = logging.getLogger(__name__)

#: States a client may act on: a save of one commits before it returns.
SETTLED_STATES = TERMINAL | INTERRUPTED
#: How long an in-progress save may wait in memory before it is committed.
WRITE_BEHIND_S = 0.1

K = TypeVar("K")
S = TypeVar("S")


class WriteBehind(Generic[K, S]):
    """A store's saves not yet committed, by key, and the loop that commits them.

    ``write(batch)`` writes a batch in one transaction (raising leaves it
    pending); ``keep(failed, newer)`` says what stays pending for a key whose
    write failed, given the save made meanwhile, if any (None: nothing).
    ``committed(batch)``, if given, runs once a batch is written and no longer
    counts as being written.
    """

    def __init__(
        self,
        write: Callable[[dict[K, S]], Awaitable[None]],
        keep: Callable[[S, S | None], S | None],
        *,
        committed: Callable[[dict[K, S]], None] | None = None,
        delay: float = WRITE_BEHIND_S,
    ) -> None:
        self.delay = delay
        #: Saved, waiting for the next commit: the latest save of each key.
        self.pending: dict[K, S] = {}
        #: The saves the commit under way is writing.
        self.writing: dict[K, S] = {}
        #: One commit at a time, so commits land in the order their saves were made.
        self.lock = asyncio.Lock()
        self._write = write
        self._keep = keep
        self._committed = committed
        self._timer: asyncio.TimerHandle | None = None
        self._background: set[asyncio.Task[None]] = set()
        self._closed = False

    def uncommitted(self, key: K) -> bool:
        """Whether ``key`` has a save waiting or being written."""
        return key in self.pending or key in self.writing

    @property
    def count(self) -> int:
        """How many keys have saves not yet committed (waiting, or being written)."""
        return len(self.pending.keys() | self.writing.keys())

    async def commit(self) -> None:
        """Write every pending save in one batch (a no-op when none is pending).

        A caller that finds another commit under way waits for it, then
        writes what is still pending: its own save either went out with that
        commit or goes out with this one.  If the write fails, ``keep`` puts
        the saves back and the error propagates.
        """
        async with self.lock:
            if not self.pending:
                return
            batch, self.pending = self.pending, {}
            self.writing = batch
            try:
                await self._write(batch)
            except BaseException:
                for key, failed in batch.items():
                    kept = self._keep(failed, self.pending.get(key))
                    if kept is not None:
                        self.pending[key] = kept
                raise
            finally:
                self.writing = {}
            if self._committed is not None:
                self._committed(batch)

    async def saved(self, settled: bool) -> None:
        """After a save: commit now if its state is ``settled``, else within ``delay``."""
        if not settled:
            self.arm()
            return
        try:
            await self.commit()
        except BaseException:
            self.arm()  # retried in the background as well as by the next commit
            raise

    def arm(self) -> None:
        """Commit within ``delay`` if anything is pending and no commit is scheduled already."""
        if self._timer is None and self.pending and not self._closed:
            self._timer = asyncio.get_running_loop().call_later(self.delay, self._start)

    def _start(self) -> None:
        self._timer = None
        background = asyncio.get_running_loop().create_task(self._commit_logged())
        self._background.add(background)
        background.add_done_callback(self._background.discard)

    async def _commit_logged(self) -> None:
        try:
            await self.commit()
        except Exception as exc:  # kept pending; the next commit retries them
            logger.warning(
                "task store: %d task saves not yet written (%s); will retry",
                len(self.pending),
                type(exc).__name__,
            )
            self.arm()

    async def close(self) -> None:
        """Schedule nothing more, wait for a background commit under way, commit the rest."""
        self._closed = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._background:
            await asyncio.gather(*self._background, return_exceptions=True)
        await self.commit()
