"""Task stores: the ``--store`` forms, the tuned SQLite default, and durability over real processes.

The guarantees: a completed, a rejected, a failed and an input-required task
are still there (GetTask, ListTasks) after ``skillrack serve`` is stopped and
started again on the same SQLite file; a server killed with SIGKILL in the
middle of a load leaves a file that passes ``PRAGMA integrity_check`` and
still holds every task whose completion a client saw.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import os
import signal
import sqlite3
import subprocess
import threading
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from a2a.server.cluster import ConcurrentTaskModificationError
from a2a.server.context import ServerCallContext
from a2a.server.tasks import DatabaseTaskStore
from a2a.types import ListTasksRequest, Task, TaskState, TaskStatus
from google.protobuf import json_format
from helpers.served_process import (
    child_pids,
    probe_request,
    send,
    serving,
    start,
    write_config,
)
from helpers.waiting import eventually, wait_until
from sqlalchemy import event

from skillrack.cli.main import main
from skillrack.host.config import Config, ConfigError, load_config
from skillrack.serve.stores.recovery import fail_interrupted
from skillrack.serve.stores.storage import (
    SingleProcessTaskStore,
    StoreSpec,
    TaskStorage,
    open_storage,
    parse_store,
    prepare,
)
from skillrack.testing.serve import get_task, rpc, skillrack_command, wait_for_state

# The forms of --store ----------------------------------------------------------------------------


def test_default_store_is_a_sqlite_file_in_the_working_directory(tmp_path: Path) -> None:
    assert Config().server.store == "sqlite:///skillrack-tasks.db"
    spec = parse_store(Config().server.store, tmp_path)
    assert spec == StoreSpec(
        "sqlite",
        url=f"sqlite+aiosqlite:///{tmp_path.resolve()}/skillrack-tasks.db",
        path=tmp_path.resolve() / "skillrack-tasks.db",
    )
    assert spec.shareable and spec.canonical == f"sqlite:///{spec.path}"


@pytest.mark.parametrize(
    "text, kind, url",
    [
        ("memory", "memory", None),
        (
            "sqlite:////var/lib/skillrack/tasks.db",
            "sqlite",
            "sqlite+aiosqlite:////var/lib/skillrack/tasks.db",
        ),
        ("sqlite+aiosqlite:////srv/t.db", "sqlite", "sqlite+aiosqlite:////srv/t.db"),
        (
            "postgresql+asyncpg://agent:pw@db:5432/tasks",
            "postgresql",
            "postgresql+asyncpg://agent:pw@db:5432/tasks",
        ),
        ("postgresql://agent@db/tasks", "postgresql", "postgresql+asyncpg://agent@db/tasks"),
    ],
)
def test_store_forms(text: str, kind: str, url: str | None) -> None:
    spec = parse_store(text, Path("/elsewhere"))
    assert (spec.kind, spec.url) == (kind, url)
    assert spec.shareable is (kind != "memory")


@pytest.mark.parametrize(
    "text",
    [
        "sqlite://",
        "sqlite:///:memory:",
        "mysql+aiomysql://x@y/z",
        "postgresql+psycopg2://x@y/z",
        "postgresql+asyncpg://x@y",
        "redis://localhost",
        "nonsense",
    ],
)
def test_unusable_store_is_refused(text: str) -> None:
    with pytest.raises(ConfigError, match="store"):
        parse_store(text, Path("/tmp"))


def test_configured_store_resolves_against_the_configuration(tmp_path: Path) -> None:
    config = load_config(write_config(tmp_path, 'store = "sqlite:///state/tasks.db"\n'))
    spec = parse_store(config.server.store, config.base_dir)
    assert spec.path == tmp_path.resolve() / "state" / "tasks.db"
    bad = write_config(tmp_path, 'store = "sqlite://"\n')
    with pytest.raises(ConfigError, match=r"server\.store"):
        load_config(bad)


def test_password_is_not_shown() -> None:
    spec = parse_store("postgresql+asyncpg://agent:s3cret@db/tasks", Path("."))
    assert "s3cret" not in spec.describe(cluster=True) and "cluster mode" in spec.describe(
        cluster=True
    )


# The SQLite store in one process -----------------------------------------------------------------


def _task(state: TaskState = TaskState.TASK_STATE_WORKING, task_id: str | None = None) -> Task:
    task = Task(id=task_id or str(uuid.uuid4()), context_id="ctx", status=TaskStatus(state=state))
    task.metadata.update({"skillrackSkill": "echo"})
    return task


async def test_sqlite_runs_in_wal_with_synchronous_normal(tmp_path: Path) -> None:
    spec = parse_store("sqlite:///t.db", tmp_path)
    storage = open_storage(spec, owner_resolver=lambda context: "owner")
    await storage.start()
    assert storage.engine is not None and not storage.cluster
    async with storage.engine.connect() as connection:
        journal = (await connection.exec_driver_sql("PRAGMA journal_mode")).scalar()
        synchronous = (await connection.exec_driver_sql("PRAGMA synchronous")).scalar()
        busy = (await connection.exec_driver_sql("PRAGMA busy_timeout")).scalar()
    await storage.close()
    assert (journal, synchronous) == ("wal", 1)  # 1 = NORMAL
    assert busy and busy >= 5000
    assert sqlite3.connect(tmp_path / "t.db").execute("PRAGMA journal_mode").fetchone()[0] == "wal"


async def test_single_process_store_round_trips_and_answers_from_memory(tmp_path: Path) -> None:
    spec = parse_store("sqlite:///t.db", tmp_path)
    context = ServerCallContext()
    storage = open_storage(spec, owner_resolver=lambda c: "alice")
    store = storage.task_store
    assert isinstance(store, SingleProcessTaskStore)
    await storage.start()
    task = _task()
    assert await store.get(task.id, context) is None  # remembered as absent...
    await store.save(task, context)  # ...until saved
    task.status.state = TaskState.TASK_STATE_COMPLETED
    await store.save(task, context)  # an update of the same row
    kept = await store.get(task.id, context)
    assert kept == task
    assert kept is not None
    kept.status.state = TaskState.TASK_STATE_FAILED  # callers get copies
    assert (await store.get(task.id, context)) == task
    fresh = _task()
    store.note_new(fresh.id, context)  # a generated id: known absent without a query
    await storage.close()
    assert await store.get(fresh.id, context) is None
    assert await store.get(task.id, context) == task

    # A fresh process reads what was committed; another owner sees nothing.
    again = open_storage(spec, owner_resolver=lambda c: "alice")
    await again.start()
    assert await again.task_store.get(task.id, context) == task
    listed = await again.task_store.list(ListTasksRequest(), context)
    assert [t.id for t in listed.tasks] == [task.id]
    await again.close()
    other = open_storage(spec, owner_resolver=lambda c: "mallory")
    await other.start()
    assert await other.task_store.get(task.id, context) is None
    await other.close()


async def test_one_process_per_sqlite_file_unless_in_cluster_mode(tmp_path: Path) -> None:
    spec = parse_store("sqlite:///t.db", tmp_path)
    first = open_storage(spec, owner_resolver=lambda c: "o")
    await first.start()
    second = open_storage(spec, owner_resolver=lambda c: "o")
    with pytest.raises(ConfigError, match="in use by another skillrack process"):
        await second.start()
    cluster = open_storage(spec, owner_resolver=lambda c: "o", cluster=True)
    with pytest.raises(ConfigError, match="not in cluster mode"):
        await cluster.start()
    await first.close()  # released: the file can be claimed again
    await second.start()
    await second.close()
    # Cluster-mode processes share the file with each other, and keep a single one out.
    shared = [open_storage(spec, owner_resolver=lambda c: "o", cluster=True) for _ in range(2)]
    for storage in shared:
        await storage.start()
    single = open_storage(spec, owner_resolver=lambda c: "o")
    with pytest.raises(ConfigError, match="in use"):
        await single.start()
    for storage in shared:
        await storage.close()


async def test_tasks_left_in_progress_are_failed_at_start(tmp_path: Path) -> None:
    spec = parse_store("sqlite:///t.db", tmp_path)
    context = ServerCallContext()
    before = {
        state: _task(state)
        for state in (
            TaskState.TASK_STATE_SUBMITTED,
            TaskState.TASK_STATE_WORKING,
            TaskState.TASK_STATE_INPUT_REQUIRED,
            TaskState.TASK_STATE_COMPLETED,
        )
    }
    for owner in ("alice", "bob"):  # every owner's tasks, not only one
        dead = open_storage(spec, owner_resolver=lambda c, owner=owner: owner)
        await dead.start()
        for task in before.values():
            copy = Task()
            copy.CopyFrom(task)
            copy.id = f"{owner}-{task.id}"
            await dead.task_store.save(copy, context)
        await dead.close()

    storage = open_storage(spec, owner_resolver=lambda c: "alice")
    await storage.start()
    settled = await storage.settle_interrupted(fail_interrupted)
    in_progress = {TaskState.TASK_STATE_SUBMITTED, TaskState.TASK_STATE_WORKING}
    assert sorted(settled) == sorted(
        f"{owner}-{before[state].id}" for owner in ("alice", "bob") for state in in_progress
    )
    for state, task in before.items():
        found = await storage.task_store.get(f"alice-{task.id}", context)
        assert found is not None
        if state in in_progress:
            assert found.status.state == TaskState.TASK_STATE_FAILED
            [part] = found.status.message.parts
            error = json_format.MessageToDict(part.data)["error"]
            assert error["code"] == "output_invalid"
            assert "stopped while this task was running" in error["message"]
            assert found.metadata["skillrackSkill"] == "echo"  # the rest of the task is kept
        else:
            assert found.status.state == state
    assert await storage.settle_interrupted(fail_interrupted) == ()  # nothing left to settle
    await storage.close()
    rows = _rows(tmp_path / "t.db")
    assert rows[f"bob-{before[TaskState.TASK_STATE_WORKING].id}"] == "TASK_STATE_FAILED"


async def test_remembered_tasks_are_bounded(tmp_path: Path) -> None:
    spec = parse_store("sqlite:///t.db", tmp_path)
    storage = open_storage(spec, owner_resolver=lambda c: "o")
    await storage.start()
    assert storage.engine is not None
    store = SingleProcessTaskStore(storage.engine, capacity=3, max_bytes=8000)
    context = ServerCallContext()
    tasks = [_task() for _ in range(5)]
    big = _task()
    big.metadata.update({"blob": "x" * 2000})  # over max_bytes / 8: not kept once committed
    for task in [*tasks, big]:
        await store.save(task, context)
    # Tasks with uncommitted saves stay shown whatever the bounds: the database
    # does not have them yet.
    assert len(store._shown) == 6
    for task in [*tasks, big]:
        assert await store.get(task.id, context) == task
    await store.commit()
    assert len(store._shown) == 3 and store._bytes <= 8000
    assert (store.owner_resolver(context), big.id) not in store._shown
    for task in [*tasks, big]:  # evicted ones come from the database
        assert await store.get(task.id, context) == task
    await storage.close()


async def test_a_settled_state_is_shown_only_once_committed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """GetTask must not show a final state that a failed commit, or a crash, would take back."""
    context = ServerCallContext()
    storage, store = await _open_single(tmp_path)
    task = _task(TaskState.TASK_STATE_WORKING)
    await store.save(task, context)
    async with _commits_held(store):
        done = _task(TaskState.TASK_STATE_COMPLETED, task_id=task.id)
        saver = asyncio.create_task(store.save(done, context))
        await eventually(lambda: _queued(store, done), "the completion to wait for the commit")
        shown = await store.get(task.id, context)
        assert shown is not None and shown.status.state == TaskState.TASK_STATE_WORKING
        assert not saver.done()
    await saver
    shown = await store.get(task.id, context)
    assert shown is not None and shown.status.state == TaskState.TASK_STATE_COMPLETED

    # A commit that fails leaves the earlier state shown, and is retried.
    failing = _task(TaskState.TASK_STATE_WORKING)
    await store.save(failing, context)

    def broken(batch: Any) -> Any:
        raise OSError("disk full")

    original = store._rows
    monkeypatch.setattr(store, "_rows", broken)
    failed = _task(TaskState.TASK_STATE_FAILED, task_id=failing.id)
    with pytest.raises(OSError):
        await store.save(failed, context)
    shown = await store.get(failing.id, context)
    assert shown is not None and shown.status.state == TaskState.TASK_STATE_WORKING
    monkeypatch.setattr(store, "_rows", original)
    await eventually(lambda: not store.pending, "the background retry to commit")
    assert _rows(tmp_path / "t.db")[failing.id] == "TASK_STATE_FAILED"
    shown = await store.get(failing.id, context)
    assert shown is not None and shown.status.state == TaskState.TASK_STATE_FAILED
    await storage.close()


async def test_a_row_read_while_a_final_state_commits_is_not_remembered(tmp_path: Path) -> None:
    """A GetTask that reads the database while a completion is being committed reads the
    state before it; remembering that row would hide the completion for good."""
    context = ServerCallContext()
    storage, store = await _open_single(tmp_path)
    task = _task(TaskState.TASK_STATE_WORKING)
    await store.save(task, context)
    await storage.close()

    storage, store = await _open_single(tmp_path)  # a new process: nothing shown yet
    async with _commits_held(store):
        done = _task(TaskState.TASK_STATE_COMPLETED, task_id=task.id)
        saver = asyncio.create_task(store.save(done, context))
        await eventually(lambda: _queued(store, done), "the completion to wait for the commit")
        await store.save(_task(TaskState.TASK_STATE_WORKING), context)  # another task moves on
        before = await store.get(task.id, context)
        assert before is not None and before.status.state == TaskState.TASK_STATE_WORKING
    await saver
    after = await store.get(task.id, context)
    assert after is not None and after.status.state == TaskState.TASK_STATE_COMPLETED
    await storage.close()


async def test_a_final_state_is_never_overwritten(tmp_path: Path) -> None:
    """E.g. a cancel that read the task just before its completion was committed."""
    context = ServerCallContext()
    storage, store = await _open_single(tmp_path)
    task = _task(TaskState.TASK_STATE_COMPLETED)
    await store.save(task, context)
    await store.save(task, context)  # the same final state again is harmless
    canceled = _task(TaskState.TASK_STATE_CANCELED, task_id=task.id)
    with pytest.raises(ConcurrentTaskModificationError):
        await store.save(canceled, context)
    assert _rows(tmp_path / "t.db")[task.id] == "TASK_STATE_COMPLETED"
    await storage.close()


async def test_a_state_that_cannot_be_converted_does_not_block_the_others(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    context = ServerCallContext()
    storage, store = await _open_single(tmp_path)
    poison = _task(TaskState.TASK_STATE_WORKING)
    poison.metadata.update({"reading": math.nan})  # no JSON form: json_format refuses it
    await store.save(poison, context)
    other = _task(TaskState.TASK_STATE_COMPLETED)
    await store.save(other, context)  # commits, without the poisoned row
    assert set(_rows(tmp_path / "t.db")) == {other.id}
    assert store.pending == 0
    settled = _task(TaskState.TASK_STATE_FAILED, task_id=poison.id)
    settled.metadata.update({"reading": math.nan})
    with pytest.raises(ValueError, match="could not be converted"):
        await store.save(settled, context)
    await storage.close()


async def test_a_read_racing_a_save_is_not_remembered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = parse_store("sqlite:///t.db", tmp_path)
    context = ServerCallContext()
    first = open_storage(spec, owner_resolver=lambda c: "o")
    await first.start()
    task = _task()
    await first.task_store.save(task, context)
    await first.close()

    storage = open_storage(spec, owner_resolver=lambda c: "o")  # a new process: nothing kept
    await storage.start()
    store = storage.task_store
    assert isinstance(store, SingleProcessTaskStore)
    read, read_done = asyncio.Event(), asyncio.Event()
    original = DatabaseTaskStore.get

    async def slow_get(self: DatabaseTaskStore, task_id: str, ctx: ServerCallContext) -> Any:
        found = await original(self, task_id, ctx)
        read.set()
        await read_done.wait()  # the row was read; a save lands before the read returns
        return found

    monkeypatch.setattr(DatabaseTaskStore, "get", slow_get)
    reader = asyncio.create_task(store.get(task.id, context))
    await eventually(read.is_set, "the reader to have read the row")
    done = _task(TaskState.TASK_STATE_COMPLETED, task_id=task.id)
    await store.save(done, context)
    read_done.set()
    assert (await reader) == task  # the read saw the old row...
    monkeypatch.setattr(DatabaseTaskStore, "get", original)
    assert await store.get(task.id, context) == done  # ...and did not replace the saved one
    await storage.close()


async def _open_single(tmp_path: Path) -> tuple[TaskStorage, SingleProcessTaskStore]:
    """The one-process store on ``tmp_path/t.db``, started, as ``skillrack serve`` opens it."""
    storage = open_storage(parse_store("sqlite:///t.db", tmp_path), owner_resolver=lambda c: "o")
    await storage.start()
    assert isinstance(storage.task_store, SingleProcessTaskStore)
    return storage, storage.task_store


@contextlib.asynccontextmanager
async def _commits_held(store: SingleProcessTaskStore) -> AsyncIterator[None]:
    """Hold the store's commit lock for the block, as a slow commit under way would."""
    release, entered = asyncio.Event(), asyncio.Event()

    async def hold() -> None:
        async with store._behind.lock:
            entered.set()
            await release.wait()

    holder = asyncio.create_task(hold())
    await entered.wait()
    try:
        yield
    finally:
        release.set()
        await holder


