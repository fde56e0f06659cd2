"""Where tasks live: the in-memory store, a SQLite file, or PostgreSQL shared by replicas.

``skillrack serve --store`` (or ``[server] store`` in the configuration) takes

- ``sqlite:///PATH`` (the default, ``sqlite:///skillrack-tasks.db``): a file;
  a relative PATH resolves against the configuration's directory (the working
  directory without a configuration, or for ``--store``), an absolute one is
  written ``sqlite:////abs/path.db``;
- ``memory``: a2a-sdk's in-memory store; tasks are gone when the process stops,
  and it cannot be shared by several processes; settled tasks past
  ``memory_max_tasks`` or older than ``memory_task_ttl`` seconds are evicted
  (:mod:`skillrack.serve.stores.bounded_memory`);
- ``postgresql+asyncpg://USER@HOST:PORT/DB`` (``postgresql://`` is read the
  same way): a database several replicas share.

One process on SQLite uses a2a-sdk's ``DatabaseTaskStore``.  PostgreSQL, and
SQLite under ``--workers`` > 1, use a2a-sdk's cluster mode: a versioned store
(every write is a compare-and-swap on a version row and appends the events to
a ``task_events`` log in the same transaction; skillrack's
:class:`~skillrack.serve.stores.cluster.ClusterTaskStore` groups the writes)
and a ``DatabaseTaskEventStream`` that lets any replica answer ``GetTask``,
``SubscribeToTask`` (by reading that log: on PostgreSQL when ``LISTEN/NOTIFY``
says there is something new, :mod:`~skillrack.serve.stores.notified_events`,
on SQLite by polling it), ``CancelTask`` and follow-up
messages for a task started on another.  Every store is scoped by the owner
skillrack's tenant rule gives a task.

SQLite durability (the trade-off chosen for the default)
--------------------------------------------------------
a2a-sdk commits once per task event.  In SQLite's default rollback-journal
mode with ``synchronous=FULL`` every commit waits for several fsyncs, which
made the store about six times slower than memory.  skillrack opens every
SQLite connection with ``journal_mode=WAL`` and ``synchronous=NORMAL``:

- a commit appends to the write-ahead log and returns without an fsync (the
  log is synced at checkpoints), so it costs a write to the OS page cache;
- a transaction that committed survives a crash of the process, including
  SIGKILL: the log is in the OS's hands once the commit returns;
- an OS crash or power loss may lose the most recent transactions (those
  since the last checkpoint), never part of one: the database is never
  corrupted and always opens to a consistent state;
- readers do not block the writer, nor the writer readers.

One process on SQLite also writes fewer times than a2a-sdk asks it to
(``SingleProcessTaskStore``): a2a-sdk saves the whole task after every event
(about five per invocation).  A save of a state a client can act on
(completed, failed, canceled, rejected, input-required, auth-required)
commits before it returns, together with every other pending save (a group
commit), so a client never sees such a state that a restart would lose.
A save of an in-progress state (submitted, working, an Artifact added) is
kept in memory and committed at the next group commit, or at the latest
``write_behind_s`` later (0.1 s by default), and at shutdown.  The cost: a
process killed within that window loses the in-progress states saved in it
(the task is then absent, or in its previous state, after a restart; a task
that was running when its process died is not resumed either way).  It is
the same class of trade-off as ``synchronous=NORMAL`` above, made for states
no client has been told are final.

In cluster mode SQLite transactions start with ``BEGIN IMMEDIATE`` (the
sqlite3 driver's legacy mode would begin only at the first write, so a
read-check-write such as the cluster store's cancel would not be atomic
across processes), and every connection waits up to ``busy_timeout`` for
another writer to finish.
"""

from __future__ import annotations

import asyncio
import builtins
import fcntl
import logging
import os
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from a2a.server.cluster import (
    ConcurrentTaskModificationError,
    DatabaseTaskEventStream,
    TaskEventStream,
    VersionedDatabaseTaskStore,
    VersionedTaskStore,
)
from a2a.server.context import ServerCallContext
from a2a.server.owner_resolver import OwnerResolver
from a2a.server.tasks import (
    DatabaseTaskStore,
    InMemoryPushNotificationConfigStore,
    InMemoryTaskStore,
    PushNotificationConfigStore,
    TaskStore,
)
from a2a.server.tasks.database_push_notification_config_store import (
    DatabasePushNotificationConfigStore,
)
from a2a.types import ListTasksRequest, ListTasksResponse, Task
from sqlalchemy import Table, event, func, select
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine
from sqlalchemy.orm import class_mapper

