"""The cluster task store on PostgreSQL: one transaction per settled state, and no lost cancel.

:class:`skillrack.serve.stores.cluster.ClusterTaskStore` keeps in-progress
saves in memory and writes them with the next settled one; every event
still reaches the ``task_events`` log, numbered as a2a-sdk numbers them, and
a cancel written by another replica is never overwritten by saves that were
pending (or being written) when it landed.  Another replica streaming the
task is woken by PostgreSQL's notification at the commit.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from a2a.server.cluster import ConcurrentTaskModificationError, TaskVersion
from a2a.server.context import ServerCallContext
from a2a.types import Task, TaskState, TaskStatus, TaskStatusUpdateEvent
from helpers.postgres import fresh_database
from sqlalchemy import event, text

from skillrack.serve.stores.cluster import ClusterTaskStore
from skillrack.serve.stores.notified_events import NotifiedEventStream
from skillrack.serve.stores.storage import open_storage, parse_store

CONTEXT = ServerCallContext()


@pytest.fixture(scope="module")
def pg_url() -> Iterator[str]:
    with fresh_database() as url:
        yield url


def _step(task: Task, state: int) -> TaskStatusUpdateEvent:
    task.status.CopyFrom(TaskStatus(state=state))  # type: ignore[arg-type]
    return TaskStatusUpdateEvent(task_id=task.id, context_id=task.context_id, status=task.status)


async def _run(pg_url: str, tmp_path: Path, scenario: Any) -> Any:
    spec = parse_store(pg_url, tmp_path)
    storages = [open_storage(spec, owner_resolver=lambda context: "") for _ in range(2)]
    try:
        for storage in storages:
            await storage.start()
        stores = [storage.task_store for storage in storages]
        assert all(isinstance(store, ClusterTaskStore) for store in stores)
        return await scenario(*stores)
    finally:
        for storage in storages:
            await storage.close()


def test_in_progress_saves_are_written_with_the_settled_one(pg_url: str, tmp_path: Path) -> None:
    async def scenario(store: ClusterTaskStore, _: ClusterTaskStore) -> Any:
        task = Task(id="00000000-0000-4000-8000-000000000001", context_id="c")
        step = _step(task, TaskState.TASK_STATE_SUBMITTED)
        version = await store.save(
            task, event=step, prev_version=TaskVersion.MISSING, context=CONTEXT
        )
        await store.commit()  # a client was told of the task (returnImmediately, a stream)
        commits: list[int] = []
        event.listen(store._writer.sync_engine, "commit", lambda conn: commits.append(1))
        for state in (
            TaskState.TASK_STATE_WORKING,
            TaskState.TASK_STATE_WORKING,
            TaskState.TASK_STATE_COMPLETED,
        ):
            step = _step(task, state)
            version = await store.save(task, event=step, prev_version=version, context=CONTEXT)
        async with store._engine.connect() as connection:
            logged = (
                await connection.execute(text("SELECT task_version FROM task_events ORDER BY seq"))
            ).all()
        stored = await store.get(task.id, CONTEXT)
        return commits, [row[0] for row in logged], stored

    commits, logged, stored = asyncio.run(_run(pg_url, tmp_path, scenario))
    assert len(commits) == 1  # three saves, one transaction
    assert logged == [1, 2, 3, 4]  # every event, in order, for the other replicas
    assert stored.task.status.state == TaskState.TASK_STATE_COMPLETED
    assert stored.version == TaskVersion(4)


def test_a_task_no_one_saw_in_progress_is_written_as_its_final_row(
    pg_url: str, tmp_path: Path
) -> None:
    """Created and ended within one commit: the row only, which every replica reads as final.

    Nobody can have streamed it from the log (a read through this replica
    commits pending saves first, the others read only what is committed), and
    a terminal task takes no cancel or follow-up, so the version row and the
    events would be written for no reader.
    """

    async def scenario(a: ClusterTaskStore, b: ClusterTaskStore) -> Any:
        task = Task(id="00000000-0000-4000-8000-000000000005", context_id="c")
        version = TaskVersion.MISSING
        for state in (TaskState.TASK_STATE_WORKING, TaskState.TASK_STATE_COMPLETED):
            step = _step(task, state)
            version = await a.save(task, event=step, prev_version=version, context=CONTEXT)
        async with a._engine.connect() as connection:
            counts = [
                (
                    await connection.execute(
                        text(f"SELECT count(*) FROM {table} WHERE task_id = :id"), {"id": task.id}
                    )
                ).scalar()
                for table in ("task_events", "task_versions")
            ]
        return counts, await b.get(task.id, CONTEXT)

    counts, stored = asyncio.run(_run(pg_url, tmp_path, scenario))
    assert stored is not None
    assert stored.task.status.state == TaskState.TASK_STATE_COMPLETED  # read through B
    assert counts == [0, 0]  # no events, no version row
    assert stored.version == TaskVersion.MISSING


def test_a_cancel_through_another_replica_is_never_overwritten(pg_url: str, tmp_path: Path) -> None:
    async def scenario(a: ClusterTaskStore, b: ClusterTaskStore) -> Any:
        a._behind.delay = 60  # only the commits the test makes
        task = Task(id="00000000-0000-4000-8000-000000000002", context_id="c")
        step = _step(task, TaskState.TASK_STATE_WORKING)
        version = await a.save(task, event=step, prev_version=TaskVersion.MISSING, context=CONTEXT)
        await a.commit()
        stored = await b.get(task.id, CONTEXT)
        assert stored is not None
        # A saves progress, and more while that is being written; B cancels in between.
        version = await a.save(task, event=step, prev_version=version, context=CONTEXT)
        canceled = Task()
        canceled.CopyFrom(stored.task)
        cancel = _step(canceled, TaskState.TASK_STATE_CANCELED)
        await b.save(canceled, event=cancel, prev_version=stored.version, context=CONTEXT)
        gate, write = asyncio.Event(), a._write

        async def held(*args: Any) -> Any:
            await gate.wait()
            return await write(*args)

        a._write = held  # type: ignore[method-assign]
        writing = asyncio.create_task(a.commit())
        while not a._behind.writing and not writing.done():  # the batch is being written
            await asyncio.sleep(0)
        assert a._behind.writing
        version = await a.save(task, event=step, prev_version=version, context=CONTEXT)
        gate.set()
        await writing
        del a._write
        await a.commit()  # the write-behind timer's commit
        with pytest.raises(ConcurrentTaskModificationError):
            done = _step(task, TaskState.TASK_STATE_COMPLETED)
            await a.save(task, event=done, prev_version=version, context=CONTEXT)
        await a.commit()
        return (await a.get(task.id, CONTEXT), await b.get(task.id, CONTEXT))

    seen_by_a, seen_by_b = asyncio.run(_run(pg_url, tmp_path, scenario))
    assert seen_by_a.task.status.state == TaskState.TASK_STATE_CANCELED
    assert seen_by_b.task.status.state == TaskState.TASK_STATE_CANCELED


def test_another_replica_is_woken_by_the_commit_not_its_timer(pg_url: str, tmp_path: Path) -> None:
    """A subscriber on B whose fallback timer is a minute gets A's event at A's commit."""

    async def scenario(a: ClusterTaskStore, b: ClusterTaskStore) -> Any:
        stream = NotifiedEventStream(b._engine, fallback_s=60)
        task = Task(id="00000000-0000-4000-8000-000000000003", context_id="c")
        step = _step(task, TaskState.TASK_STATE_WORKING)
        version = await a.save(task, event=step, prev_version=TaskVersion.MISSING, context=CONTEXT)
        await a.commit()
        subscription = stream.subscribe(task.id, after=version)
        try:
            following = asyncio.ensure_future(anext(subscription))
            await asyncio.sleep(0.5)  # B has read the log once and waits
            assert not following.done()
            done = _step(task, TaskState.TASK_STATE_COMPLETED)
            started = time.monotonic()
            await a.save(task, event=done, prev_version=version, context=CONTEXT)
            received = await asyncio.wait_for(following, 30)
            return received, time.monotonic() - started
        finally:
            await subscription.aclose()
            await stream.aclose()

    received, waited = asyncio.run(_run(pg_url, tmp_path, scenario))
    assert received.event.status.state == TaskState.TASK_STATE_COMPLETED
    assert received.version == TaskVersion(2)
    assert waited < 20  # the notification, not the 60 s timer


async def _sqlite_committed(
    tmp_path: Path, scenario: Callable[[ClusterTaskStore, Task, TaskVersion], Awaitable[Any]]
) -> Any:
    """A SQLite cluster store with one WORKING task committed (version 1), given to ``scenario``."""
    storage = open_storage(
        parse_store("sqlite:///tasks.db", tmp_path), owner_resolver=lambda c: "", cluster=True
    )
    await storage.start()
    try:
        store = storage.task_store
        assert isinstance(store, ClusterTaskStore)
        task = Task(id="00000000-0000-4000-8000-000000000006", context_id="c")
        step = _step(task, TaskState.TASK_STATE_WORKING)
        version = await store.save(
            task, event=step, prev_version=TaskVersion.MISSING, context=CONTEXT
        )
        await store.commit()
        return await scenario(store, task, version)
    finally:
        await storage.close()


async def _stored_version(store: ClusterTaskStore) -> Any:
    async with store._engine.connect() as connection:
        return (await connection.execute(text("SELECT version FROM task_versions"))).scalar()


def test_a_sqlite_commit_is_one_transaction(tmp_path: Path) -> None:
    """On SQLite the driver begins each commit: a failure still takes back its version swap."""

    async def scenario(store: ClusterTaskStore, task: Task, version: TaskVersion) -> Any:
        step = _step(task, TaskState.TASK_STATE_WORKING)
        await store.save(task, event=step, prev_version=version, context=CONTEXT)
        append_events = store._append_events
        store._append_events = text("INSERT INTO no_such_table VALUES (1)")  # type: ignore[assignment]
        with pytest.raises(Exception, match="no_such_table"):
            await store.commit()
        store._append_events = append_events
        return await _stored_version(store), store.pending

    stored, pending = asyncio.run(_sqlite_committed(tmp_path, scenario))
    assert stored == 1  # the swap to 2 was rolled back with the failed insert
    assert pending == 1  # and the save waits for the next commit


def test_a_task_that_cannot_be_written_keeps_its_version_row(tmp_path: Path) -> None:
    """Found by review: the version swap ran before the task was converted for its row."""

    async def scenario(store: ClusterTaskStore, task: Task, version: TaskVersion) -> Any:
        # A NaN has no JSON form: json_format (and so the task's row) refuses it.
        task.metadata.update({"reading": math.nan})
        step = _step(task, TaskState.TASK_STATE_WORKING)
        await store.save(task, event=step, prev_version=version, context=CONTEXT)
        await store.commit()
        return await _stored_version(store)

    assert asyncio.run(_sqlite_committed(tmp_path, scenario)) == 1
