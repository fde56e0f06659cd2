"""The MCP endpoint of a replica that drains, or whose task store is down: refused retryably.

A real ``skillrack serve --mcp`` (the probe skills).  While it drains
(``SIGTERM`` with a long task still running, so it waits ``shutdown_grace``),
a ``tools/call``, ``skillrack_resume`` included, starts no task: HTTP 503 with
``Retry-After`` and the JSON-RPC error naming the drain, which the MCP SDK's
client surfaces as it is; each counts in
``skillrack_unavailable_refusals_total{reason="draining"}``; ``tools/list``
still answers.  While its PostgreSQL (the test's own) is stopped, a
``tools/call`` already running and every later one get the store's 503 at
once, never ``internal error``; ``tools/list`` answers; once the database is
back, a call completes again.
"""

from __future__ import annotations

import asyncio
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from helpers.own_postgres import OwnPostgres, own_postgres
from helpers.scraped import refusals
from helpers.served_process import probe_request, send, start, write_config

pytest.importorskip("mcp")

from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError

from skillrack.serve.bindings.operator_endpoints import READYZ_PATH
from skillrack.testing.serve import rpc, wait_for_state

MCP_HEADERS = {
    "Accept": "application/json, text/event-stream",
    "MCP-Protocol-Version": "2025-11-25",
}
STORE_NAMED = "the task store is unreachable"
LEASE_S = 1.5
#: No request may take longer than this while the store is down.
FAST_S = 5.0


def _mcp(url: str, method: str, params: dict[str, Any], timeout: float = 30) -> httpx.Response:
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    return httpx.post(url + "/mcp", json=body, headers=MCP_HEADERS, timeout=timeout)


def _call(url: str, tool: str, arguments: dict[str, Any], timeout: float = 30) -> httpx.Response:
    return _mcp(url, "tools/call", {"name": tool, "arguments": arguments}, timeout)


def _tools(url: str) -> list[str]:
    listed = _mcp(url, "tools/list", {})
    assert listed.status_code == 200, listed.text
    return [tool["name"] for tool in listed.json()["result"]["tools"]]


def _assert_refused(answer: httpx.Response, retry_after: str, starts: str) -> None:
    """HTTP 503, ``Retry-After``, and a JSON-RPC error carrying the draft's code."""
    assert answer.status_code == 503, (answer.status_code, answer.text)
    assert answer.headers["retry-after"] == retry_after
    payload = answer.json()
    assert payload["jsonrpc"] == "2.0", payload
    error = payload["error"]
    assert error["code"] == -32000 and error["message"].startswith(starts), error
    assert error["data"][0]["metadata"]["code"] == "resource_limit_exceeded", error


def _sdk_call(url: str, tool: str, arguments: dict[str, Any]) -> MCPError:
    """What the MCP SDK's own client raises for a refused call."""

    async def go() -> MCPError:
        try:
            async with (
                create_mcp_http_client() as http,
                Client(streamable_http_client(url + "/mcp", http_client=http)) as client,
            ):
                await client.call_tool(tool, arguments)
        except MCPError as exc:
            return exc
        except BaseExceptionGroup as group:  # the SDK's task groups wrap it, nested
            matched, _ = group.split(MCPError)
            while isinstance(matched, BaseExceptionGroup):
                matched = matched.exceptions[0]
            if matched is None:
                raise
            return matched
        raise AssertionError("a draining replica ran an MCP tool call")

    return asyncio.run(go())