# The store value is configuration: host/config.py reads and checks it (host never imports
# serve/); it is re-exported here next to the stores it opens.
from skillrack.host.config import MEMORY as MEMORY
from skillrack.host.config import ConfigError, StoreSpec
from skillrack.host.config import StoreKind as StoreKind
from skillrack.host.config import parse_store as parse_store
from skillrack.protocol.states import TERMINAL
from skillrack.serve.stores import leases, published
from skillrack.serve.stores.bounded_memory import BoundedMemoryTaskStore
from skillrack.serve.stores.cluster import ClusterTaskStore
from skillrack.serve.stores.metadata_migration import migrate_metadata_keys
from skillrack.serve.stores.notified_events import NotifiedEventStream
from skillrack.serve.stores.private_files import create_private_file
from skillrack.serve.stores.push_configs import OwnedDatabasePushConfigStore
from skillrack.serve.stores.task_rows import task_row
from skillrack.serve.stores.write_behind import SETTLED_STATES, WRITE_BEHIND_S, WriteBehind

logger = logging.getLogger(__name__)

#: How long a SQLite connection waits for another writer before giving up.
SQLITE_BUSY_TIMEOUT_MS = 15_000
#: How often a replica that does not run a task polls its events for a subscriber.
POLL_INTERVAL_S = 0.5
#: PostgreSQL connections a replica keeps open, and how many more it may open at a peak.
PG_POOL_SIZE = 20
PG_POOL_OVERFLOW = 20


def _sqlite_connect(dbapi_connection: Any, connection_record: Any) -> None:
    """Every SQLite connection: WAL, synchronous=NORMAL and a busy timeout."""
    cursor = dbapi_connection.cursor()
    try:
        cursor.execute(f"PRAGMA busy_timeout = {SQLITE_BUSY_TIMEOUT_MS}")
        cursor.execute("PRAGMA journal_mode = WAL")
        cursor.execute("PRAGMA synchronous = NORMAL")
    finally:
        cursor.close()


def _sqlite_own_begin(dbapi_connection: Any, connection_record: Any) -> None:
    # The sqlite3 driver must not emit BEGIN itself; _sqlite_begin does.
    dbapi_connection.isolation_level = None


def _sqlite_begin(connection: Any) -> None:
    connection.exec_driver_sql("BEGIN IMMEDIATE")


def _sqlite_driver_begins(dbapi_connection: Any, connection_record: Any) -> None:
    # The sqlite3 driver begins with BEGIN IMMEDIATE itself, before the first write.
    dbapi_connection.isolation_level = "IMMEDIATE"


def create_commit_engine(spec: StoreSpec) -> AsyncEngine:
    """SQLite in cluster mode: the engine the cluster store's group commits run on.

    Every commit's first statement writes (a version row or the task row), so
    the driver's own ``BEGIN IMMEDIATE`` before it takes the write lock as the
    explicit one would, without a round trip of its own to the driver's
    thread; a commit also always ends its transaction, so the pool's rollback
    on return is skipped, as for one process.
    """
    assert spec.kind == "sqlite" and spec.url is not None
    engine = create_async_engine(spec.url, pool_reset_on_return=None)
    event.listen(engine.sync_engine, "connect", _sqlite_connect)
    event.listen(engine.sync_engine, "connect", _sqlite_driver_begins)
    return engine


