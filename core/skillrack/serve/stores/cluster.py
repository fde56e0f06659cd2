"""Cluster mode's task store: a2a-sdk's versioned store, writing once per state a client acts on.

a2a-sdk's ``VersionedDatabaseTaskStore`` commits every event of a task in a
transaction of its own: a compare-and-swap on the ``task_versions`` row, an
ORM ``merge`` of the task (a SELECT, then an UPDATE), an INSERT into the
``task_events`` log and a COMMIT, about five times per invocation, each on a
pooled connection pinged first.  Measured on PostgreSQL: 16 transactions and
63 round trips per invocation, half of the process's samples in SQLAlchemy
building statements, five times the CPU of one process on SQLite.

:class:`ClusterTaskStore` keeps the same tables, versions and guarantees,
and writes the way :class:`~skillrack.serve.stores.storage.SingleProcessTaskStore`
does on SQLite:

- a save of a state a client may act on (completed, failed, canceled,
  rejected, input-required, auth-required) commits before it returns,
  together with every other pending save (a group commit); a save of an
  in-progress state (submitted, working, an Artifact added) waits in memory
  for that commit, or at most ``write_behind_s``.  Each task's pending
  saves become one compare-and-swap of its version row (from the version
  the database holds to the latest), one upsert of its latest state and one
  multi-row insert of all its events, so replicas still replay every event
  in order;
- a task created and ended (a terminal state) within one batch is written
  as its row only: no version row, no events.  No one can have read it in
  progress (a read through this replica commits its pending saves first,
  other replicas read only what is committed), so no replica streams it
  from the log, and a terminal task takes no cancel or follow-up that would
  swap its version; every replica reads the row as the finished task.  A
  blocking call that finishes within ``write_behind_s`` so costs about
  what it costs one process;
- ``get`` of a task with pending saves commits them first, so whatever a
  client reads through this replica, every replica can read; a task id this
  process has just generated is answered as absent without asking the
  database (no other process can know it);
- statements are Core statements built once (``INSERT ... ON CONFLICT``
  instead of ``merge``), executed on a connection, not an ORM session;
  on SQLite on an engine whose driver begins each commit's transaction
  (``BEGIN IMMEDIATE`` before its first write, no round trip of its own).

A compare-and-swap that fails at a group commit means another replica
changed the task (a ``CancelTask`` through it): the batch is dropped, and
the next save of that task raises ``ConcurrentTaskModificationError``,
which a2a-sdk takes as its cue to stop, as it does when the write itself
fails (and so does the blocking path, :mod:`skillrack.serve.bindings.blocking`,
which saves through this store every event a2a-sdk's path would save).
A move to CANCELED is a2a-sdk's own write (it locks the rows and checks
the stored state), after this task's pending saves are committed.

Each commit also keeps the task leases (:mod:`skillrack.serve.stores.leases`)
in step with the states it writes, in the same transaction: a task written in
progress, or parked with a deadline, takes a lease for this replica (once:
renewals are the lease keeper's), a task written otherwise settled drops it.
:meth:`ClusterTaskStore.renew_leases` and :meth:`ClusterTaskStore.end_orphans`
are what the keeper runs.

The cost of the write-behind: a replica killed within ``write_behind_s`` of
an in-progress save loses that save (the task is absent, or in its previous
state); a replica streaming that task's events from the log sees them up to
``write_behind_s`` later.  Nothing a client has been told is final is ever
lost: that state is committed before the answer leaves.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from a2a.server.cluster import (
    ConcurrentTaskModificationError,
    StoredTask,
    TaskVersion,
    VersionedDatabaseTaskStore,
)
from a2a.server.context import ServerCallContext
from a2a.server.events.event_queue import Event
from a2a.server.owner_resolver import OwnerResolver
from a2a.types import Task, TaskState, TaskStatusUpdateEvent
from a2a.utils.proto_utils import to_stream_response
from sqlalchemy import Table, and_, bindparam, delete, insert, select, text, update
from sqlalchemy.dialects import sqlite
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine
from sqlalchemy.orm import class_mapper

from skillrack.protocol.states import TERMINAL
from skillrack.serve.stores.leases import (
    LEASES,
    SWEEP_BATCH,
    TASK_LEASE_S,
    database_now,
    holds_lease,
    replica_name,
)
from skillrack.serve.stores.notified_events import CHANNEL
from skillrack.serve.stores.task_rows import task_row
from skillrack.serve.stores.write_behind import SETTLED_STATES, WRITE_BEHIND_S, WriteBehind

logger = logging.getLogger(__name__)

#: Task ids just generated and not yet saved, remembered to answer their lookups.
NEW_IDS_KEPT = 4096


@dataclass
class _Pending:
    """A task's saves not yet committed: the version the database holds, the latest state."""

    owner: str
    base: int  # 0: the task is not in the database yet
    version: int
    task: Task
    #: Each event with the version it made; a Task event as the copy saved with it.
    events: list[tuple[int, Event]] = field(default_factory=list)


