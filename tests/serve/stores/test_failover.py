"""Replicas that die: real ``skillrack serve`` processes on PostgreSQL, one of them killed.

Two replicas share a fresh database with ``task_lease_seconds = 2``.  Replica A
runs tasks (two in progress, one of them streamed through replica B, one
waiting for input, one waiting for an approval); A is killed with SIGKILL.
Within the lease and a few seconds, B ends both running tasks
``TASK_STATE_FAILED`` with a status message naming A (counted in B's
``skillrack_orphaned_tasks_total``), the stream on B receives that terminal
event, the waiting tasks still wait (the input is answered through B; the
approval is granted with ``skillrack approvals grant`` on B's configuration
and the caller continues through B), and B goes on serving.  What the
clients see is checked against an independent SQL read of the tables.
"""

from __future__ import annotations

import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from helpers.postgres import fresh_database, sql_rows, stored_states
from helpers.scraped import orphans, refusals
from helpers.served_process import probe_request, send, start, write_config
from helpers.waiting import wait_until

from skillrack.serve.bindings.operator_endpoints import LIVEZ_PATH, READYZ_PATH
from skillrack.testing.serve import (
    HEADERS,
    error_of,
    get_task,
    message,
    skillrack_command,
    stream,
    wait_for_state,
)

#: Served processes on PostgreSQL, and a lease to wait out: seconds per test.
pytestmark = pytest.mark.slow

LEASE_S = 2.0
#: The issue's target: orphans end within the lease plus this.
MARGIN_S = 5.0
GRANT = (skillrack_command(), "approvals", "grant")
#: The kill test's approval rule: the probe's ``echo`` waits for an operator.
APPROVAL_RULE = (
    '\n[[plugins.approval_rules.rule]]\neffect = "require"\nskills = ["echo"]\n'
    "authenticated = false\n"
)
#: shutdown_grace of the drain test: longer than the short task, shorter than the long one.
GRACE_S = 4.0


@pytest.fixture
def pg_url() -> Iterator[str]:
    with fresh_database() as url:
        yield url


def _replicas(tmp_path: Path, pg_url: str, count: int = 2, extra: str = "") -> list[Any]:
    config = write_config(tmp_path, f"task_lease_seconds = {LEASE_S}\n{extra}")
    started = [
        start(tmp_path / f"replica-{index}", args=("--store", pg_url), config=config)
        for index in range(count)
    ]
    try:
        return [served.wait_ready() for served in started]
    except BaseException:
        for served in started:
            served.stop()
        raise