def create_engine(spec: StoreSpec, *, cluster: bool = False) -> AsyncEngine:
    """The SQLAlchemy engine for a database store (SQLite tuned as the docstring says).

    SQLite in cluster mode starts every transaction with ``BEGIN IMMEDIATE``,
    so that the cluster store's read-check-write steps are atomic across
    processes.  One process on SQLite keeps the driver's own transactions
    (BEGIN before the first write): its only writer is itself, and that saves
    a round trip per statement.
    """
    assert spec.url is not None, "the memory store has no engine"
    if spec.kind == "sqlite" and cluster:
        engine = create_async_engine(spec.url)
        event.listen(engine.sync_engine, "connect", _sqlite_connect)
        event.listen(engine.sync_engine, "connect", _sqlite_own_begin)
        event.listen(engine.sync_engine, "begin", _sqlite_begin)
        return engine
    if spec.kind == "sqlite":
        # SingleProcessTaskStore ends every transaction (engine.begin(), the base
        # class's sessions) before its connection goes back to the pool, so the
        # pool's extra rollback on return, a round trip to the driver's thread
        # that would do nothing, is skipped.
        engine = create_async_engine(spec.url, pool_reset_on_return=None)
        event.listen(engine.sync_engine, "connect", _sqlite_connect)
        return engine
    # No ping before every checkout (a round trip, or three, per use): a connection the
    # database dropped fails one statement, and SQLAlchemy then discards the pool's
    # connections.  The pool holds as many connections as a busy replica keeps in use,
    # rather than closing and reopening the ones past SQLAlchemy's default 5.
    return create_async_engine(
        spec.url, pool_size=PG_POOL_SIZE, max_overflow=PG_POOL_OVERFLOW, pool_pre_ping=False
    )


_ABSENT = Task()


#: The states of a task some process is working on, as the ``status`` column spells them.
#: (A2A 0.3 rows spell them in lower case; a2a-sdk reads both.)
IN_PROGRESS_STATE_NAMES = ("TASK_STATE_SUBMITTED", "TASK_STATE_WORKING", "submitted", "working")


class _Kept:
    """One saved (or looked-up) state of a task, numbered in the order of saves."""

    __slots__ = ("dropped", "owner", "seq", "size", "task")

    def __init__(self, seq: int, task: Task, owner: str) -> None:
        self.seq = seq
        self.task = task
        self.owner = owner
        self.size = 0 if task is _ABSENT else task.ByteSize()
        #: Set when the commit could not convert this state for the database.
        self.dropped = False


def _keep(failed: _Kept, newer: _Kept | None) -> _Kept | None:
    """A save whose commit failed stays pending, unless a newer one replaced it or it is dropped."""
    return newer if newer is not None or failed.dropped else failed


