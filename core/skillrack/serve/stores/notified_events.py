"""Cross-replica task events on PostgreSQL: woken by ``LISTEN/NOTIFY`` instead of a timer.

a2a-sdk's ``DatabaseTaskEventStream`` lets a replica stream a task another
replica runs by reading the ``task_events`` log, again every
``poll_interval_s`` (0.5 s) while nothing new is there: a query every half
second per subscriber, and up to half a second of delay per event.

:class:`NotifiedEventStream` reads the same log the same way, but sleeps
until PostgreSQL says the task has new events: the cluster store's commit
sends ``pg_notify(CHANNEL, task_id)`` in the transaction that appends them
(:class:`~skillrack.serve.stores.cluster.ClusterTaskStore`), PostgreSQL
delivers it when that transaction commits, and one connection per replica
``LISTEN``\\ s for every subscriber of that replica.  The timer stays as a
fallback (``fallback_s``), for events written without a notification (a2a-sdk's
own cancel write) and for a listening connection that was lost, which is
reopened at the next subscription.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncGenerator
from typing import Any

from a2a.server.cluster import DatabaseTaskEventStream, TaskVersion, VersionedEvent
from a2a.server.cluster.database_event_stream import stream_response_to_event
from a2a.types import StreamResponse
from sqlalchemy import and_, bindparam, select
from sqlalchemy.exc import OperationalError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

logger = logging.getLogger(__name__)

#: The channel the cluster store notifies, with the task id as the payload.
CHANNEL = "skillrack_task_events"
#: How long a subscriber waits for a notification before reading the log anyway.
FALLBACK_S = 2.0


class NotifiedEventStream(DatabaseTaskEventStream):
    """a2a-sdk's event log stream, woken by PostgreSQL notifications (see the module docstring)."""

    def __init__(self, engine: AsyncEngine, *, fallback_s: float = FALLBACK_S) -> None:
        super().__init__(engine, poll_interval_s=fallback_s)
        self._waiters: dict[str, set[asyncio.Event]] = {}
        self._listener: Any = None  # an asyncpg connection, LISTENing on CHANNEL
        self._connection: AsyncConnection | None = None  # the pool's, holding it
        self._listen_lock = asyncio.Lock()
        model = self._event_model
        self._newer = (
            select(model.seq, model.task_version, model.event_data)
            .where(and_(model.task_id == bindparam("b_id"), model.seq > bindparam("b_seq")))
            .order_by(model.seq.asc())
        )

    def _notified(self, connection: Any, pid: int, channel: str, payload: str) -> None:
        for waiter in self._waiters.get(payload, ()):
            waiter.set()

    async def _listen(self) -> None:
        """Open the replica's listening connection if it is not open (a failure is logged)."""
        async with self._listen_lock:
            if self._listener is not None and not self._listener.is_closed():
                return
            if self._connection is not None:  # the database dropped it: give its slot back
                with contextlib.suppress(Exception):
                    await self._connection.close()
                self._connection = None
            try:
                connection = await self._engine.connect()
                raw = await connection.get_raw_connection()
                listener = raw.driver_connection
                assert listener is not None
                await listener.add_listener(CHANNEL, self._notified)
            except Exception as exc:
                logger.warning(
                    "task events: cannot LISTEN on PostgreSQL (%s); reading the log every %.1f s",
                    type(exc).__name__,
                    self._poll_interval_s,
                )
                return
            # Kept checked out for as long as the stream lives (aclose gives it back).
            self._connection = connection
            self._listener = listener

    async def subscribe(
        self, task_id: str, *, after: TaskVersion
    ) -> AsyncGenerator[VersionedEvent, None]:
        """The events of ``task_id`` newer than ``after``, as a2a-sdk's stream yields them."""
        await self._ensure_initialized()
        wake = asyncio.Event()
        self._waiters.setdefault(task_id, set()).add(wake)  # before the first read: none missed
        try:
            await self._listen()
            async with self._session_maker() as session:
                cursor = await self._seq_at_or_before_version(session, task_id, after)
            while True:
                wake.clear()
                try:
                    async with self._engine.connect() as connection:
                        rows = (
                            await connection.execute(
                                self._newer, {"b_id": task_id, "b_seq": cursor}
                            )
                        ).all()
                except OperationalError:
                    logger.debug("task events: reading %s failed; retrying", task_id, exc_info=True)
                    rows = []
                for seq, task_version, event_data in rows:
                    cursor = seq
                    version = TaskVersion(task_version)
                    if not version.is_after(after):
                        continue
                    response = StreamResponse()
                    response.ParseFromString(event_data)
                    yield VersionedEvent(event=stream_response_to_event(response), version=version)
                if not rows:
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(wake.wait(), self._poll_interval_s)
        finally:
            waiters = self._waiters.get(task_id)
            if waiters is not None:
                waiters.discard(wake)
                if not waiters:
                    del self._waiters[task_id]

    async def aclose(self) -> None:
        """Stop listening and give the connection back (before the engine is disposed)."""
        listener, self._listener = self._listener, None
        connection, self._connection = self._connection, None
        if listener is not None:
            with contextlib.suppress(Exception):
                await listener.remove_listener(CHANNEL, self._notified)
        if connection is not None:
            with contextlib.suppress(Exception):
                await connection.close()
