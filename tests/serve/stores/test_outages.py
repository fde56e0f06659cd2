"""The task store goes away and comes back: a real ``skillrack serve`` on a PostgreSQL of its own.

The test's own PostgreSQL (:mod:`helpers.own_postgres`; the machine's is
shared) is stopped with a fast shutdown while a task runs.  The replica stays
up, reports unready, and answers every A2A request at once with a retryable
503 naming the store (no request waits past a few seconds); when the server
is started again it serves again without a restart, and the task that ran
across the outage ends with its result, as an SQL read of the table shows.
The outage is logged once and counted once in
``skillrack_task_store_outages_total``, however many requests met it; each
503 counts in ``skillrack_unavailable_refusals_total``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from helpers.own_postgres import OwnPostgres, own_postgres
from helpers.scraped import refusals
from helpers.served_process import probe_request, send, start, write_config

from skillrack.serve.bindings.operator_endpoints import READYZ_PATH
from skillrack.testing.serve import HEADERS, message, wait_for_state

pytestmark = pytest.mark.slow

LEASE_S = 1.5
#: No request may take longer than this while the store is down.
FAST_S = 5.0


@pytest.fixture
def postgres() -> Iterator[OwnPostgres]:
    with own_postgres() as server:
        yield server


def _states(server: OwnPostgres) -> dict[str, str]:
    import asyncio

    import asyncpg  # type: ignore[import-untyped]

    async def read() -> list[Any]:
        connection = await asyncpg.connect(server.url.replace("+asyncpg", ""), timeout=5)
        try:
            return list(await connection.fetch("SELECT id, status FROM tasks"))
        finally:
            await connection.close()

    return {
        row["id"]: (json.loads(row["status"]) if isinstance(row["status"], str) else row["status"])[
            "state"
        ]
        for row in asyncio.run(read())
    }


def _outages(url: str) -> float:
    """``skillrack_task_store_outages_total`` as the agent's /metrics says now."""
    text = httpx.get(url + "/metrics", timeout=10).text
    [line] = [x for x in text.splitlines() if x.startswith("skillrack_task_store_outages_total")]
    return float(line.split()[-1])


def _send_echo(url: str) -> tuple[httpx.Response, float]:
    body = {
        "jsonrpc": "2.0",
        "id": "1",
        "method": "SendMessage",
        "params": {"message": message(probe_request(url, "echo", {"text": "x"}))},
    }
    began = time.monotonic()
    answer = httpx.post(url + "/", json=body, headers=HEADERS, timeout=30)
    return answer, time.monotonic() - began


def test_a_database_outage_is_ridden_out(postgres: OwnPostgres, tmp_path: Path) -> None:
    config = write_config(tmp_path, f"task_lease_seconds = {LEASE_S}\n")
    agent = start(tmp_path / "replica", args=("--store", postgres.url), config=config)
    agent.wait_ready()
    try:
        request = probe_request(agent.url, "echo", {"text": "x"})  # the digest, read now
        across = send(
            agent.url,
            probe_request(agent.url, "ticker", {"ticks": 40, "interval": 0.2}),
            immediately=True,
        )
        wait_for_state(agent.url, across["id"], {"TASK_STATE_WORKING"})
        assert _outages(agent.url) == 0

        postgres.stop()
        down = time.monotonic()
        refused = None
        answered_503 = 0
        while refused is None:
            answer, took = _send_echo(agent.url)
            assert took < FAST_S, f"a request waited {took:.1f} s while the store was down"
            if answer.status_code == 503:
                refused = answer
                answered_503 += 1
            assert time.monotonic() - down < LEASE_S + FAST_S, answer.text
        assert refused.headers["retry-after"] == "2"
        error = refused.json()["error"]
        assert error["message"].startswith("the task store is unreachable")
        assert error["data"][0]["metadata"]["code"] == "resource_limit_exceeded"
        ready = httpx.get(agent.url + READYZ_PATH, timeout=10)
        assert ready.status_code == 503 and ready.json()["checks"]["task_store"] != "ok"
        assert agent.process.poll() is None  # the process stays up
        for _ in range(3):  # more requests meet the same outage: still one
            assert _send_echo(agent.url)[0].status_code == 503
            answered_503 += 1
        time.sleep(LEASE_S)  # and the lease keeper's rounds meet it too
        assert _outages(agent.url) == 1
        assert refusals(agent.url, "task_store_unavailable") == answered_503

        postgres.start()
        back = time.monotonic()
        logged = len(agent.output())
        while httpx.get(agent.url + READYZ_PATH, timeout=10).status_code != 200:
            assert time.monotonic() - back < LEASE_S + FAST_S, "not ready after the store returned"
            time.sleep(0.1)
        echoed = send(agent.url, request)
        assert echoed["status"]["state"] == "TASK_STATE_COMPLETED", echoed
        ended = wait_for_state(agent.url, across["id"], {"TASK_STATE_COMPLETED"}, timeout=30)
        assert ended["artifacts"], ended
        stored = _states(postgres)
        assert stored[across["id"]] == "TASK_STATE_COMPLETED"
        assert stored[echoed["id"]] == "TASK_STATE_COMPLETED"
        # Once the database is back, nothing fails.
        assert "Traceback" not in agent.output()[logged:], agent.output()[logged:]
        # One outage: logged once when it began and once when it ended, counted once.
        assert agent.output().count("task leases: cannot renew or check leases") == 1
        assert agent.output().count("task leases: renewed again") == 1
        assert _outages(agent.url) == 1
        assert refusals(agent.url, "task_store_unavailable") == answered_503
        assert refusals(agent.url, "draining") == 0
    finally:
        agent.stop()


