"""Task leases in the cluster store, on PostgreSQL and on SQLite shared by ``--workers``.

Two cluster stores (replicas A and B) share one database.  A task A
writes in progress takes A's lease in the same commit; one written waiting
for input, or settled, holds none.  When A's leases expire (A stopped
renewing), B's sweep ends the task ``FAILED`` naming A, appends that status
to the event log with the next version, and drops the lease; A, coming back,
finds its next write refused, as after a cancel.  Renewal keeps a lease from
expiring.  Each observation is read back with SQL from the tables themselves.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from a2a.server.cluster import ConcurrentTaskModificationError, TaskVersion
from a2a.server.context import ServerCallContext
from a2a.types import StreamResponse, Task, TaskState, TaskStatus, TaskStatusUpdateEvent
from helpers.postgres import fresh_database
from sqlalchemy import text

from skillrack.protocol.task_metadata import DEADLINE_KEY
from skillrack.serve.stores.cluster import ClusterTaskStore
from skillrack.serve.stores.leases import LeaseKeeper
from skillrack.serve.stores.recovery import fail_orphaned
from skillrack.serve.stores.storage import open_storage, parse_store

CONTEXT = ServerCallContext()
LEASE_S = 0.6


@pytest.fixture(params=["postgresql", "sqlite"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'tasks.db'}"
        return
    with fresh_database() as url:
        yield url


def _step(task: Task, state: int) -> TaskStatusUpdateEvent:
    task.status.CopyFrom(TaskStatus(state=state))  # type: ignore[arg-type]
    return TaskStatusUpdateEvent(task_id=task.id, context_id=task.context_id, status=task.status)


async def _two(url: str, tmp_path: Path, scenario: Any) -> Any:
    spec = parse_store(url, tmp_path)
    storages = [
        open_storage(
            spec, owner_resolver=lambda context: "", cluster=True, task_lease_seconds=LEASE_S
        )
        for _ in range(2)
    ]
    try:
        for storage in storages:
            await storage.start()
        stores = [storage.task_store for storage in storages]
        assert all(isinstance(store, ClusterTaskStore) for store in stores)
        return await scenario(*stores)
    finally:
        for storage in storages:
            await storage.close()


async def _rows(store: ClusterTaskStore, query: str) -> list[Any]:
    async with store._engine.connect() as connection:
        return list((await connection.execute(text(query))).all())


def test_an_expired_lease_ends_its_task_failed_naming_the_replica(
    store_url: str, tmp_path: Path
) -> None:
    async def scenario(a: ClusterTaskStore, b: ClusterTaskStore) -> Any:
        running = Task(id="00000000-0000-4000-8000-0000000000a1", context_id="c")
        waiting = Task(id="00000000-0000-4000-8000-0000000000a2", context_id="c")
        version = await a.save(
            running,
            event=_step(running, TaskState.TASK_STATE_WORKING),
            prev_version=TaskVersion.MISSING,
            context=CONTEXT,
        )
        await a.save(
            waiting,
            event=_step(waiting, TaskState.TASK_STATE_INPUT_REQUIRED),
            prev_version=TaskVersion.MISSING,
            context=CONTEXT,
        )
        await a.commit()
        leases = await _rows(a, "SELECT task_id, replica FROM skillrack_task_leases")
        assert leases == [(running.id, a.replica)]  # the waiting task holds none
        assert await b.end_orphans(fail_orphaned) == 0  # not expired yet
        await asyncio.sleep(LEASE_S / 2)
        await a.renew_leases()
        await asyncio.sleep(LEASE_S / 2 + 0.1)
        assert await b.end_orphans(fail_orphaned) == 0  # renewed: still A's
        await asyncio.sleep(LEASE_S + 0.1)
        assert await b.end_orphans(fail_orphaned) == 1
        stored = await b.get(running.id, CONTEXT)
        events = await _rows(
            b,
            f"SELECT task_version, event_data FROM task_events WHERE task_id = '{running.id}' "
            "ORDER BY seq",
        )
        after = await _rows(a, "SELECT task_id FROM skillrack_task_leases")
        kept = await b.get(waiting.id, CONTEXT)
        # A comes back and writes the task again: refused, as after a cancel.
        step = _step(running, TaskState.TASK_STATE_WORKING)
        with pytest.raises(ConcurrentTaskModificationError):
            await a.save(running, event=step, prev_version=version, context=CONTEXT)
            await a.commit()
            await a.save(running, event=step, prev_version=TaskVersion(2), context=CONTEXT)
        return stored, events, after, kept, a.replica

    stored, events, after, kept, lost = asyncio.run(_two(store_url, tmp_path, scenario))
    assert stored.task.status.state == TaskState.TASK_STATE_FAILED
    assert f"replica {lost} stopped" in str(stored.task.status.message.parts[0].data)
    assert stored.version == TaskVersion(2)
    assert [version for version, _ in events] == [1, 2]
    last = StreamResponse()
    last.ParseFromString(events[-1][1])
    assert last.status_update.status.state == TaskState.TASK_STATE_FAILED
    assert after == []
    assert kept is not None and kept.task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED


def test_a_settled_write_drops_the_lease(store_url: str, tmp_path: Path) -> None:
    async def scenario(a: ClusterTaskStore, b: ClusterTaskStore) -> Any:
        task = Task(id="00000000-0000-4000-8000-0000000000a3", context_id="c")
        version = await a.save(
            task,
            event=_step(task, TaskState.TASK_STATE_WORKING),
            prev_version=TaskVersion.MISSING,
            context=CONTEXT,
        )
        await a.commit()
        held = await _rows(a, "SELECT replica FROM skillrack_task_leases")
        await a.save(
            task,
            event=_step(task, TaskState.TASK_STATE_COMPLETED),
            prev_version=version,
            context=CONTEXT,
        )
        return held, await _rows(b, "SELECT replica FROM skillrack_task_leases"), a.replica

    held, after, replica = asyncio.run(_two(store_url, tmp_path, scenario))
    assert held == [(replica,)]
    assert after == []


def test_a_restart_and_a_parked_deadline_are_taken_over_and_an_abandoned_one_swept_again(
    store_url: str, tmp_path: Path
) -> None:
    """``settle`` True keeps the task WORKING under B's lease; a task parked with a deadline
    holds A's lease and is handed to ``took`` as it is; ``abandon`` lets B's lease expire."""

    async def scenario(a: ClusterTaskStore, b: ClusterTaskStore) -> Any:
        running = Task(id="00000000-0000-4000-8000-0000000000b1", context_id="c")
        parked = Task(id="00000000-0000-4000-8000-0000000000b2", context_id="c")
        await a.save(
            running,
            event=_step(running, TaskState.TASK_STATE_WORKING),
            prev_version=TaskVersion.MISSING,
            context=CONTEXT,
        )
        parked.status.CopyFrom(TaskStatus(state=TaskState.TASK_STATE_INPUT_REQUIRED))
        parked.status.message.metadata.update(
            {DEADLINE_KEY: {"deadline": "2030-01-01T00:00:00.000Z", "question": 0}}
        )
        await a.save(
            parked,
            event=TaskStatusUpdateEvent(task_id=parked.id, context_id="c", status=parked.status),
            prev_version=TaskVersion.MISSING,
            context=CONTEXT,
        )
        await a.commit()
        held = await _rows(a, "SELECT task_id, replica FROM skillrack_task_leases")
        await asyncio.sleep(LEASE_S + 0.1)
        took: list[tuple[str, Task]] = []

        def again(task: Task, replica: str) -> bool:
            task.status.state = TaskState.TASK_STATE_WORKING
            return True

        assert await b.end_orphans(again, took.extend) == 2
        taken = await _rows(b, "SELECT task_id, replica FROM skillrack_task_leases")
        await asyncio.sleep(LEASE_S + 0.1)
        await b.renew_leases()
        assert await a.end_orphans(fail_orphaned) == 0  # B renews what it took
        await b.abandon("", running.id)
        await b.renew_leases()  # the abandoned lease is no longer B's to renew
        assert await a.end_orphans(fail_orphaned) == 1
        ended = await a.get(running.id, CONTEXT)
        return held, took, taken, ended, a.replica, b.replica

    held, took, taken, ended, a_name, b_name = asyncio.run(_two(store_url, tmp_path, scenario))
    assert sorted(held) == [(f"00000000-0000-4000-8000-0000000000b{i}", a_name) for i in (1, 2)]
    assert sorted((task.id, task.status.state) for _, task in took) == [
        ("00000000-0000-4000-8000-0000000000b1", TaskState.TASK_STATE_WORKING),
        ("00000000-0000-4000-8000-0000000000b2", TaskState.TASK_STATE_INPUT_REQUIRED),
    ]
    assert {replica for _, replica in taken} == {b_name}
    assert ended is not None and ended.task.status.state == TaskState.TASK_STATE_FAILED
    assert f"{b_name} (gave up running it again)" in str(ended.task.status.message.parts[0].data)


def test_the_keeper_sweeps_after_a_lease_of_renewals_and_never_while_draining() -> None:
    swept: list[int] = []
    draining = [False]

    async def renew() -> None:
        return None

    async def sweep() -> int:
        swept.append(1)
        return 0

    keeper = LeaseKeeper(renew, sweep, lease_s=0.05, draining=lambda: draining[0])

    async def scenario() -> None:
        assert await keeper.round() == 0 and swept == []  # its own leases renewed first
        await asyncio.sleep(0.06)  # a whole lease period of renewals (time is what is tested)
        draining[0] = True
        assert await keeper.round() == 0 and swept == []  # a draining replica takes none over
        draining[0] = False
        assert await keeper.round() == 0 and swept == [1]

    asyncio.run(scenario())