def _queued(store: SingleProcessTaskStore, task: Task) -> bool:
    """Whether ``task``'s save is pending, i.e. its commit waits (for the held lock)."""
    return any(kept.task is task or kept.task == task for kept in store._behind.pending.values())


def _rows_if_any(database: Path) -> dict[str, str]:
    """:func:`_rows`, or nothing while the file or its table is not written yet."""
    try:
        return _rows(database)
    except sqlite3.OperationalError:
        return {}


def _rows(database: Path) -> dict[str, str]:
    """What another connection (another process, after a crash) would read: id -> state."""
    with sqlite3.connect(database) as connection:
        rows = connection.execute("SELECT id, status FROM tasks").fetchall()
    return {task_id: json.loads(status)["state"] for task_id, status in rows}


def _count_transactions(storage: Any) -> list[int]:
    """A list whose length counts the transactions committed on ``storage``'s engine."""
    commits: list[int] = []
    event.listen(storage.engine.sync_engine, "commit", lambda connection: commits.append(1))
    return commits


async def test_settled_states_commit_before_save_returns(tmp_path: Path) -> None:
    context = ServerCallContext()
    storage, store = await _open_single(tmp_path)
    settled = {
        TaskState.TASK_STATE_COMPLETED,
        TaskState.TASK_STATE_FAILED,
        TaskState.TASK_STATE_CANCELED,
        TaskState.TASK_STATE_REJECTED,
        TaskState.TASK_STATE_INPUT_REQUIRED,
        TaskState.TASK_STATE_AUTH_REQUIRED,
    }
    for state in settled:
        task = _task(state)
        await store.save(task, context)
        assert _rows(tmp_path / "t.db")[task.id] == TaskState.Name(state)
    assert store.pending == 0
    await storage.close()