def test_two_replicas_under_load_lose_nothing_across_a_restart(
    postgres: OwnPostgres, tmp_path: Path
) -> None:
    """PostgreSQL restarted while clients keep both replicas busy: nothing hangs or is lost."""
    import threading

    config = write_config(tmp_path, f"task_lease_seconds = {LEASE_S}\n")
    started = [
        start(tmp_path / f"replica-{index}", args=("--store", postgres.url), config=config)
        for index in range(2)
    ]
    agents = [served.wait_ready() for served in started]
    try:
        requests = [
            probe_request(agent.url, "ticker", {"ticks": 3, "interval": 0.1}) for agent in agents
        ]
        completed: list[str] = []
        outcomes: dict[str, int] = {}
        slowest = [0.0]
        stop = threading.Event()
        lock = threading.Lock()

        def client(index: int) -> None:
            agent = agents[index % 2]
            body = {"jsonrpc": "2.0", "id": "1", "method": "SendMessage"}
            with httpx.Client(timeout=30) as http:
                while not stop.is_set():
                    body["params"] = {"message": message(requests[index % 2])}
                    began = time.monotonic()
                    try:
                        answer = http.post(agent.url + "/", json=body, headers=HEADERS)
                        task = answer.json().get("result", {}).get("task", {})
                        state = task.get("status", {}).get("state") or str(answer.status_code)
                    except httpx.HTTPError as exc:
                        task, state = {}, type(exc).__name__
                    with lock:
                        slowest[0] = max(slowest[0], time.monotonic() - began)
                        outcomes[state] = outcomes.get(state, 0) + 1
                        if state == "TASK_STATE_COMPLETED":
                            completed.append(task["id"])
                    if state != "TASK_STATE_COMPLETED":
                        stop.wait(0.1)

        clients = [threading.Thread(target=client, args=(index,)) for index in range(4)]
        for thread in clients:
            thread.start()
        time.sleep(2)
        postgres.stop()
        time.sleep(3)
        postgres.start()
        back = time.monotonic()
        for agent in agents:
            while httpx.get(agent.url + READYZ_PATH, timeout=10).status_code != 200:
                assert time.monotonic() - back < LEASE_S + FAST_S, "not ready after the restart"
                time.sleep(0.1)
        time.sleep(2)
        stop.set()
        for thread in clients:
            thread.join(timeout=60)

        assert outcomes.get("TASK_STATE_COMPLETED", 0) > 0 and outcomes.get("503", 0) > 0, outcomes
        # Requests in flight when the database went away get the same 503 as later ones
        # (never JSON-RPC "internal error"); from the first failed connection on, each is
        # a 503 at once.
        others = sum(n for k, n in outcomes.items() if k not in ("TASK_STATE_COMPLETED", "503"))
        assert others == 0, outcomes
        assert slowest[0] < FAST_S + 2, f"a request took {slowest[0]:.1f} s ({outcomes})"
        for agent in agents:
            assert agent.process.poll() is None
            echoed = send(agent.url, probe_request(agent.url, "echo", {"text": "after"}))
            assert echoed["status"]["state"] == "TASK_STATE_COMPLETED"
        # Every task a client was told completed is stored completed; none is left running.
        deadline = time.monotonic() + 10
        while True:
            stored = _states(postgres)
            running = [
                i for i, s in stored.items() if s in ("TASK_STATE_SUBMITTED", "TASK_STATE_WORKING")
            ]
            if not running or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert running == [], running
        assert all(stored.get(task_id) == "TASK_STATE_COMPLETED" for task_id in completed)
    finally:
        for served in started:
            served.stop()