def _keep(failed: _Pending, newer: _Pending | None) -> _Pending:
    """What stays pending when ``failed`` was not written: ``newer`` takes over its base.

    A task saved again meanwhile is written with one swap from the older
    base, and every event of both.
    """
    if newer is None:
        return failed
    newer.base = failed.base
    newer.events[:0] = failed.events
    return newer


class ClusterTaskStore(VersionedDatabaseTaskStore):
    """a2a-sdk's versioned store with saves grouped per commit (see the module docstring)."""

    def __init__(
        self,
        engine: AsyncEngine,
        *,
        owner_resolver: OwnerResolver,
        write_behind_s: float = WRITE_BEHIND_S,
        writer: AsyncEngine | None = None,
        replica: str | None = None,
        lease_s: float = TASK_LEASE_S,
    ) -> None:
        super().__init__(engine, owner_resolver=owner_resolver)
        #: This process's name in the leases of the tasks it runs.
        self.replica = replica or replica_name()
        self.lease_s = lease_s
        #: The tasks this replica holds a committed lease for (renewed by the keeper).
        self._leased: set[tuple[str, str]] = set()
        self._engine = engine
        #: The engine commits use (SQLite: one whose driver begins them, see storage.py).
        self._writer = writer or engine
        #: Tasks whose pending saves lost a compare-and-swap: their next save raises.
        self._conflicted: set[tuple[str, str]] = set()
        self._new_ids: OrderedDict[tuple[str, str], None] = OrderedDict()
        #: Each task's saves not yet committed, and their commits.
        self._behind: WriteBehind[tuple[str, str], _Pending] = WriteBehind(
            self._write_batch, _keep, delay=write_behind_s
        )
        tasks: Table = class_mapper(self._db.task_model).local_table  # type: ignore[assignment]
        #: The tasks table (the metadata-key migration rewrites rows in it).
        self.tasks_table = tasks
        versions: Table = class_mapper(self._version_model).local_table  # type: ignore[assignment]
        events: Table = class_mapper(self._event_model).local_table  # type: ignore[assignment]
        self._task_columns = [
            (prop.key, prop.columns[0].name)
            for prop in class_mapper(self._db.task_model).column_attrs
        ]
        dialect: Any = sqlite
        if engine.dialect.name == "postgresql":  # imported with such an engine: no cost here
            from sqlalchemy.dialects import postgresql as dialect
        # Built once; executed with each batch's values as parameters.
        upsert = dialect.insert(tasks)
        self._upsert = upsert.on_conflict_do_update(
            index_elements=[tasks.c.id],
            set_={c: upsert.excluded[c] for _, c in self._task_columns if c != "id"},
        )
        self._create_version = (
            dialect.insert(versions)
            .values(
                task_id=bindparam("b_id"), owner=bindparam("b_owner"), version=bindparam("b_new")
            )
            .on_conflict_do_nothing(index_elements=[versions.c.task_id])
        )
        self._swap_version = (
            update(versions)
            .where(
                and_(
                    versions.c.task_id == bindparam("b_id"),
                    versions.c.owner == bindparam("b_owner"),
                    versions.c.version == bindparam("b_base"),
                )
            )
            .values(version=bindparam("b_new"))
        )
        self._append_events = insert(events)
        now = database_now(engine)
        take = dialect.insert(LEASES).values(
            task_id=bindparam("l_id"),
            owner=bindparam("l_owner"),
            replica=self.replica,
            expires=now + lease_s,
        )
        self._take_lease = take.on_conflict_do_update(
            index_elements=[LEASES.c.task_id, LEASES.c.owner],
            set_={"replica": take.excluded.replica, "expires": take.excluded.expires},
        )
        self._drop_lease = delete(LEASES).where(
            and_(LEASES.c.task_id == bindparam("l_id"), LEASES.c.owner == bindparam("l_owner"))
        )
        self._renew = (
            update(LEASES).where(LEASES.c.replica == self.replica).values(expires=now + lease_s)
        )
        expired = (
            select(LEASES.c.task_id, LEASES.c.owner, LEASES.c.replica)
            .where(LEASES.c.expires < now)
            .limit(SWEEP_BATCH)
        )
        # Two survivors sweeping together each take other leases (SQLite: one writer anyway).
        self._expired = (
            expired.with_for_update(skip_locked=True)
            if engine.dialect.name == "postgresql"
            else expired
        )
        # PostgreSQL: wake the replicas streaming these tasks when the transaction commits.
        self._notify = (
            text("SELECT pg_notify(:b_channel, t) FROM unnest(CAST(:b_ids AS text[])) AS t")
            if engine.dialect.name == "postgresql"
            else None
        )
        self._read = (
            select(tasks, versions.c.version)
            .outerjoin(
                versions,
                and_(versions.c.task_id == tasks.c.id, versions.c.owner == tasks.c.owner),
            )
            .where(and_(tasks.c.id == bindparam("b_id"), tasks.c.owner == bindparam("b_owner")))
        )
        # Reads need no transaction on PostgreSQL (one statement): no BEGIN, no ROLLBACK.
        self._reader = (
            engine.execution_options(isolation_level="AUTOCOMMIT")
            if engine.dialect.name == "postgresql"
            else engine
        )

    @property
    def pending(self) -> int:
        """How many tasks have saves not yet committed."""
        return self._behind.count

    def note_new(self, task_id: str, context: ServerCallContext) -> None:
        """``task_id`` was just generated here for a new task: no database holds it yet."""
        self._new_ids[(self._db.owner_resolver(context), task_id)] = None
        while len(self._new_ids) > NEW_IDS_KEPT:
            self._new_ids.popitem(last=False)

    # -- saving ------------------------------------------------------------------------------

    async def save(
        self,
        task: Task,
        *,
        event: Event | None = None,
        prev: Task | None = None,
        prev_version: TaskVersion,
        context: ServerCallContext,
    ) -> TaskVersion:
        owner = self._db.owner_resolver(context)
        key = (owner, task.id)
        self._new_ids.pop(key, None)
        if key in self._conflicted:
            self._conflicted.discard(key)
            self._behind.pending.pop(key, None)
            raise ConcurrentTaskModificationError(task.id)
        if task.status.state == TaskState.TASK_STATE_CANCELED:
            await self.commit()  # a2a-sdk's cancel reads the stored task: make it current
            if key in self._conflicted:
                self._conflicted.discard(key)
                raise ConcurrentTaskModificationError(task.id)
            written = await super().save(
                task, event=event, prev=prev, prev_version=prev_version, context=context
            )
            async with self._engine.begin() as connection:
                # Ended: nobody runs it any more, whichever replica held its lease.
                await connection.execute(self._drop_lease, {"l_id": task.id, "l_owner": owner})
                if self._notify is not None and event is not None:
                    notice = {"b_channel": CHANNEL, "b_ids": [task.id]}
                    await connection.execute(self._notify, notice)
            self._leased.discard(key)
            return written
        previous = _counter(prev_version)
        pending = self._behind.pending.get(key)
        if pending is not None and pending.version != previous:
            raise ConcurrentTaskModificationError(task.id)  # what the database would say
        copy = Task()
        copy.CopyFrom(task)
        version = previous + 1
        if pending is None:
            pending = self._behind.pending[key] = _Pending(owner, previous, version, copy)
        else:
            pending.version, pending.task = version, copy
        if event is not None:
            # Serialized at the commit, and only if written: the copy stands for a Task
            # event (the caller goes on changing its task), update events are not changed.
            pending.events.append((version, copy if isinstance(event, Task) else event))
        settled = task.status.state in SETTLED_STATES
        await self._behind.saved(settled)
        if settled and key in self._conflicted:
            self._conflicted.discard(key)
            raise ConcurrentTaskModificationError(task.id)
        return TaskVersion(version)

    async def commit(self) -> None:
        """Write every pending save in one transaction (a no-op when none is pending).

        A task whose version row moved since (another replica wrote it) is
        left out and marked conflicted; if the transaction fails, the saves
        stay pending (unless newer ones replaced them) and the error propagates.
        """
        await self._behind.commit()

    async def _write_batch(self, batch: dict[tuple[str, str], _Pending]) -> None:
        """One commit's transaction, then the conflicts it found (see :meth:`commit`)."""
        await self._db._ensure_initialized()
        await self._ensure_cluster_tables()
        async with self._writer.begin() as connection:
            lost, taken, dropped = await self._write(connection, batch)
        self._leased.update(taken)
        self._leased.difference_update(dropped)
        if len(self._conflicted) > NEW_IDS_KEPT:
            # Only a shortcut: a stale save fails its own compare-and-swap anyway.
            self._conflicted.clear()
        self._conflicted.update(lost)
        for key in lost:
            # Saves made while this batch was written continue from its versions,
            # which another writer may now have reached by another path (a cancel
            # counts on from the stored version): they must not be written either.
            self._behind.pending.pop(key, None)

    async def _write(
        self, connection: AsyncConnection, batch: dict[tuple[str, str], _Pending]
    ) -> tuple[set[tuple[str, str]], list[tuple[str, str]], list[tuple[str, str]]]:
        """The batch's statements on ``connection``.

        Returns the keys whose compare-and-swap failed, the tasks whose lease
        this replica took, and those whose lease it dropped.
        """
        lost: set[tuple[str, str]] = set()
        taken: list[tuple[str, str]] = []
        dropped: list[tuple[str, str]] = []
        rows: list[dict[str, Any]] = []
        events: list[dict[str, Any]] = []
        for key, pending in batch.items():
            # Converted before anything of the task is written: a task that cannot be
            # written leaves its version row as it was.
            row = self._row(pending)
            if row is None:
                lost.add(key)
                continue
            if pending.base == 0 and pending.task.status.state in TERMINAL:
                # Created and ended within this batch: no process has read it in progress
                # (reads commit pending saves first), so no replica streams it, and a
                # terminal task takes no cancel or follow-up: its row is all anyone reads.
                rows.append(row)
                continue
            swap = self._create_version if pending.base == 0 else self._swap_version
            parameters = {
                "b_id": pending.task.id,
                "b_owner": pending.owner,
                "b_base": pending.base,
                "b_new": pending.version,
            }
            if pending.base == 0:
                del parameters["b_base"]
            # The row count, not RETURNING: SQLite before 3.35 has no RETURNING.
            if (await connection.execute(swap, parameters)).rowcount == 0:
                lost.add(key)
                continue
            rows.append(row)
            if holds_lease(pending.task):
                if key not in self._leased:
                    taken.append(key)
            elif pending.base != 0:
                dropped.append(key)
            events.extend(
                {
                    "task_id": pending.task.id,
                    "owner": pending.owner,
                    "task_version": version,
                    "event_data": to_stream_response(event).SerializeToString(),
                }
                for version, event in pending.events
            )
        if rows:
            await connection.execute(self._upsert, rows[0] if len(rows) == 1 else rows)
        if events:
            await connection.execute(self._append_events, events)
            if self._notify is not None:
                ids = sorted({event["task_id"] for event in events})
                await connection.execute(self._notify, {"b_channel": CHANNEL, "b_ids": ids})
        for statement, keys in ((self._take_lease, taken), (self._drop_lease, dropped)):
            if keys:
                await connection.execute(
                    statement, [{"l_id": task_id, "l_owner": owner} for owner, task_id in keys]
                )
        return lost, taken, dropped

    def _row(self, pending: _Pending) -> dict[str, Any] | None:
        """The task's row; None when it cannot be converted (logged)."""
        try:
            return task_row(pending.task, pending.owner, self._task_columns)
        except Exception as exc:
            logger.error(
                "task store: task %s cannot be written (%s); its saves are dropped",
                pending.task.id,
                type(exc).__name__,
            )
            return None

    # -- leases ------------------------------------------------------------------------------

    async def renew_leases(self) -> None:
        """Commit what is pending, then push back the expiry of every lease held here.

        The commit first: saves a database outage left pending are written as
        soon as it is back, even if no new save comes to arm the write-behind.
        """
        await self.commit()
        async with self._writer.begin() as connection:
            await connection.execute(self._renew)

    async def end_orphans(
        self,
        settle: Callable[[Task, str], bool | None],
        took: Callable[[list[tuple[str, Task]]], None] = lambda tasks: None,
        counted: Callable[[int, int], None] = lambda failed, restarted: None,
    ) -> int:
        """Settle the tasks of up to ``SWEEP_BATCH`` expired leases; how many leases it handled.

        Each task still in progress gets ``settle(task, replica)`` (the lost
        replica's name), which fails it (False) or makes it a restart this
        replica runs (True, :mod:`skillrack.serve.execution.restarts`), and is
        written as any state is: the version swapped from the one stored, the
        row, the status event in the log and the notification, in one
        transaction with the lease's removal, or its takeover by this replica
        for a restart.  A task waiting for an answer with a deadline
        (:func:`~skillrack.serve.stores.leases.holds_lease`) is not written:
        its lease is taken over.  ``took`` is then given the tasks taken over
        (run again, or deadlines to re-arm), with their owners, after the
        commit.  A task otherwise settled only loses its lease; one whose
        version moved meanwhile (its replica wrote after all) keeps it, to be
        looked at again.  The count excludes those kept, so a caller looping
        while a whole batch was handled never spins on them.  ``counted`` is
        told, once the transaction is committed, how many tasks were failed
        and how many made restarts (``skillrack_orphaned_tasks_total``): a
        sweep whose commit fails counts nothing, and its tasks are counted by
        the sweep that ends them.
        """
        await self._db._ensure_initialized()
        await self._ensure_cluster_tables()
        ended: list[str] = []
        taken: list[tuple[str, Task]] = []
        kept = restarted = 0
        by_replica: dict[str, list[str]] = {}
        async with self._writer.begin() as connection:
            found = (await connection.execute(self._expired)).all()
            for task_id, owner, replica in found:
                lease = {"l_id": task_id, "l_owner": owner}
                row = (
                    await connection.execute(self._read, {"b_id": task_id, "b_owner": owner})
                ).first()
                task = self._task_of(row) if row is not None else None
                version = row._mapping["version"] if row is not None else None
                if task is None or version is None:
                    await connection.execute(self._drop_lease, lease)
                    continue
                if task.status.state in SETTLED_STATES:
                    if holds_lease(task):  # parked with a deadline: its timer is ours now
                        await connection.execute(self._take_lease, lease)
                        taken.append((owner, task))
                    else:
                        await connection.execute(self._drop_lease, lease)
                    continue
                again = settle(task, replica)
                if await self._end_orphan(connection, task, owner, version):
                    if again:
                        await connection.execute(self._take_lease, lease)
                        taken.append((owner, task))
                        restarted += 1
                    else:
                        await connection.execute(self._drop_lease, lease)
                    ended.append(task_id)
                    by_replica.setdefault(replica, []).append(task_id)
                else:
                    kept += 1
            if ended and self._notify is not None:
                await connection.execute(self._notify, {"b_channel": CHANNEL, "b_ids": ended})
        self._leased.update((owner, task.id) for owner, task in taken)
        if ended:
            counted(len(ended) - restarted, restarted)
        for replica, ids in by_replica.items():
            logger.warning(
                "task leases: replica %s stopped renewing its leases; %d task(s) it was running "
                "ended failed or run again here: %s",
                replica,
                len(ids),
                ", ".join(ids[:10]) + (" ..." if len(ids) > 10 else ""),
            )
        if taken:
            took(taken)
        return len(found) - kept

    async def abandon(self, owner: str, task_id: str) -> None:
        """Let this replica's lease on a task expire now: a run again here could not go on.

        The lease is renamed, so this replica's renewals leave it alone, and
        expired, so the next sweep (any replica's) settles the task again,
        as one whose replica died: a restart counts against the bound.
        """
        abandoned = f"{self.replica} (gave up running it again)"
        async with self._writer.begin() as connection:
            await connection.execute(
                update(LEASES)
                .where(and_(LEASES.c.task_id == task_id, LEASES.c.owner == owner))
                .values(replica=abandoned, expires=0.0)
            )
        self._leased.discard((owner, task_id))

    async def give_up_leases(self) -> int:
        """At the end of a drain: every lease still held here expires now; how many.

        What this replica leaves (a restartable skill's task handed over, a
        question's deadline timer) is then a survivor's at its next sweep,
        not a whole ``task_lease_seconds`` later.  The leases are renamed
        (``... (drained)``), so no renewal of this replica's touches them.
        """
        async with self._writer.begin() as connection:
            result = await connection.execute(
                update(LEASES)
                .where(LEASES.c.replica == self.replica)
                .values(replica=f"{self.replica} (drained)", expires=0.0)
            )
        self._leased.clear()
        return int(result.rowcount or 0)

    async def _end_orphan(
        self, connection: AsyncConnection, task: Task, owner: str, version: int
    ) -> bool:
        """Write ``task``'s new (settled) state over ``version``; False if the version moved."""
        parameters = {"b_id": task.id, "b_owner": owner, "b_base": version, "b_new": version + 1}
        if (await connection.execute(self._swap_version, parameters)).rowcount == 0:
            return False
        row = self._row(_Pending(owner, version, version + 1, task))
        if row is None:
            return False
        await connection.execute(self._upsert, row)
        update_event = TaskStatusUpdateEvent(
            task_id=task.id, context_id=task.context_id, status=task.status
        )
        await connection.execute(
            self._append_events,
            {
                "task_id": task.id,
                "owner": owner,
                "task_version": version + 1,
                "event_data": to_stream_response(update_event).SerializeToString(),
            },
        )
        return True

    def _task_of(self, row: Any) -> Task | None:
        """The task a row read with ``_read`` holds; None when it cannot be read (logged)."""
        values = row._mapping
        try:
            model = self._db.task_model(
                **{name: values[column] for name, column in self._task_columns}
            )
            return self._db._from_orm(model)
        except Exception as exc:
            logger.error(
                "task leases: task %s cannot be read (%s); its lease is dropped",
                values["id"],
                type(exc).__name__,
            )
            return None

    async def aclose(self) -> None:
        """Commit what is pending; called before the engine is disposed."""
        await self._behind.close()
        if self._writer is not self._engine:
            await self._writer.dispose()

    # -- reading ------------------------------------------------------------------------------

    async def get(self, task_id: str, context: ServerCallContext) -> StoredTask | None:
        owner = self._db.owner_resolver(context)
        key = (owner, task_id)
        if key in self._new_ids:
            return None
        if self._behind.uncommitted(key):
            await self.commit()  # what this replica shows, every replica can read
        await self._db._ensure_initialized()
        async with self._reader.connect() as connection:
            row = (
                await connection.execute(self._read, {"b_id": task_id, "b_owner": owner})
            ).first()
        if row is None:
            return None
        values = row._mapping
        model = self._db.task_model(**{name: values[column] for name, column in self._task_columns})
        version = values["version"]
        return StoredTask(
            self._db._from_orm(model),
            TaskVersion(version) if version is not None else TaskVersion.MISSING,
        )


def _counter(version: TaskVersion) -> int:
    """The integer a versioned database store keeps (0 for ``TaskVersion.MISSING``)."""
    value = version._value
    if not isinstance(value, int):
        raise TypeError(f"cluster task store: version {version!r} is not a counter")
    return value
