"""A blocking SendMessage in cluster mode takes the blocking path and keeps every cluster guarantee.

Replicas A and B share one SQLite file in cluster mode (a ClusterTaskStore
each, with a2a-sdk's event stream), served in this process; the turn of a
blocking call on A runs without a2a-sdk's ActiveTask, yet writes the same
event log a2a-sdk's path writes, so a SubscribeToTask through B sees every
event, and a CancelTask through B ends the task and A's blocking call with
the cancelled task, as a2a-sdk's path would.  With real processes
(``--workers 2`` on SQLite, replicas on PostgreSQL), a process killed with
SIGKILL right after its blocking answers loses none of the tasks it answered.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from a2a.server.agent_execution.active_task_registry import ActiveTaskRegistry
from a2a.types import StreamResponse
from helpers.agent_harness import running_agent
from helpers.agent_skills import AllowAll, TestSkills
from helpers.builders import SkillsPlugin, registry_of
from helpers.postgres import fresh_database
from helpers.served_process import child_pids, probe_request, send, start
from helpers.waiting import wait_until

from skillrack import BaseSkill, BaseSkillContext, DataPart, IncomingMessage
from skillrack.host.config import Config
from skillrack.host.registry import Registry
from skillrack.protocol.messages import EXTENSION_URI
from skillrack.serve.server import with_store
from skillrack.testing.serve import HEADERS, get_task, rpc, skill_request, stream


async def ticks(message: IncomingMessage, context: BaseSkillContext) -> str:
    """One Artifact per tick (``tick-N``), 50 ms apart; as many ticks as the text says."""
    for n in range(int(message.text)):
        await context.artifact(DataPart({"tick": n}), name=f"tick-{n}")
        await asyncio.sleep(0.05)
    return "done"


@pytest.fixture(scope="module")
def registry() -> Registry:
    ticking = BaseSkill(id="ticks", name="Ticks", description="t", handler=ticks, cancellable=True)
    return registry_of(
        [("tests", TestSkills()), ("allow", AllowAll()), ("base", SkillsPlugin(ticking))]
    )


def cluster_config(directory: Path) -> Config:
    return with_store(Config(base_dir=directory), "sqlite:///tasks.db")


@pytest.fixture(scope="module")
def replicas(
    registry: Registry, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, str]]:
    """A and B, two agents in cluster mode on one SQLite file."""
    config = cluster_config(tmp_path_factory.mktemp("shared"))
    with (
        running_agent(registry, config, cluster=True) as a,
        running_agent(registry, config, cluster=True) as b,
    ):
        yield a, b


def send_message(base: str, params: Any) -> Any:
    body = {"jsonrpc": "2.0", "id": "s", "method": "SendMessage", "params": params}
    answer = httpx.post(base + "/", json=body, headers=HEADERS, timeout=60).json()
    assert "result" in answer, answer
    return answer["result"]["task"]


def ticking(count: int) -> dict[str, Any]:
    message = {
        "messageId": f"ticks-{time.monotonic_ns()}",
        "role": "ROLE_USER",
        "parts": [{"text": str(count)}],
        "metadata": {"skill": "ticks"},
    }
    return {"message": message}


def progressive(registry: Registry) -> dict[str, Any]:
    registered = registry.get("progressive")
    assert registered is not None
    data = skill_request("progressive", {}, registered.skill.version, registered.interface_digest)
    message = {
        "messageId": "progressive-one",
        "role": "ROLE_USER",
        "parts": [{"data": data}],
        "extensions": [EXTENSION_URI],
    }
    return {"message": message}


def blocking_in_background(base: str, params: Any) -> tuple[threading.Thread, list[Any]]:
    answers: list[Any] = []
    caller = threading.Thread(target=lambda: answers.append(send_message(base, params)))
    caller.start()
    return caller, answers


def running(base: str, skill: str) -> str:
    """The id of the one WORKING task of ``skill`` ``base`` can read (from the shared file)."""

    def found() -> str | None:
        for task in rpc(base, "ListTasks", {"pageSize": 100})["result"].get("tasks", []):
            working = task["status"]["state"] == "TASK_STATE_WORKING"
            if working and task["metadata"].get("skillrackSkill") == skill:
                return str(task["id"])
        return None

    return wait_until(found, f"a running task of {skill} seen through {base}")


def logged(database: Path, task_id: str) -> list[tuple[int, str, str]]:
    """The task's event log: (version, kind of event, state or artifact name), in order."""
    with sqlite3.connect(database) as connection:
        rows = connection.execute(
            "SELECT task_version, event_data FROM task_events WHERE task_id = ? ORDER BY seq",
            (task_id,),
        ).fetchall()
    found = []
    for version, data in rows:
        event = StreamResponse.FromString(data)
        kind = event.WhichOneof("payload")
        if kind == "artifact_update":
            what = event.artifact_update.artifact.name
        elif kind == "status_update":
            what = str(event.status_update.status.state)
        else:
            what = str(event.task.status.state)
        found.append((version, str(kind), what))
    return found