def test_a_draining_replica_refuses_mcp_tool_calls_retryably(tmp_path: Path) -> None:
    tmp_path.mkdir(exist_ok=True)
    config = write_config(tmp_path, "shutdown_grace = 8\n")
    agent = start(tmp_path / "agent", args=("--mcp",), config=config).wait_ready()
    try:
        # A task of its own keeps the replica draining for shutdown_grace.
        running = send(
            agent.url,
            probe_request(agent.url, "ticker", {"ticks": 1000, "interval": 0.1}),
            immediately=True,
        )
        wait_for_state(agent.url, running["id"], {"TASK_STATE_WORKING"})
        assert _call(agent.url, "echo", {"text": "before"}).status_code == 200
        before = _task_ids(agent.url)
        agent.process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 5
        while httpx.get(agent.url + READYZ_PATH, timeout=5).status_code != 503:
            assert time.monotonic() < deadline
            time.sleep(0.02)

        assert refusals(agent.url, "draining") == 0
        _assert_refused(_call(agent.url, "echo", {"text": "x"}), "1", "this agent replica")
        assert refusals(agent.url, "draining") == 1
        # Continuing a waiting task is a Message too.
        resumed = _call(agent.url, "skillrack_resume", {"task_id": running["id"]})
        _assert_refused(resumed, "1", "this agent replica")
        assert refusals(agent.url, "draining") == 2
        # Reads go on: the tool list, and the SDK's initialize before its refused call,
        # whose error it surfaces as the agent wrote it.
        assert "echo" in _tools(agent.url)
        refused = _sdk_call(agent.url, "echo", {"text": "x"})
        assert "shutting down" in refused.error.message, refused.error
        assert refusals(agent.url, "draining") == 3
        assert _task_ids(agent.url) == before  # none of them started a task
        assert agent.process.wait(timeout=30) is not None
    finally:
        agent.stop()


@pytest.fixture
def postgres() -> Iterator[OwnPostgres]:
    with own_postgres() as server:
        yield server


@pytest.mark.slow
def test_mcp_tool_calls_get_the_stores_503_while_it_is_down(
    postgres: OwnPostgres, tmp_path: Path
) -> None:
    config = write_config(tmp_path, f"task_lease_seconds = {LEASE_S}\n")
    agent = start(tmp_path / "replica", args=("--store", postgres.url, "--mcp"), config=config)
    agent.wait_ready()
    try:
        assert _call(agent.url, "echo", {"text": "before"}).status_code == 200
        # A tool call whose task ends while the database is down: its end cannot be saved.
        in_flight: list[httpx.Response] = []
        slow = threading.Thread(
            target=lambda: in_flight.append(
                _call(agent.url, "ticker", {"ticks": 12, "interval": 0.25}, timeout=60)
            )
        )
        slow.start()
        deadline = time.monotonic() + 15
        while "TASK_STATE_WORKING" not in _states(agent.url):
            assert time.monotonic() < deadline, "the slow tool call did not start"
            time.sleep(0.05)

        postgres.stop()
        down = time.monotonic()
        refused = 0
        while True:
            began = time.monotonic()
            answer = _call(agent.url, "echo", {"text": "x"})
            assert time.monotonic() - began < FAST_S, "a tool call waited on the store"
            if answer.status_code == 503:
                refused += 1
                break
            assert time.monotonic() - down < LEASE_S + FAST_S, answer.text
        _assert_refused(answer, "2", STORE_NAMED)
        _assert_refused(_call(agent.url, "skillrack_resume", {"task_id": "t"}), "2", STORE_NAMED)
        refused += 1
        assert "echo" in _tools(agent.url)  # needs no store
        slow.join(timeout=30)
        assert not slow.is_alive(), "the tool call in flight hung"
        [answer] = in_flight
        assert "internal error" not in answer.text.lower(), answer.text
        _assert_refused(answer, "2", STORE_NAMED)
        refused += 1
        assert refusals(agent.url, "task_store_unavailable") == refused
        assert agent.process.poll() is None

        postgres.start()
        back = time.monotonic()
        while httpx.get(agent.url + READYZ_PATH, timeout=10).status_code != 200:
            assert time.monotonic() - back < LEASE_S + FAST_S, "not ready after the store returned"
            time.sleep(0.1)
        after = _call(agent.url, "echo", {"text": "after"})
        assert after.status_code == 200 and after.json()["result"]["isError"] is False, after.text
    finally:
        agent.stop()


def _task_ids(url: str) -> set[str]:
    return {task["id"] for task in rpc(url, "ListTasks", {})["result"]["tasks"]}


def _states(url: str) -> list[str]:
    answer = rpc(url, "ListTasks", {})
    return [task["status"]["state"] for task in answer.get("result", {}).get("tasks", [])]
