"""The memory store evicts settled tasks past ``memory_max_tasks`` or ``memory_task_ttl``.

Unit tests drive ``BoundedMemoryTaskStore`` with an injected clock; one test
runs ``skillrack serve --store memory`` with a small bound and asks for an
evicted task over the wire.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from a2a.server.context import ServerCallContext
from a2a.server.tasks import InMemoryTaskStore
from a2a.types import ListTasksRequest, Task, TaskState, TaskStatus
from helpers.served_process import probe_request, send, serving, write_config

from skillrack.host.config import ConfigError, load_config
from skillrack.serve.stores.bounded_memory import BoundedMemoryTaskStore
from skillrack.serve.stores.storage import open_storage, parse_store
from skillrack.testing.serve import get_task, rpc

COMPLETED = TaskState.TASK_STATE_COMPLETED
WORKING = TaskState.TASK_STATE_WORKING


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _owner(context: ServerCallContext) -> str:
    return context.tenant


def _task(task_id: str, state: TaskState) -> Task:
    return Task(id=task_id, context_id="c", status=TaskStatus(state=state))


CONTEXT = ServerCallContext(tenant="alice")


async def _ids(store: BoundedMemoryTaskStore, context: ServerCallContext = CONTEXT) -> set[str]:
    listed = await store.list(ListTasksRequest(page_size=100), context)
    return {task.id for task in listed.tasks}


async def test_settled_tasks_past_the_count_are_evicted_oldest_first() -> None:
    store = BoundedMemoryTaskStore(_owner, max_tasks=3, ttl=0, clock=Clock())
    for n in range(5):
        await store.save(_task(f"t{n}", COMPLETED), CONTEXT)
    assert await _ids(store) == {"t2", "t3", "t4"}
    assert await store.get("t0", CONTEXT) is None
    assert await store.get("t4", CONTEXT) is not None
    assert store.settled == 3


async def test_the_count_is_over_every_owner() -> None:
    store = BoundedMemoryTaskStore(_owner, max_tasks=2, ttl=0, clock=Clock())
    bob = ServerCallContext(tenant="bob")
    await store.save(_task("a", COMPLETED), CONTEXT)
    await store.save(_task("b", COMPLETED), bob)
    await store.save(_task("c", COMPLETED), bob)
    assert await _ids(store) == set()
    assert await _ids(store, bob) == {"b", "c"}
    # Each owner's tasks stay out of the other's reach.
    assert await store.get("b", CONTEXT) is None


async def test_settled_tasks_older_than_the_ttl_are_evicted() -> None:
    clock = Clock()
    store = BoundedMemoryTaskStore(_owner, max_tasks=0, ttl=60, clock=clock)
    await store.save(_task("old", COMPLETED), CONTEXT)
    clock.now += 30
    await store.save(_task("new", TaskState.TASK_STATE_FAILED), CONTEXT)
    clock.now += 29
    assert await _ids(store) == {"old", "new"}
    clock.now += 1  # "old" has been settled 60 s
    assert await store.get("old", CONTEXT) is None  # evicted on a read, no save needed
    assert await _ids(store) == {"new"}
    clock.now += 30
    assert await _ids(store) == set()


async def test_tasks_not_settled_are_never_evicted() -> None:
    clock = Clock()
    store = BoundedMemoryTaskStore(_owner, max_tasks=1, ttl=10, clock=clock)
    active = [
        WORKING,
        TaskState.TASK_STATE_SUBMITTED,
        TaskState.TASK_STATE_INPUT_REQUIRED,
        TaskState.TASK_STATE_AUTH_REQUIRED,
    ]
    for n, state in enumerate(active):
        await store.save(_task(f"a{n}", state), CONTEXT)
    for n in range(3):
        await store.save(_task(f"done{n}", TaskState.TASK_STATE_CANCELED), CONTEXT)
    clock.now += 1000
    await store.save(_task("done3", TaskState.TASK_STATE_REJECTED), CONTEXT)
    assert await _ids(store) == {"a0", "a1", "a2", "a3", "done3"}


async def test_a_settled_task_saved_again_as_active_is_not_evicted() -> None:
    clock = Clock()
    store = BoundedMemoryTaskStore(_owner, max_tasks=1, ttl=10, clock=clock)
    await store.save(_task("t", COMPLETED), CONTEXT)
    await store.save(_task("t", WORKING), CONTEXT)
    await store.save(_task("other", COMPLETED), CONTEXT)
    await store.save(_task("last", COMPLETED), CONTEXT)
    clock.now += 100
    assert await _ids(store) == {"t"}
    assert store.settled == 0


async def test_a_settled_task_saved_again_keeps_its_place() -> None:
    store = BoundedMemoryTaskStore(_owner, max_tasks=2, ttl=0, clock=Clock())
    await store.save(_task("first", COMPLETED), CONTEXT)
    await store.save(_task("second", COMPLETED), CONTEXT)
    await store.save(_task("first", COMPLETED), CONTEXT)  # e.g. a last artifact
    await store.save(_task("third", COMPLETED), CONTEXT)
    assert await _ids(store) == {"second", "third"}


async def test_delete_forgets_the_task() -> None:
    store = BoundedMemoryTaskStore(_owner, max_tasks=2, ttl=0, clock=Clock())
    await store.save(_task("a", COMPLETED), CONTEXT)
    await store.delete("a", CONTEXT)
    assert store.settled == 0
    await store.save(_task("b", COMPLETED), CONTEXT)
    await store.save(_task("c", COMPLETED), CONTEXT)
    assert await _ids(store) == {"b", "c"}


def test_open_storage_bounds_the_memory_store_unless_both_limits_are_off(
    tmp_path: Path,
) -> None:
    spec = parse_store("memory", tmp_path)
    bounded = open_storage(spec, owner_resolver=_owner, memory_max_tasks=5, memory_task_ttl=0)
    assert isinstance(bounded.task_store, BoundedMemoryTaskStore)
    plain = open_storage(spec, owner_resolver=_owner, memory_max_tasks=0, memory_task_ttl=0)
    assert type(plain.task_store) is InMemoryTaskStore


def test_the_limits_are_configured_and_checked(tmp_path: Path) -> None:
    path = tmp_path / "skillrack.toml"
    path.write_text("[server]\nmemory_max_tasks = 0\nmemory_task_ttl = 0\n", encoding="utf-8")
    server = load_config(path).server
    assert (server.memory_max_tasks, server.memory_task_ttl) == (0, 0)
    assert load_config(None).server.memory_max_tasks == 10_000
    for line, key in [
        ("memory_max_tasks = -1", "server.memory_max_tasks"),
        ("memory_task_ttl = -5.0", "server.memory_task_ttl"),
        ('memory_max_tasks = "many"', "server.memory_max_tasks"),
        ("memory_max_tasks = 1.5", "server.memory_max_tasks"),
    ]:
        path.write_text(f"[server]\n{line}\n", encoding="utf-8")
        with pytest.raises(ConfigError) as caught:
            load_config(path)
        message = str(caught.value)
        assert message.startswith(key) and "or 0 (turns it off)" in message and "\n" not in message


@pytest.mark.slow
def test_a_served_memory_store_forgets_its_oldest_settled_tasks(tmp_path: Path) -> None:
    config = write_config(tmp_path, 'store = "memory"\nmemory_max_tasks = 3\n')
    with serving(tmp_path, config=config) as served:
        url = served.url
        request = probe_request(url, "echo", {"text": "hi"})
        ids = [send(url, request)["id"] for _ in range(5)]
        gone = rpc(url, "GetTask", {"id": ids[0]})
        assert gone["error"]["code"] == -32001, gone  # TaskNotFoundError
        assert "error" in rpc(url, "GetTask", {"id": ids[1]})
        for task_id in ids[2:]:
            assert get_task(url, task_id)["status"]["state"] == "TASK_STATE_COMPLETED"
        listed = rpc(url, "ListTasks", {"pageSize": 100})["result"]["tasks"]
        assert {task["id"] for task in listed} == set(ids[2:])