async def test_in_progress_saves_are_written_behind_once(tmp_path: Path) -> None:
    context = ServerCallContext()
    storage, store = await _open_single(tmp_path)
    commits = _count_transactions(storage)
    task = _task(TaskState.TASK_STATE_SUBMITTED)
    await store.save(task, context)
    for state in (TaskState.TASK_STATE_WORKING, TaskState.TASK_STATE_WORKING):
        task.status.state = state
        task.artifacts.add(artifact_id=str(uuid.uuid4()))
        await store.save(task, context)
    assert task.id not in _rows(tmp_path / "t.db")  # not yet written...
    assert await store.get(task.id, context) == task  # ...but answered from memory
    assert store.pending == 1 and commits == []
    await eventually(lambda: not store.pending, "the write-behind commit")
    assert _rows(tmp_path / "t.db") == {task.id: "TASK_STATE_WORKING"}  # the latest state
    assert len(commits) == 1  # three saves, one write

    # A settled save writes the pending saves of other tasks with it (group commit).
    others = [_task(TaskState.TASK_STATE_WORKING) for _ in range(3)]
    for other in others:
        await store.save(other, context)
    task.status.state = TaskState.TASK_STATE_COMPLETED
    await store.save(task, context)
    assert len(commits) == 2 and store.pending == 0
    assert {other.id for other in others} <= set(_rows(tmp_path / "t.db"))
    await storage.close()