def test_the_blocking_path_is_taken_and_logs_what_a2a_sdk_logs(
    registry: Registry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    created: list[str] = []
    get_or_create = ActiveTaskRegistry.get_or_create

    async def counted(self: ActiveTaskRegistry, task_id: str, **kwargs: Any) -> Any:
        created.append(task_id)
        return await get_or_create(self, task_id, **kwargs)

    monkeypatch.setattr(ActiveTaskRegistry, "get_or_create", counted)
    logs = []
    for lean in (True, False):
        config = cluster_config(tmp_path / str(lean))
        config.base_dir.mkdir()
        with running_agent(registry, config, cluster=True, lean=lean) as base:
            # 0.5 s: in progress past the write-behind's 0.1 s, so other replicas can see
            # it running, and every event is logged for them.
            task = send_message(base, ticking(10))
            quick = send_message(base, progressive(registry))
        for answered in (task, quick):
            assert answered["status"]["state"] == "TASK_STATE_COMPLETED"
            assert (answered["id"] in created) is not lean  # no ActiveTask on the blocking path
        logs.append(logged(config.base_dir / "tasks.db", task["id"]))
        # Created and ended within one commit: no replica could have seen it running.
        assert logged(config.base_dir / "tasks.db", quick["id"]) == []
    ours, theirs = logs
    assert ours == theirs  # every event, in order, with a2a-sdk's versions
    assert [version for version, _, _ in ours] == list(range(1, len(ours) + 1))
    assert ours[0][1] == "task" and ours[-1][1] == "status_update"
    assert any(kind == "artifact_update" for _, kind, _ in ours)


def test_a_subscription_through_b_sees_every_event_of_a_blocking_call_on_a(
    replicas: tuple[str, str],
) -> None:
    a, b = replicas
    count = 30
    caller, answers = blocking_in_background(a, ticking(count))
    task_id = running(b, "ticks")
    events = list(stream(b, "SubscribeToTask", {"id": task_id}))
    caller.join(timeout=30)
    snapshot = events[0]["task"]
    assert snapshot["id"] == task_id
    names = [artifact["name"] for artifact in snapshot.get("artifacts", [])]
    names += [e["artifactUpdate"]["artifact"]["name"] for e in events if "artifactUpdate" in e]
    assert names == [f"tick-{n}" for n in range(count)]  # none missing, none twice
    assert events[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
    assert answers[0]["status"]["state"] == "TASK_STATE_COMPLETED"
    assert get_task(b, task_id) == answers[0]


def test_a_cancel_through_b_ends_a_blocking_call_on_a(replicas: tuple[str, str]) -> None:
    a, b = replicas
    caller, answers = blocking_in_background(a, ticking(400))  # 20 s, unless cancelled
    task_id = running(b, "ticks")
    wait_until(lambda: get_task(b, task_id).get("artifacts"), "A's first tick seen through B")
    cancelled = rpc(b, "CancelTask", {"id": task_id})
    assert cancelled["result"]["status"]["state"] == "TASK_STATE_CANCELED", cancelled
    started = time.monotonic()
    caller.join(timeout=30)
    assert time.monotonic() - started < 5  # A stopped at its next save, not at the 400th tick
    [answer] = answers
    assert answer["status"]["state"] == "TASK_STATE_CANCELED"
    time.sleep(0.5)  # A's handler is stopped: nothing more is written meanwhile
    assert get_task(a, task_id) == get_task(b, task_id) == answer


def test_a_cancel_through_a_ends_its_own_blocking_call(replicas: tuple[str, str]) -> None:
    a, b = replicas
    caller, answers = blocking_in_background(a, ticking(400))
    task_id = running(a, "ticks")
    cancelled = rpc(a, "CancelTask", {"id": task_id})
    assert cancelled["result"]["status"]["state"] == "TASK_STATE_CANCELED", cancelled
    caller.join(timeout=30)
    [answer] = answers
    assert answer["status"]["state"] == "TASK_STATE_CANCELED"
    assert get_task(b, task_id)["status"]["state"] == "TASK_STATE_CANCELED"


# Real processes ----------------------------------------------------------------------------------


def answered_then_killed(url: str, stop: Any, count: int = 20) -> list[str]:
    """``count`` blocking calls answered COMPLETED, then ``stop()`` at once: their ids."""
    request = probe_request(url, "echo", {"text": "kept"})
    ids = []
    for _ in range(count):
        with httpx.Client(timeout=10) as client:  # fresh connections: either worker
            task = send(url, request, client=client)
        assert task["status"]["state"] == "TASK_STATE_COMPLETED", task
        ids.append(task["id"])
    stop()
    return ids


@pytest.mark.slow
def test_sigkill_of_workers_loses_no_answered_task(tmp_path: Path) -> None:
    args = ("--workers", "2", "--store", "sqlite:///shared.db")
    served = start(tmp_path, args=args).wait_ready()

    def kill_all() -> None:
        for pid in child_pids(served.process.pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        served.stop(signal.SIGKILL)

    ids = answered_then_killed(served.url, kill_all)
    again = start(tmp_path, args=("--store", "sqlite:///shared.db")).wait_ready()
    try:
        assert {get_task(again.url, i)["status"]["state"] for i in ids} == {"TASK_STATE_COMPLETED"}
    finally:
        again.stop()


@pytest.mark.slow
def test_sigkill_of_a_replica_loses_no_answered_task(tmp_path: Path) -> None:
    with fresh_database() as url:
        a = start(tmp_path / "a", args=("--store", url)).wait_ready()
        ids = answered_then_killed(a.url, lambda: a.stop(signal.SIGKILL))
        b = start(tmp_path / "b", args=("--store", url)).wait_ready()
        try:
            states = {get_task(b.url, i)["status"]["state"] for i in ids}
            assert states == {"TASK_STATE_COMPLETED"}
        finally:
            b.stop()
