"""Leases on running tasks: how a surviving replica learns that another one died.

In cluster mode a task is run by the replica that accepted it, and nothing
else knows whether that replica is alive.  Each task seen in progress carries
a lease, a row of ``skillrack_task_leases``: the task, the replica running it
and when the lease expires.  The rows follow the task's state in the same
transaction that writes it (:class:`~skillrack.serve.stores.cluster.ClusterTaskStore`):
a state in progress (submitted, working) takes the lease for the replica that
wrote it, and so does a question asked with a deadline (that replica holds
its timer, :func:`holds_lease`); any other settled state (completed,
failed, input-required, ...) drops it.
A task created and ended within one commit never has one (it costs nothing).

Every replica runs a :class:`LeaseKeeper`.  Every third of
``task_lease_seconds`` it renews, in one statement, the leases of every task
it runs, and then looks for leases that expired: their replica stopped
renewing (killed, frozen, cut off from the database).  It claims them
(``FOR UPDATE SKIP LOCKED`` on PostgreSQL: two survivors never end the same
task twice), and ends each task still in progress ``TASK_STATE_FAILED`` with
a status message naming the lost replica
(:func:`~skillrack.serve.stores.recovery.fail_orphaned`), or, for a
restartable skill, takes its lease over and runs it again
(:mod:`skillrack.serve.execution.restarts`), through the same
compare-and-swap, event log and notification as any other write, so a client
streaming that task from a surviving replica receives what follows.  A task
parked with a deadline is taken over as it is, to arm its timer again.
Other tasks waiting for input or approval hold no lease: they keep waiting,
and any replica can continue them.

A replica sweeps only once it has renewed its own leases without a failure
for a whole lease period (at start-up, and after the database was out of
reach): while the database is down no replica can renew, so when it returns
every lease may look expired, and each replica first renews its own before
any judges another's.

Expiry is judged by the database's clock, never a replica's, so replicas on
hosts whose clocks disagree still agree on which leases expired.  A replica
that comes back after its leases expired (a long pause) finds its tasks
ended: its next write of one fails its compare-and-swap, as after a
``CancelTask`` through another replica, and it stops that task.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from a2a.types import Task, TaskState
from sqlalchemy import Column, Float, Index, MetaData, String, Table, literal_column
from sqlalchemy.ext.asyncio import AsyncEngine
from sqlalchemy.sql.elements import ColumnElement

from skillrack.protocol.task_metadata import DEADLINE_KEY
from skillrack.serve.stores.write_behind import SETTLED_STATES

logger = logging.getLogger(__name__)

#: ``[server] task_lease_seconds``' default: how long a silent replica's tasks stay in progress.
TASK_LEASE_S = 15.0
#: Leases ended in one transaction of a sweep (the rest at the next sweep, at once).
SWEEP_BATCH = 200

_METADATA = MetaData()

#: One row per task some replica is running: whose lease, until when (database time, seconds).
LEASES = Table(
    "skillrack_task_leases",
    _METADATA,
    Column("task_id", String(255), primary_key=True),
    Column("owner", String(255), primary_key=True),
    Column("replica", String(255), nullable=False),
    Column("expires", Float, nullable=False),
    Index("skillrack_task_leases_expires", "expires"),
)


def replica_name() -> str:
    """This process's name in leases and in the status of the tasks it leaves: host, pid, nonce.

    The nonce tells apart two processes that had the same pid (a container
    restarted); the host and pid are what an operator looks for in the logs.
    """
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"


def holds_lease(task: Task) -> bool:
    """Whether ``task``, as written, is someone's to look after: it runs, or waits with a deadline.

    A task in progress is run by the replica that wrote it.  A task waiting
    for an answer with a deadline (the status message's ``skillrack_input_deadline``)
    has that replica's timer: when the replica dies, a survivor takes the
    lease over and arms the timer again
    (:mod:`skillrack.serve.execution.restarts`).  Other settled tasks hold none.
    """
    state = task.status.state
    if state not in SETTLED_STATES:
        return True
    return (
        state == TaskState.TASK_STATE_INPUT_REQUIRED
        and task.status.HasField("message")
        and DEADLINE_KEY in task.status.message.metadata.fields
    )


def database_now(engine: AsyncEngine) -> ColumnElement[Any]:
    """The database's current time in seconds since the epoch, as a SQL expression."""
    if engine.dialect.name == "postgresql":
        return literal_column("extract(epoch from clock_timestamp())::float8", Float)
    return literal_column("((julianday('now') - 2440587.5) * 86400.0)", Float)


async def create_table(engine: AsyncEngine) -> None:
    """Create the table if it is not there (idempotent; races are retried by the caller)."""
    async with engine.begin() as connection:
        await connection.run_sync(_METADATA.create_all, checkfirst=True)


def _one_line(exc: BaseException) -> str:
    text = str(exc).splitlines()[0] if str(exc) else ""
    return f"{type(exc).__name__}: {text}"[:200] if text else type(exc).__name__


class LeaseKeeper:
    """Renews this replica's leases and ends the tasks of replicas whose leases expired.

    ``renew()`` and ``sweep()`` are the store's
    (:meth:`~skillrack.serve.stores.cluster.ClusterTaskStore.renew_leases`,
    :meth:`~skillrack.serve.stores.cluster.ClusterTaskStore.end_orphans`); this is
    the loop around them.  A failed round (the database is down) is logged
    once until one succeeds again: the leases of every replica then stop
    being renewed together, and no replica ends another's tasks until it can
    renew its own first.
    """

    def __init__(
        self,
        renew: Callable[[], Awaitable[None]],
        sweep: Callable[[], Awaitable[int]],
        *,
        lease_s: float = TASK_LEASE_S,
        reachable: Callable[[str | None], None] = lambda problem: None,
        draining: Callable[[], bool] = lambda: False,
    ) -> None:
        self._renew = renew
        #: True while this replica drains: it renews its leases but takes no other's over
        #: (it would run them again, or arm their timers, just before it goes).
        self._draining = draining
        #: Told after each renewal: None when it reached the database, else why not.
        self._reachable = reachable
        self._sweep = sweep
        self.lease_s = lease_s
        self.interval = lease_s / 3
        self._task: asyncio.Task[None] | None = None
        self._failing = False
        #: Since when (monotonic) every renewal succeeded; None after a failure.
        self._renewing_since: float | None = None

    def start(self) -> None:
        """Start renewing and sweeping in the background."""
        if self._task is None:
            self._task = asyncio.create_task(self._loop(), name="skillrack-task-leases")

    async def round(self) -> int:
        """One renewal, then sweeps until no expired lease is left; the tasks ended.

        No sweep until renewals have succeeded for a whole lease period (see
        the module docstring), nor while this replica drains.
        """
        try:
            await self._renew()
        except Exception as exc:
            self._renewing_since = None
            self._reachable(_one_line(exc))
            raise
        self._reachable(None)
        now = time.monotonic()
        if self._renewing_since is None:
            self._renewing_since = now
        if now - self._renewing_since < self.lease_s or self._draining():
            return 0
        ended = 0
        while True:
            count = await self._sweep()
            ended += count
            if count < SWEEP_BATCH:
                return ended

    async def _loop(self) -> None:
        while True:
            try:
                await self.round()
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                if not self._failing:
                    logger.error(
                        "task leases: cannot renew or check leases (%s: %s); retrying every %g s",
                        type(exc).__name__,
                        str(exc).splitlines()[0] if str(exc) else "",
                        self.interval,
                    )
                self._failing = True
            else:
                if self._failing:
                    logger.warning("task leases: renewed again")
                self._failing = False
            await asyncio.sleep(self.interval)

    async def aclose(self) -> None:
        """Stop the loop (the leases then expire, unless the store drops them first)."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