def test_tasks_of_a_killed_replica_end_failed_on_the_survivor(pg_url: str, tmp_path: Path) -> None:
    a, b = _replicas(tmp_path, pg_url, extra=APPROVAL_RULE)
    try:
        ticking = probe_request(a.url, "ticker", {"ticks": 1000, "interval": 0.1})
        running = send(a.url, ticking, immediately=True)
        streamed = send(a.url, ticking, immediately=True)
        waiting = send(a.url, probe_request(a.url, "ask", {}))
        assert waiting["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
        approving = send(a.url, probe_request(a.url, "echo", {"text": "approved"}))
        assert approving["status"]["state"] == "TASK_STATE_INPUT_REQUIRED", approving
        [asked] = [p["data"] for p in approving["status"]["message"]["parts"] if "data" in p]
        approval_id = asked["skillrack_approval"]["approval_id"]
        for task in (running, streamed):
            wait_for_state(b.url, task["id"], {"TASK_STATE_WORKING"})
        leases = {
            row["task_id"]: row["replica"]
            for row in sql_rows(pg_url, "SELECT task_id, replica FROM skillrack_task_leases")
        }
        assert set(leases) == {running["id"], streamed["id"]}  # the waiting tasks hold none
        [lost] = set(leases.values())
        assert f":{a.process.pid}:" in lost
        assert orphans(b.url) == {"failed": 0, "restarted": 0}

        seen: list[Any] = []

        def subscribe_through_b() -> None:
            seen.extend(stream(b.url, "SubscribeToTask", {"id": streamed["id"]}, timeout=60))

        subscriber = threading.Thread(target=subscribe_through_b)
        subscriber.start()
        deadline = time.monotonic() + 15
        while not any("artifactUpdate" in event for event in seen):  # A's ticks, relayed by B
            assert time.monotonic() < deadline and subscriber.is_alive(), seen
            time.sleep(0.05)

        a.process.send_signal(signal.SIGKILL)
        a.process.wait(timeout=10)
        killed = time.monotonic()
        subscriber.join(timeout=LEASE_S + MARGIN_S + 10)
        ended = time.monotonic() - killed
        assert not subscriber.is_alive(), "the stream on B did not end"
        assert ended < LEASE_S + MARGIN_S, ended
        final = seen[-1]["statusUpdate"]["status"]
        assert final["state"] == "TASK_STATE_FAILED", seen[-1]

        for task in (running, streamed):
            failed = wait_for_state(b.url, task["id"], {"TASK_STATE_FAILED"}, timeout=5)
            error = error_of(failed)
            assert error["code"] == "output_invalid"
            assert lost in error["message"], error
        stored = stored_states(pg_url)
        assert stored[running["id"]] == stored[streamed["id"]] == "TASK_STATE_FAILED"
        assert stored[waiting["id"]] == stored[approving["id"]] == "TASK_STATE_INPUT_REQUIRED"
        # B counts the two orphans it failed (once each, after the commit), not the waiting.
        wait_until(lambda: orphans(b.url)["failed"] >= 2, "B to count the orphans it ended")
        assert orphans(b.url) == {"failed": 2, "restarted": 0}
        assert sql_rows(pg_url, "SELECT task_id FROM skillrack_task_leases") == []
        events = sql_rows(
            pg_url,
            f"SELECT task_version FROM task_events WHERE task_id = '{streamed['id']}' ORDER BY seq",
        )
        versions = [row["task_version"] for row in events]
        assert versions == sorted(versions) and len(set(versions)) == len(versions)

        # The waiting tasks kept waiting; B takes the answer, and the approval granted
        # against the shared store (B's configuration) lets the caller go on through B.
        answered = send(b.url, {"window": "tonight"}, task_id=waiting["id"])
        assert answered["status"]["state"] == "TASK_STATE_COMPLETED", answered
        cli_config = tmp_path / "operator.toml"
        cli_config.write_text(f'[server]\nstore = "{pg_url}"\n')
        granted = subprocess.run(
            [*GRANT, approval_id, "--config", str(cli_config), "--by", "olga", "--reason", "ok"],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert granted.returncode == 0, granted.stderr
        approved = send(b.url, {"continue": True}, task_id=approving["id"])
        assert approved["status"]["state"] == "TASK_STATE_COMPLETED", approved
        ticked = send(b.url, probe_request(b.url, "ticker", {"ticks": 1, "interval": 0}))
        assert ticked["status"]["state"] == "TASK_STATE_COMPLETED", ticked
        stored = stored_states(pg_url)
        assert stored[waiting["id"]] == stored[approving["id"]] == "TASK_STATE_COMPLETED"
        assert get_task(b.url, waiting["id"])["status"]["state"] == "TASK_STATE_COMPLETED"
    finally:
        for served in (a, b):
            served.stop()


def test_sigterm_drains_finishes_what_it_can_and_fails_the_rest(
    pg_url: str, tmp_path: Path
) -> None:
    config = write_config(tmp_path, f"task_lease_seconds = {LEASE_S}\nshutdown_grace = {GRACE_S}\n")
    started = [
        start(tmp_path / f"replica-{index}", args=("--store", pg_url), config=config)
        for index in range(2)
    ]
    a, b = (served.wait_ready() for served in started)
    try:
        assert httpx.get(a.url + READYZ_PATH, timeout=5).json()["status"] == "ready"
        short = probe_request(a.url, "ticker", {"ticks": 10, "interval": 0.2})  # 2 s < grace
        long = probe_request(a.url, "ticker", {"ticks": 1000, "interval": 0.1})
        finished: list[Any] = []
        blocking = threading.Thread(target=lambda: finished.append(send(a.url, short)))
        blocking.start()
        running = send(a.url, long, immediately=True)
        waiting = send(a.url, probe_request(a.url, "ask", {}))
        wait_for_state(a.url, running["id"], {"TASK_STATE_WORKING"})
        seen: list[Any] = []
        subscriber = threading.Thread(
            target=lambda: seen.extend(
                stream(a.url, "SubscribeToTask", {"id": running["id"]}, timeout=60)
            )
        )
        subscriber.start()
        while not any("artifactUpdate" in event for event in seen):
            assert subscriber.is_alive(), seen
            time.sleep(0.05)
        [lost] = {
            row["replica"] for row in sql_rows(pg_url, "SELECT replica FROM skillrack_task_leases")
        }

        a.process.send_signal(signal.SIGTERM)
        stopped = time.monotonic()
        deadline = stopped + 5
        while httpx.get(a.url + READYZ_PATH, timeout=5).status_code != 503:
            assert time.monotonic() < deadline, "readyz never turned 503"
            time.sleep(0.02)
        readiness = httpx.get(a.url + READYZ_PATH, timeout=5).json()
        assert readiness["status"] == "unready" and "shutdown" in readiness["checks"]
        assert httpx.get(a.url + LIVEZ_PATH, timeout=5).status_code == 200

        # New messages are refused, retryably, in each HTTP binding's form.
        refused = httpx.post(
            a.url + "/",
            json={
                "jsonrpc": "2.0",
                "id": "1",
                "method": "SendMessage",
                "params": {"message": message(probe_request(a.url, "echo", {}))},
            },
            headers=HEADERS,
            timeout=5,
        )
        assert refused.status_code == 503 and refused.headers["retry-after"] == "1"
        [info] = refused.json()["error"]["data"]
        assert info["metadata"]["code"] == "resource_limit_exceeded"
        rest = httpx.post(a.url + "/message:send", json={}, headers=HEADERS, timeout=5)
        assert rest.status_code == 503 and rest.headers["retry-after"] == "1"
        assert rest.json()["error"]["status"] == "UNAVAILABLE"
        assert refusals(a.url, "draining") == 2  # /metrics answers while draining
        assert refusals(a.url, "task_store_unavailable") == 0
        # Reads go on while draining.
        assert get_task(a.url, waiting["id"])["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"

        blocking.join(timeout=GRACE_S + 10)
        assert finished and finished[0]["status"]["state"] == "TASK_STATE_COMPLETED", finished
        subscriber.join(timeout=GRACE_S + 15)
        assert not subscriber.is_alive(), "the stream of the unfinished task was not closed"
        final = seen[-1]["statusUpdate"]["status"]
        assert final["state"] == "TASK_STATE_FAILED", seen[-1]
        failure = final["message"]["parts"][0]["data"]["error"]
        assert failure["code"] == "output_invalid"
        assert lost in failure["message"] and "shutdown_grace" in failure["message"]
        assert a.process.wait(timeout=GRACE_S + 20) is not None
        assert time.monotonic() - stopped < GRACE_S + 15

        stored = stored_states(pg_url)
        assert stored[finished[0]["id"]] == "TASK_STATE_COMPLETED"
        assert stored[running["id"]] == "TASK_STATE_FAILED"
        assert stored[waiting["id"]] == "TASK_STATE_INPUT_REQUIRED"
        assert sql_rows(pg_url, "SELECT task_id FROM skillrack_task_leases") == []
        # The drain failed its own task: the survivor ended no orphan.
        assert orphans(b.url) == {"failed": 0, "restarted": 0}
        answered = send(b.url, {"window": "tonight"}, task_id=waiting["id"])
        assert answered["status"]["state"] == "TASK_STATE_COMPLETED", answered
    finally:
        for served in started:
            served.stop()