async def test_concurrent_settled_saves_share_commits(tmp_path: Path) -> None:
    context = ServerCallContext()
    storage, store = await _open_single(tmp_path)
    commits = _count_transactions(storage)
    tasks = [_task(TaskState.TASK_STATE_COMPLETED) for _ in range(20)]
    await asyncio.gather(*(store.save(task, context) for task in tasks))
    assert set(_rows(tmp_path / "t.db")) == {task.id for task in tasks}
    assert 1 <= len(commits) < len(tasks)
    await storage.close()


async def test_list_close_and_delete_see_pending_saves(tmp_path: Path) -> None:
    context = ServerCallContext()
    storage, store = await _open_single(tmp_path)
    listed_task, closed_task, deleted_task = (_task() for _ in range(3))
    await store.save(listed_task, context)
    listed = await store.list(ListTasksRequest(), context)
    assert [t.id for t in listed.tasks] == [listed_task.id]
    await store.save(deleted_task, context)
    await store.delete(deleted_task.id, context)
    assert await store.get(deleted_task.id, context) is None
    await store.save(closed_task, context)
    await storage.close()  # a graceful stop writes what is pending
    assert _rows(tmp_path / "t.db") == {
        listed_task.id: "TASK_STATE_WORKING",
        closed_task.id: "TASK_STATE_WORKING",
    }