class SingleProcessTaskStore(DatabaseTaskStore):
    """a2a-sdk's ``DatabaseTaskStore`` on SQLite, for a file one process writes.

    Three changes, all measured:

    - a save of a settled state (``SETTLED_STATES``) commits before it
      returns, in one transaction with every other pending save; a save of
      an in-progress state waits in memory for the next commit, at most
      ``write_behind_s`` (the module docstring gives the trade-off).  Only the
      latest state of a task is written, so a task that runs to completion
      within the window costs one write instead of five;
    - a write is ``INSERT ... ON CONFLICT DO UPDATE`` (the base class's
      ``merge`` reads the row first);
    - ``get`` answers from memory (``_shown``) for the tasks this process
      saved or looked up last, including those it found absent (a2a-sdk
      looks a new task up several times before its first save).

    What ``get`` shows: an in-progress state as soon as it is saved, a
    settled state only once it is committed, so no reader (``GetTask``,
    ``ListTasks``, a follow-up message) ever sees a final state that a crash
    could take back; until then it shows the state before.  The memory is
    bounded (``capacity`` tasks, ``max_bytes`` in all), except for the
    states of tasks with uncommitted saves, which stay until their commit
    (they are the tasks being worked on); a fresh process starts empty and
    reads from the database.

    ``list`` and ``delete`` commit pending saves first, so they see and
    order against everything saved before them.  ``aclose`` commits what is
    pending; ``TaskStorage.close`` calls it before the engine is disposed.
    Not for a file several processes write: that is cluster mode.
    """

    def __init__(
        self,
        engine: AsyncEngine,
        *,
        capacity: int = 512,
        max_bytes: int = 16 * 1024 * 1024,
        write_behind_s: float = WRITE_BEHIND_S,
        **kwargs: Any,
    ) -> None:
        super().__init__(engine, **kwargs)
        #: What ``get`` answers, by (owner, task id); least recently used first.
        self._shown: OrderedDict[tuple[str, str], _Kept] = OrderedDict()
        self._capacity = capacity
        self._max_bytes = max_bytes
        self._bytes = 0
        #: Numbers every save; a read that raced one is not remembered.
        self._seq = 0
        #: Saved but not yet committed: the latest state of each task, and their commits.
        self._behind: WriteBehind[tuple[str, str], _Kept] = WriteBehind(
            self._write,
            _keep,
            committed=self._committed,
            delay=write_behind_s,
        )
        #: Tasks being deleted: a read racing the delete is not remembered.
        self._deleting: set[tuple[str, str]] = set()
        mapper = class_mapper(self.task_model)
        self._table: Table = mapper.local_table  # type: ignore[assignment]
        #: The tasks table (the metadata-key migration rewrites rows in it).
        self.tasks_table = self._table
        self._columns = [(prop.key, prop.columns[0].name) for prop in mapper.column_attrs]
        # Built once: executed with each task's values as parameters.
        upsert = sqlite_insert(self._table)
        self._upsert = upsert.on_conflict_do_update(
            index_elements=[self._table.c.id],
            set_={column: upsert.excluded[column] for _, column in self._columns if column != "id"},
        )

    @property
    def pending(self) -> int:
        """How many tasks have saves not yet committed (waiting, or being written)."""
        return self._behind.count

    # -- what get() shows ---------------------------------------------------------------------

    def _uncommitted(self, key: tuple[str, str]) -> bool:
        return self._behind.uncommitted(key)

    def _show(self, key: tuple[str, str], kept: _Kept) -> None:
        """Make ``kept`` what ``get`` answers for ``key``, unless a newer state is shown."""
        current = self._shown.get(key)
        if current is not None:
            if current.seq > kept.seq:
                return
            self._bytes -= current.size
            del self._shown[key]
        if kept.size > self._max_bytes // 8 and not self._uncommitted(key):
            return  # a large committed task is read from the database when asked for
        self._shown[key] = kept
        self._bytes += kept.size
        self._evict()

    def _evict(self) -> None:
        while len(self._shown) > self._capacity or self._bytes > self._max_bytes:
            # The least recently used task without uncommitted saves.
            victim = next((key for key in self._shown if not self._uncommitted(key)), None)
            if victim is None:
                return  # only tasks being worked on: they leave at their commit
            self._bytes -= self._shown.pop(victim).size

    def _forget(self, key: tuple[str, str]) -> None:
        gone = self._shown.pop(key, None)
        if gone is not None:
            self._bytes -= gone.size

    # -- saving and committing ----------------------------------------------------------------

    async def save(self, task: Task, context: ServerCallContext) -> None:
        owner = self.owner_resolver(context)
        key = (owner, task.id)
        latest = (
            self._behind.pending.get(key) or self._behind.writing.get(key) or self._shown.get(key)
        )
        if (
            latest is not None
            and latest.task is not _ABSENT
            and latest.task.status.state in TERMINAL
            and task.status.state != latest.task.status.state
        ):
            # A final state is final: e.g. a cancel racing the commit of a
            # completion must not overwrite it (a2a-sdk answers "not cancelable").
            raise ConcurrentTaskModificationError(task.id)
        copy = Task()
        copy.CopyFrom(task)
        self._seq += 1
        kept = _Kept(self._seq, copy, owner)
        self._behind.pending[key] = kept
        settled = task.status.state in SETTLED_STATES
        if not settled:
            self._show(key, kept)
        await self._behind.saved(settled)
        if kept.dropped:
            raise ValueError(f"task {task.id} could not be converted for the task store")

    def _rows(self, batch: dict[tuple[str, str], _Kept]) -> list[dict[str, Any]]:
        """The batch's database rows; a state that cannot be converted is dropped and logged.

        Dropped rather than kept pending: it would fail every later commit,
        and with it every other task's save.
        """
        rows = []
        for kept in batch.values():
            try:
                row = task_row(kept.task, kept.owner, self._columns)
            except Exception as exc:
                kept.dropped = True
                logger.error(
                    "task store: task %s cannot be written (%s); this save is dropped",
                    kept.task.id,
                    type(exc).__name__,
                )
                continue
            rows.append(row)
        return rows

    async def commit(self) -> None:
        """Write every pending save in one transaction (a no-op when none is pending).

        If the write fails, the saves stay pending (unless a newer save of the
        same task replaced them) and the error propagates.  Once committed, a
        settled state becomes what ``get`` shows.
        """
        await self._behind.commit()

    async def _write(self, batch: dict[tuple[str, str], _Kept]) -> None:
        await self._ensure_initialized()
        rows = self._rows(batch)
        if rows:
            async with self.engine.begin() as connection:
                await connection.execute(self._upsert, rows[0] if len(rows) == 1 else rows)

    def _committed(self, batch: dict[tuple[str, str], _Kept]) -> None:
        for key, kept in batch.items():
            if not kept.dropped:
                self._show(key, kept)
            elif self._shown.get(key) is kept:
                self._forget(key)  # never written: not to be shown either
        self._evict()

    async def aclose(self) -> None:
        """Commit what is pending; called before the engine is disposed."""
        await self._behind.close()

    # -- reading ------------------------------------------------------------------------------

    async def get(self, task_id: str, context: ServerCallContext) -> Task | None:
        key = (self.owner_resolver(context), task_id)
        kept = self._shown.get(key)
        if kept is None:
            seq = self._seq
            unsettled = self._uncommitted(key) or key in self._deleting
            found = await super().get(task_id, context)
            # Remember the row only if it is the latest word on the task: no save
            # landed while it was read, and none was waiting for its commit (the
            # row would then be older than a settled state about to be shown).
            if (
                seq == self._seq
                and not unsettled
                and not self._uncommitted(key)
                and key not in self._deleting
            ):
                stored = Task()
                if found is not None:
                    stored.CopyFrom(found)
                self._show(key, _Kept(seq, stored if found is not None else _ABSENT, key[0]))
            return found
        self._shown.move_to_end(key)
        if kept.task is _ABSENT:
            return None
        copy = Task()
        copy.CopyFrom(kept.task)
        return copy

    async def list(self, params: ListTasksRequest, context: ServerCallContext) -> ListTasksResponse:
        await self.commit()
        return await super().list(params, context)

    async def delete(self, task_id: str, context: ServerCallContext) -> None:
        key = (self.owner_resolver(context), task_id)
        async with self._behind.lock:
            self._deleting.add(key)
            try:
                self._behind.pending.pop(key, None)
                self._forget(key)
                self._seq += 1
                await super().delete(task_id, context)
            finally:
                self._deleting.discard(key)
                self._forget(key)

    async def settle_interrupted(self, settle: Callable[[Task], object]) -> tuple[str, ...]:
        """Apply ``settle`` to every task left submitted or working, and write them back.

        For start-up, before this process accepts a task: whatever is in
        progress in the file then was left by a process that is gone.  A row
        that cannot be read is logged and left as it is.  Returns the ids of
        the tasks settled.
        """
        await self._ensure_initialized()
        state = func.json_extract(self._table.c.status, "$.state")
        query = select(self.task_model).where(state.in_(IN_PROGRESS_STATE_NAMES))
        async with self.async_session_maker() as session:
            models = list((await session.execute(query)).scalars())
        rows, settled = [], []
        for model in models:
            try:
                task = self._from_orm(model)
                settle(task)
                converted = self._to_orm(task, model.owner or "")
            except Exception as exc:
                logger.error(
                    "task store: task %s left in progress cannot be read (%s); left as it is",
                    model.id,
                    type(exc).__name__,
                )
                continue
            rows.append({column: getattr(converted, key) for key, column in self._columns})
            settled.append(model.id)
            self._forget((model.owner or "", model.id))
        if rows:
            async with self._behind.lock, self.engine.begin() as connection:
                await connection.execute(self._upsert, rows)
        return tuple(settled)

    async def parked_with_deadline(self) -> builtins.list[Task]:
        """Every task waiting for an answer with a deadline (one scan, at start-up).

        Their timers were in the process that parked them; this one arms them
        again (:mod:`skillrack.serve.execution.restarts`).
        """
        await self._ensure_initialized()
        state = func.json_extract(self._table.c.status, "$.state")
        query = select(self.task_model).where(
            state.in_(("TASK_STATE_INPUT_REQUIRED", "input-required"))
        )
        async with self.async_session_maker() as session:
            models = list((await session.execute(query)).scalars())
        parked = []
        for model in models:
            try:
                task = self._from_orm(model)
            except Exception:  # a row this version cannot read waits for its caller
                continue
            if leases.holds_lease(task):
                parked.append(task)
        return parked

    def note_new(self, task_id: str, context: ServerCallContext) -> None:
        """``task_id`` was just generated for a new task: it is not in the database."""
        key = (self.owner_resolver(context), task_id)
        if key not in self._shown and not self._uncommitted(key):
            self._show(key, _Kept(self._seq, _ABSENT, key[0]))


