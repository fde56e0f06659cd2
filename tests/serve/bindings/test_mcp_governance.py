"""The MCP binding under the agent's other rules: tenants, follow-ups, deadlines, limits.

Agents served over HTTP on loopback (the test skills behind API keys of two
tenants); MCP calls through the SDK's own client, the same calls over A2A
JSON-RPC where the outcome is compared.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from helpers.agent_harness import running_agent
from helpers.agent_skills import TestSkills

pytest.importorskip("mcp")

from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from skillrack.host.config import Config, ServerSettings
from skillrack.host.plugins import load_plugins
from skillrack.host.registry import build_registry
from skillrack.host.startup import first_party_plugins
from skillrack.testing.serve import error_of, invoke, skill_request
from skillrack_plugins.api_keys import hash_key

OPS = "ops-key-0123456789"  # tenant acme
RIVAL = "rival-key-0123456789"  # tenant globex, same role


def _agent_config(workdir: Path, **server: Any) -> Config:
    (workdir / "keys.toml").write_text(
        f'[[key]]\nsha256 = "{hash_key(OPS)}"\nidentity = "ops"\ntenant = "acme"\n'
        'roles = ["operator"]\n\n'
        f'[[key]]\nsha256 = "{hash_key(RIVAL)}"\nidentity = "rival"\ntenant = "globex"\n'
        'roles = ["operator"]\n'
    )
    (workdir / "policy.toml").write_text(
        '[[rule]]\neffect = "allow"\nroles = ["operator"]\nskills = ["*"]\n'
    )
    return Config(
        base_dir=workdir,
        server=dataclasses.replace(ServerSettings(), mcp=True, store="memory", **server),
        first_party={"api_keys": {"file": "keys.toml"}, "policy": {"file": "policy.toml"}},
    )


@contextlib.contextmanager
def _served(workdir: Path, **server: Any) -> Iterator[tuple[str, Any]]:
    config = _agent_config(workdir, **server)
    plugins = [*first_party_plugins(config), ("tests", TestSkills())]
    registry = build_registry(load_plugins(use_entry_points=False, extra=plugins))
    with running_agent(registry, config) as url:
        yield url, registry


@pytest.fixture(scope="module")
def agent(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Any]]:
    workdir = tmp_path_factory.mktemp("mcp-governance")
    with _served(workdir, rate_per_minute=1_000_000, handler_timeout=1.0) as served:
        yield served


@contextlib.asynccontextmanager
async def mcp_client(url: str, key: str) -> AsyncIterator[Client]:
    async with (
        create_mcp_http_client(headers={"X-API-Key": key}) as http,
        Client(streamable_http_client(url + "/mcp", http_client=http)) as client,
    ):
        yield client


async def _call(url: str, key: str, tool: str, arguments: dict[str, Any]) -> Any:
    async with mcp_client(url, key) as client:
        return await client.call_tool(tool, arguments)


def test_a_question_is_answered_with_resume_by_its_caller_only(agent: tuple[str, Any]) -> None:
    url, _ = agent
    asked = asyncio.run(_call(url, OPS, "ask_twice", {}))
    assert asked.is_error is True  # not finished: it waits for an answer
    assert asked.meta["state"] == "TASK_STATE_INPUT_REQUIRED"
    assert asked.meta["question"] == {"needed": "maintenance_window"}
    task_id = asked.meta["task_id"]
    # Another tenant's caller cannot see the task, let alone continue it.
    rival = asyncio.run(_call(url, RIVAL, "skillrack_resume", {"task_id": task_id}))
    assert rival.is_error is True
    assert "TaskNotFound" in rival.meta["code"], rival.meta
    second = asyncio.run(
        _call(url, OPS, "skillrack_resume", {"task_id": task_id, "answer": "sunday 02:00"})
    )
    assert second.meta["question"] == {"needed": "confirmation"}
    done = asyncio.run(_call(url, OPS, "skillrack_resume", {"task_id": task_id, "answer": "yes"}))
    assert done.is_error is False, done.content
    assert done.structured_content == {"window": "sunday 02:00", "confirmation": "yes"}


def test_a_handler_past_its_deadline_fails_as_over_a2a(agent: tuple[str, Any]) -> None:
    url, registry = agent
    over_mcp = asyncio.run(_call(url, OPS, "slow_uncancellable", {"seconds": 3}))
    assert over_mcp.is_error is True
    skill = registry.skills["slow_uncancellable"]
    data = skill_request(
        "slow_uncancellable", {"seconds": 3}, skill.skill.version, skill.interface_digest
    )
    over_a2a = invoke(url, data, headers={"X-API-Key": OPS})
    assert over_mcp.meta["state"] == over_a2a["status"]["state"]
    assert over_mcp.meta["code"] == error_of(over_a2a)["code"]


def test_the_per_caller_rate_applies_to_mcp_requests(tmp_path: Path) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    headers = {
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2025-11-25",
        "X-API-Key": OPS,
    }
    with _served(tmp_path, rate_per_minute=3) as (url, _), httpx.Client(timeout=30) as http:
        statuses = [
            http.post(url + "/mcp", json=body, headers=headers).status_code for _ in range(5)
        ]
        assert statuses[:3] == [200, 200, 200]
        refused = http.post(url + "/mcp", json=body, headers=headers)
        assert refused.status_code == 429
        assert int(refused.headers["retry-after"]) >= 1
        # Another caller has a rate of its own.
        other = http.post(url + "/mcp", json=body, headers={**headers, "X-API-Key": RIVAL})
        assert other.status_code == 200


def test_malformed_tool_arguments_are_tool_errors_with_a_pointer(agent: tuple[str, Any]) -> None:
    url, _ = agent
    missing = asyncio.run(_call(url, OPS, "skillrack_resume", {}))
    assert missing.is_error is True
    assert missing.meta["code"] == "input_invalid" and missing.meta["pointers"] == ["/task_id"]
    wrong = asyncio.run(_call(url, OPS, "skillrack_resume", {"task_id": 7}))
    assert wrong.meta["code"] == "input_invalid" and wrong.meta["pointers"] == ["/task_id"]
    unknown = asyncio.run(_call(url, OPS, "skillrack_resume", {"task_id": "no-such-task"}))
    assert unknown.is_error is True and "Traceback" not in unknown.content[0].text


def test_an_oversized_mcp_request_is_refused_before_the_sdk_reads_it(
    agent: tuple[str, Any],
) -> None:
    url, _ = agent
    huge = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "ask_twice", "arguments": {"padding": "x" * 5_000_000}},
    }
    headers = {
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2025-11-25",
        "X-API-Key": OPS,
    }
    answer = httpx.post(url + "/mcp", json=huge, headers=headers, timeout=60)
    assert answer.status_code == 413
    assert "Traceback" not in answer.text