async def test_a_failed_commit_keeps_the_saves_and_reports(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    context = ServerCallContext()
    storage, store = await _open_single(tmp_path)
    working = _task()
    await store.save(working, context)
    original = store._rows

    def broken(batch: Any) -> Any:
        raise OSError("disk full")

    monkeypatch.setattr(store, "_rows", broken)
    done = _task(TaskState.TASK_STATE_COMPLETED)
    with pytest.raises(OSError, match="disk full"):
        await store.save(done, context)  # the client is not told it is done
    assert store.pending == 2
    assert await store.get(done.id, context) is None  # nor can it read it as done
    monkeypatch.setattr(store, "_rows", original)
    await store.commit()
    assert _rows(tmp_path / "t.db") == {
        working.id: "TASK_STATE_WORKING",
        done.id: "TASK_STATE_COMPLETED",
    }
    assert await store.get(done.id, context) == done
    await storage.close()


async def test_prepare_names_a_missing_directory(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        await prepare(parse_store("sqlite:///no/such/dir/t.db", tmp_path), cluster=False)
    await prepare(parse_store("sqlite:///t.db", tmp_path), cluster=True)
    tables = {
        row[0]
        for row in sqlite3.connect(tmp_path / "t.db").execute(
            "SELECT name FROM sqlite_master WHERE type = 'table'"
        )
    }
    assert {"tasks", "task_versions", "task_events"} <= tables


# Real processes ----------------------------------------------------------------------------------


def _states(url: str, ids: dict[str, str]) -> dict[str, str]:
    return {name: get_task(url, task_id)["status"]["state"] for name, task_id in ids.items()}


@pytest.mark.slow
def test_tasks_survive_a_restart(tmp_path: Path) -> None:
    config = write_config(tmp_path, 'store = "sqlite:///state.db"\n')
    with serving(tmp_path, config=config) as served:
        url = served.url
        ids = {
            "completed": send(url, probe_request(url, "echo", {"text": "hello"}))["id"],
            "rejected": send(url, probe_request(url, "echo", {"text": 5}))["id"],
            "failed": send(url, probe_request(url, "crash", {}))["id"],
            "input_required": send(url, probe_request(url, "ask", {}))["id"],
        }
        before = _states(url, ids)
        assert "task store: sqlite " + str(tmp_path.resolve() / "state.db") in served.output()
    assert before == {
        "completed": "TASK_STATE_COMPLETED",
        "rejected": "TASK_STATE_REJECTED",
        "failed": "TASK_STATE_FAILED",
        "input_required": "TASK_STATE_INPUT_REQUIRED",
    }
    assert (tmp_path / "state.db").exists()

    with serving(tmp_path, config=config) as served:
        url = served.url
        assert _states(url, ids) == before
        completed = get_task(url, ids["completed"])
        [primary] = [a for a in completed["artifacts"] if a["name"] == "echo"]
        assert primary["parts"][0]["data"]["result"] == {"echo": "hello"}
        failed = get_task(url, ids["failed"])
        assert failed["status"]["message"]["parts"][0]["data"]["error"]["code"] == "output_invalid"
        listed = rpc(url, "ListTasks", {"pageSize": 100})["result"]["tasks"]
        assert {t["id"]: t["status"]["state"] for t in listed} == {
            ids[name]: state for name, state in before.items()
        }
        # The parked task goes on in the new process.
        resumed = send(url, {"confirmed": True}, task_id=ids["input_required"])
        assert resumed["status"]["state"] == "TASK_STATE_COMPLETED"
        [primary] = [a for a in resumed["artifacts"] if a["name"] == "ask"]
        assert primary["parts"][0]["data"]["result"] == {"answer": {"confirmed": True}}


@pytest.mark.slow
def test_sigkill_under_load_leaves_a_readable_store(tmp_path: Path) -> None:
    served = start(tmp_path, args=("--store", "sqlite:///loaded.db")).wait_ready()
    url = served.url
    request = probe_request(url, "echo", {"text": "load"})
    completed: list[str] = []
    errors: list[BaseException] = []
    stop_at = time.monotonic() + 20

    def load() -> None:
        with httpx.Client(timeout=10) as client:
            while time.monotonic() < stop_at:
                try:
                    task = send(url, request, client=client)
                except (httpx.TransportError, ValueError):
                    return  # the server died under us
                except BaseException as exc:  # pragma: no cover - shown by the assertion below
                    errors.append(exc)
                    return
                if task["status"]["state"] == "TASK_STATE_COMPLETED":
                    completed.append(task["id"])

    threads = [threading.Thread(target=load) for _ in range(3)]
    for thread in threads:
        thread.start()
    wait_until(lambda: len(completed) >= 20, "20 tasks completed under load", timeout=30)
    served.process.send_signal(signal.SIGKILL)
    served.process.wait(timeout=10)
    for thread in threads:
        thread.join(timeout=15)
    assert not errors, errors
    assert served.process.returncode == -signal.SIGKILL
    assert len(completed) >= 20, served.output()

    database = tmp_path / "loaded.db"
    with sqlite3.connect(database) as connection:
        assert connection.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        stored = connection.execute("SELECT count(*) FROM tasks").fetchone()[0]
    assert stored >= len(completed)

    with serving(tmp_path, args=("--store", f"sqlite:///{database}")) as again:
        states = {get_task(again.url, task_id)["status"]["state"] for task_id in completed}
        assert states == {"TASK_STATE_COMPLETED"}


@pytest.mark.slow
def test_a_task_running_when_the_process_died_is_failed_at_restart(tmp_path: Path) -> None:
    served = start(tmp_path, args=("--store", "sqlite:///killed.db")).wait_ready()
    url = served.url
    ticking = send(url, probe_request(url, "ticker", {"ticks": 500}), immediately=True)
    done = send(url, probe_request(url, "echo", {"text": "kept"}))
    assert wait_for_state(url, ticking["id"], {"TASK_STATE_WORKING"})["status"]["state"] == (
        "TASK_STATE_WORKING"
    )
    wait_until(
        lambda: _rows_if_any(tmp_path / "killed.db").get(ticking["id"]) == "TASK_STATE_WORKING",
        "the write-behind commit of WORKING to reach the file",
    )
    served.stop(signal.SIGKILL)
    assert _rows(tmp_path / "killed.db")[ticking["id"]] == "TASK_STATE_WORKING"

    with serving(tmp_path, args=("--store", "sqlite:///killed.db")) as again:
        failed = get_task(again.url, ticking["id"])
        assert failed["status"]["state"] == "TASK_STATE_FAILED"
        error = failed["status"]["message"]["parts"][0]["data"]["error"]
        assert error["code"] == "output_invalid"
        assert "stopped while this task was running" in error["message"]
        assert [a["name"] for a in failed["artifacts"]]  # the progress it had made is kept
        assert get_task(again.url, done["id"])["status"]["state"] == "TASK_STATE_COMPLETED"
        assert "1 task(s) left running by a stopped process marked failed" in again.output()


@pytest.mark.slow
def test_a_second_server_on_the_same_file_is_refused(tmp_path: Path) -> None:
    with serving(tmp_path, args=("--store", "sqlite:///one.db")):
        second = start(tmp_path, args=("--store", "sqlite:///one.db"))
        assert second.process.wait(timeout=30) == 1
        assert "is in use by another skillrack process" in second.output()
        assert "Traceback" not in second.output()


def test_memory_store_runs_and_forgets(tmp_path: Path) -> None:
    with serving(tmp_path, args=("--store", "memory")) as served:
        task = send(served.url, probe_request(served.url, "echo", {}))
        assert task["status"]["state"] == "TASK_STATE_COMPLETED"
        assert "task store: memory" in served.output()
        # The approvals store is a file even then, and serve says where it is.
        assert "approvals store: sqlite " + str(tmp_path.resolve() / "skillrack-approvals.db") in (
            served.output()
        )
    assert not (tmp_path / "skillrack-tasks.db").exists()


@pytest.mark.slow
def test_workers_share_a_sqlite_file(tmp_path: Path) -> None:
    with serving(tmp_path, args=("--workers", "2", "--store", "sqlite:///shared.db")) as served:
        url = served.url
        assert "workers: 2" in served.output() and "cluster mode" in served.output()
        workers = child_pids(served.process.pid)
        assert len(workers) >= 2, workers
        # Fresh connections land on either worker; every task is visible from both.
        ids = [send(url, probe_request(url, "echo", {"text": str(n)}))["id"] for n in range(12)]
        assert {get_task(url, task_id)["status"]["state"] for task_id in ids} == {
            "TASK_STATE_COMPLETED"
        }
        ticking = send(url, probe_request(url, "ticker", {"ticks": 200}), immediately=True)
        wait_for_state(url, ticking["id"], {"TASK_STATE_WORKING"})
        canceled = rpc(url, "CancelTask", {"id": ticking["id"]})
        assert canceled["result"]["status"]["state"] == "TASK_STATE_CANCELED", canceled
        time.sleep(0.5)
        assert get_task(url, ticking["id"])["status"]["state"] == "TASK_STATE_CANCELED"


def test_workers_with_the_memory_store_are_refused_in_one_line(tmp_path: Path) -> None:
    run = subprocess.run(
        [skillrack_command(), "serve", "--workers", "2", "--store", "memory"],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
        cwd=tmp_path,
        env={**os.environ, "SKILLRACK_LOAD_PLUGINS": ""},
    )
    assert run.returncode == 1, run.stdout + run.stderr
    assert run.stderr.count("\n") == 1 and "--store memory" in run.stderr, run.stderr


@pytest.mark.parametrize(
    "args, fragment",
    [
        (["--store", "sqlite:///no/such/directory/t.db"], "does not exist"),
        (["--store", "redis://localhost"], "is not one of"),
    ],
)
def test_unusable_store_is_refused_before_serving(
    args: list[str],
    fragment: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("SKILLRACK_LOAD_PLUGINS", "")
    monkeypatch.chdir(tmp_path)
    assert main(["serve", *args]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and fragment in err, err


def test_workers_must_be_positive(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["serve", "--workers", "0"])
    assert exit_.value.code == 2 and "positive" in capsys.readouterr().err