@dataclass
class TaskStorage:
    """What the request handler is given, and how to start and stop it."""

    spec: StoreSpec
    task_store: TaskStore | VersionedTaskStore
    event_stream: TaskEventStream | None = None
    engine: AsyncEngine | None = None
    #: Push notification configs, in the same database as the tasks (so every replica
    #: delivers for them) and scoped by the same owner (:mod:`skillrack.serve.bindings.push`).
    push_config_store: PushNotificationConfigStore | None = None

    #: The open lock file while this process uses a SQLite file (see ``_lock``).
    _lock_fd: int | None = None

    @property
    def cluster(self) -> bool:
        return self.event_stream is not None

    def _lock(self) -> None:
        """Claim the SQLite file: exclusively for one process, shared in cluster mode.

        The one-process store answers from memory and settles the tasks it
        finds in progress at start-up, both right only if no other process
        writes the file; cluster-mode processes may share it with each other.
        An advisory ``flock`` on ``PATH.lock``, released by the OS when the
        process dies, so a crashed server never blocks the next one.
        """
        assert self.spec.path is not None
        path = self.spec.path.with_name(self.spec.path.name + ".lock")
        try:  # flock needs no write access: another user's lock file can be shared
            descriptor = os.open(path, os.O_RDONLY | os.O_CREAT, 0o644)
        except OSError as exc:
            raise ConfigError(
                f"task store {self.spec.path}: cannot open its lock file {path}: "
                f"{exc.strerror or type(exc).__name__}"
            ) from None
        try:
            fcntl.flock(
                descriptor, (fcntl.LOCK_SH if self.cluster else fcntl.LOCK_EX) | fcntl.LOCK_NB
            )
        except BlockingIOError:
            os.close(descriptor)
            raise ConfigError(
                f"task store {self.spec.path} is in use by another skillrack process "
                + (
                    "that is not in cluster mode"
                    if self.cluster
                    else "(one process per SQLite file; for several, use --workers N on it)"
                )
            ) from None
        self._lock_fd = descriptor

    def _unlock(self) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)  # closing the descriptor releases the flock
            self._lock_fd = None

    async def start(self, attempts: int = 5) -> None:
        """Claim a SQLite file (``_lock``), and create the tables if needed.

        Replicas starting together may race to create them; the loser's
        CREATE fails and is retried, and then finds the tables there.
        """
        if self.engine is None:
            return
        if self.spec.kind == "sqlite" and self._lock_fd is None:
            self._lock()
        for attempt in range(1, attempts + 1):
            try:
                if isinstance(self.task_store, VersionedDatabaseTaskStore | DatabaseTaskStore):
                    await self.task_store.initialize()
                if isinstance(self.event_stream, DatabaseTaskEventStream):
                    await self.event_stream.initialize()
                await published.create_table(self.engine)
                if self.cluster:
                    await leases.create_table(self.engine)
                if isinstance(self.push_config_store, DatabasePushNotificationConfigStore):
                    await self.push_config_store.initialize()
                return
            except DBAPIError:
                if attempt == attempts:
                    raise
                logger.info("task store initialization raced another process; retrying")
                await asyncio.sleep(0.2 * attempt)

    async def first_published(self, etag: str, now: int) -> int:
        """When the document version ``etag`` was first published from this store.

        The card's ``Last-Modified`` (:mod:`skillrack.serve.stores.published`);
        ``now`` for the in-memory store, which nothing shares.
        """
        if self.engine is None:
            return now
        return await published.first_published(self.engine, etag, now)

    async def settle_interrupted(self, settle: Callable[[Task], object]) -> tuple[str, ...]:
        """One process on SQLite: settle the tasks a stopped process left in progress.

        Nothing in cluster mode (another replica may be running them) or in
        memory (a new process starts empty).  Returns the settled task ids.
        """
        if isinstance(self.task_store, SingleProcessTaskStore):
            return await self.task_store.settle_interrupted(settle)
        return ()

    async def parked_with_deadline(self) -> list[Task]:
        """One process on SQLite: the tasks waiting with a deadline a stopped process parked.

        Cluster mode finds them through their leases instead (a replica's
        leases expire when it dies); memory holds none at start-up.
        """
        if isinstance(self.task_store, SingleProcessTaskStore):
            return await self.task_store.parked_with_deadline()
        return []

    async def migrate_metadata_keys(self) -> int:
        """Rename the old task metadata keys of stored tasks (skillrack_skill...); return how many.

        Run once at start-up, before the store serves a task
        (:mod:`skillrack.serve.stores.metadata_migration`).
        """
        store = self.task_store
        if self.engine is None or not isinstance(store, SingleProcessTaskStore | ClusterTaskStore):
            return 0
        return await migrate_metadata_keys(self.engine, store.tasks_table)

    async def close(self) -> None:
        """Commit pending saves, then release the database connections and the file."""
        try:
            if isinstance(self.task_store, SingleProcessTaskStore | ClusterTaskStore):
                await self.task_store.aclose()
        finally:
            if isinstance(self.event_stream, NotifiedEventStream):
                await self.event_stream.aclose()
            if self.engine is not None:
                await self.engine.dispose()
            self._unlock()


def open_storage(
    spec: StoreSpec,
    *,
    owner_resolver: OwnerResolver,
    cluster: bool = False,
    memory_max_tasks: int = 10_000,
    memory_task_ttl: float = 3600.0,
    push_encryption_key: bytes | None = None,
    task_lease_seconds: float = leases.TASK_LEASE_S,
    push_owner_resolver: OwnerResolver | None = None,
) -> TaskStorage:
    """The stores for ``spec``; PostgreSQL always runs in cluster mode, SQLite when asked.

    ``memory_max_tasks`` and ``memory_task_ttl`` bound the memory store (0: no bound).
    ``push_encryption_key`` (a Fernet key) encrypts each push config in the database:
    its ``authentication`` credentials never lie there in clear (the memory store keeps
    them in this process only).  ``task_lease_seconds``: cluster mode's task leases
    (:mod:`skillrack.serve.stores.leases`).  ``push_owner_resolver`` names whose a push
    config is (default: the task's owner); skillrack passes the caller
    (:mod:`skillrack.serve.stores.push_configs`).  A SQLite file is created readable by
    its owner only (0600): it holds tasks' arguments and push configs.
    """
    push_owner = push_owner_resolver or owner_resolver
    if spec.kind == "memory":
        if cluster:
            raise ConfigError("the memory store cannot be shared by several processes")
        task_store: TaskStore = (
            BoundedMemoryTaskStore(owner_resolver, max_tasks=memory_max_tasks, ttl=memory_task_ttl)
            if memory_max_tasks or memory_task_ttl
            else InMemoryTaskStore(owner_resolver=owner_resolver)
        )
        return TaskStorage(
            spec,
            task_store,
            push_config_store=InMemoryPushNotificationConfigStore(owner_resolver=push_owner),
        )
    if spec.kind == "sqlite" and spec.path is not None:
        create_private_file(spec.path)
    engine = create_engine(spec, cluster=cluster)
    push = OwnedDatabasePushConfigStore(
        engine, owner_resolver=push_owner, encryption_key=push_encryption_key
    )
    if cluster or spec.kind == "postgresql":
        return TaskStorage(
            spec,
            ClusterTaskStore(
                engine,
                owner_resolver=owner_resolver,
                writer=create_commit_engine(spec) if spec.kind == "sqlite" else None,
                lease_s=task_lease_seconds,
            ),
            (
                NotifiedEventStream(engine)
                if spec.kind == "postgresql"
                else DatabaseTaskEventStream(engine, poll_interval_s=POLL_INTERVAL_S)
            ),
            engine,
            push_config_store=push,
        )
    return TaskStorage(
        spec,
        SingleProcessTaskStore(engine, owner_resolver=owner_resolver),
        None,
        engine,
        push_config_store=push,
    )


async def prepare(spec: StoreSpec, *, cluster: bool) -> None:
    """Open the store once, create its tables, close it: a start-up check with a clear error.

    ``skillrack serve`` runs this before uvicorn, so that an unreachable
    database is one line rather than a failed lifespan in every worker, and
    so that workers never race to create tables.
    """
    if spec.kind == "sqlite":
        assert spec.path is not None
        if not spec.path.parent.is_dir():
            raise ConfigError(
                f"store {spec.canonical}: directory {spec.path.parent} does not exist"
            )
    storage = open_storage(spec, owner_resolver=lambda context: "", cluster=cluster)
    try:
        await storage.start()
    except (DBAPIError, OSError) as exc:
        raise ConfigError(
            f"cannot open the task store {spec.describe(cluster=cluster)}: "
            f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''} "
            "(choose another with --store or [server] store)"
        ) from None
    finally:
        await storage.close()
