"""The MCP binding (``skillrack serve --mcp``), driven by the ``mcp`` SDK's own client.

A real ``skillrack serve`` process holds the example vendor behind API keys, a
policy file and an approval rule; the MCP SDK's client lists its tools and
calls them over Streamable HTTP, and the same calls go over A2A (JSON-RPC,
through skillrack's client) so that one policy matrix gets the same decisions
on both protocols.  Results are checked against the skill's published output
schema with jsonschema itself, and tasks against the A2A task store.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import subprocess
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import jsonschema
import pytest
from helpers.agent_harness import running_agent
from helpers.agent_skills import TestSkills
from helpers.example_vendor import example_vendor_env
from helpers.mcp_inspector import inspector_cli
from helpers.oidc_issuer import AUDIENCE, Issuer, running_issuer

pytest.importorskip("mcp")

from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS

from skillrack.client.skill_client import SkillClient
from skillrack.errors import SkillCallError
from skillrack.host.config import Config
from skillrack.host.plugins import load_plugins
from skillrack.host.registry import Registry, build_registry
from skillrack.host.startup import first_party_plugins
from skillrack.testing.serve import ServedAgent, skillrack_command, start_agent
from skillrack_plugins.api_keys import hash_key

ALICE = "alice-key-0123456789"  # operator
BOB = "bob-key-0123456789"  # viewer
CAROL = "carol-key-0123456789"  # operator, decides approvals
EVALUATE = {
    "resource_id": "network-resource-123",
    "condition": {"metric": "utilization", "operator": "gte", "threshold": 80, "unit": "percent"},
}
RESET = {
    "operation": "reset_counters",
    "device_id": "edge-router-1",
    "interface": "eth1",
    "reason": "baseline after optics replacement",
}
# Valid arguments everywhere: skillrack's client checks them before it sends anything.
EVALUATED = {
    "result": "condition_not_met",
    "supporting_record_refs": ["observation-1"],
    "unit": "percent",
    "observed_value": 26,
}
ASSESS = {
    "resource_id": "network-resource-123",
    "metric": "utilization",
    "threshold": 80,
    "unit": "percent",
}
STATUS = {"operation": "get_status", "device_id": "edge-router-1", "interface": "eth1"}


@pytest.fixture(scope="module")
def agent(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ServedAgent, Path]]:
    workdir = tmp_path_factory.mktemp("mcp-agent")
    keys = [("alice", ALICE, "operator"), ("bob", BOB, "viewer"), ("carol", CAROL, "operator")]
    (workdir / "keys.toml").write_text(
        "".join(
            f'[[key]]\nsha256 = "{hash_key(key)}"\nidentity = "{who}"\nroles = ["{role}"]\n\n'
            for who, key, role in keys
        )
    )
    (workdir / "policy.toml").write_text(
        '[[rule]]\neffect = "allow"\nroles = ["operator"]\n'
        'skills = ["evaluate_resource_condition", "manage_interface", "help"]\n\n'
        '[[rule]]\neffect = "allow"\nroles = ["viewer"]\nskills = ["evaluate_resource_condition"]\n'
    )
    config = workdir / "skillrack.toml"
    config.write_text(
        '[server]\nstore = "memory"\nrate_per_minute = 1000000\n\n'
        '[plugins.api_keys]\nfile = "keys.toml"\n\n[plugins.policy]\nfile = "policy.toml"\n'
    )
    served = start_agent(
        workdir,
        env=example_vendor_env(workdir / "site"),
        args=["--config", str(config), "--mcp"],
    ).wait_ready(120)
    try:
        yield served, config
    finally:
        served.stop()


@contextlib.asynccontextmanager
async def mcp_client(url: str, key: str | None) -> AsyncIterator[Client]:
    """The MCP SDK's client on ``url``'s endpoint, presenting ``key``."""
    headers = {"X-API-Key": key} if key else {}
    async with (
        create_mcp_http_client(headers=headers) as http,
        Client(streamable_http_client(url + "/mcp", http_client=http)) as client,
    ):
        yield client


def run(coroutine: Any) -> Any:
    return asyncio.run(coroutine)


def describe(url: str, skill: str) -> dict[str, Any]:
    async def go() -> dict[str, Any]:
        async with SkillClient(headers={"X-API-Key": ALICE}) as client:
            return dict((await client.describe(url, skill)).document)

    return run(go())


def test_the_banner_names_the_endpoint(agent: tuple[ServedAgent, Path]) -> None:
    served, _ = agent
    assert f"MCP: {served.url}/mcp" in served.output()


def test_each_schema_skill_is_a_tool_with_its_published_schemas(
    agent: tuple[ServedAgent, Path],
) -> None:
    served, _ = agent

    async def go() -> Any:
        async with mcp_client(served.url, ALICE) as client:
            return (await client.list_tools()).tools

    tools = {tool.name: tool for tool in run(go())}
    card = httpx.get(served.url + "/.well-known/agent-card.json").json()
    # Every skill on the card is a tool (the base skill help takes text), but describe_skill:
    # tools/list carries the schemas already.
    on_card = {s["id"] for s in card["skills"]} - {"describe_skill"}
    assert on_card == set(tools) - {"skillrack_resume"}
    assert tools["help"].input_schema["required"] == ["text"]
    assert "skillrack_resume" in tools
    for skill_id in ("evaluate_resource_condition", "manage_interface"):
        document = describe(served.url, skill_id)
        tool = tools[skill_id]
        # Exactly as describe_skill serves them.
        assert tool.input_schema == document["input_schema"]["resolution"]["schema"]
        output = document["output_schema"]["resolution"]["schema"]
        if skill_id == "manage_interface":  # oneOf two objects: MCP's root type added
            assert "type" not in output
            output = {**output, "type": "object"}
        assert tool.output_schema == output
        assert tool.meta is not None
        assert tool.meta["skill_version"] == document["skill_version"]
        extension = next(
            e for e in card["capabilities"]["extensions"] if "schema-interface" in e["uri"]
        )
        digests = {s["skill_id"]: s["interface_digest"] for s in extension["params"]["skills"]}
        assert tool.meta["interface_digest"] == digests[skill_id]
    assert tools["evaluate_resource_condition"].annotations.read_only_hint is True
    assert tools["manage_interface"].annotations.destructive_hint is True
    assert tools["manage_interface"].annotations.read_only_hint is False


def test_a_call_returns_validated_structured_output_and_records_and_a_stored_task(
    agent: tuple[ServedAgent, Path],
) -> None:
    served, _ = agent

    async def go() -> Any:
        async with mcp_client(served.url, ALICE) as client:
            return await client.call_tool("evaluate_resource_condition", EVALUATE)

    result = run(go())
    assert result.is_error is False
    document = describe(served.url, "evaluate_resource_condition")
    output_schema = document["output_schema"]["resolution"]["schema"]
    jsonschema.Draft202012Validator(output_schema).validate(result.structured_content)
    records = [c for c in result.content if c.type == "resource"]
    assert records, result.content
    kinds = {r["kind"] for r in document["supporting_record_schemas"]}
    record_schemas = {
        r["kind"]: r["schema_reference"]["resolution"]["schema"]
        for r in document["supporting_record_schemas"]
    }
    for record in records:
        kind = record.meta["kind"]
        assert kind in kinds
        jsonschema.Draft202012Validator(record_schemas[kind]).validate(
            json.loads(record.resource.text)
        )
    refs = result.structured_content["supporting_record_refs"]
    assert {r.resource.uri.rsplit("/", 1)[1] for r in records} == set(refs)
    # The call is an A2A task in the store, read back over A2A by the same caller.
    task_id = result.meta["task_id"]
    body = {"jsonrpc": "2.0", "id": "1", "method": "GetTask", "params": {"id": task_id}}
    headers = {"A2A-Version": "1.0", "X-API-Key": ALICE}
    task = httpx.post(served.url + "/", json=body, headers=headers).json()["result"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert result.meta["interface_digest"] == digest_on_card(served, "evaluate_resource_condition")


def digest_on_card(served: ServedAgent, skill_id: str) -> str:
    card = httpx.get(served.url + "/.well-known/agent-card.json").json()
    for extension in card["capabilities"]["extensions"]:
        for skill in extension.get("params", {}).get("skills", []):
            if skill.get("skill_id") == skill_id:
                return str(skill["interface_digest"])
    raise AssertionError(f"{skill_id} not on the card")


def test_invalid_arguments_are_a_tool_error_with_the_condition_and_pointers(
    agent: tuple[ServedAgent, Path],
) -> None:
    served, _ = agent

    async def go() -> Any:
        async with mcp_client(served.url, ALICE) as client:
            return await client.call_tool(
                "evaluate_resource_condition",
                {"resource_id": 5, "condition": EVALUATE["condition"]},
            )

    result = run(go())
    assert result.is_error is True
    assert result.meta["code"] == "input_invalid"
    assert "/resource_id" in result.meta["pointers"]
    text = result.content[0].text
    assert text.startswith("input_invalid: ") and "/resource_id" in text
    assert "Traceback" not in text


def test_an_unknown_tool_is_a_protocol_error(agent: tuple[ServedAgent, Path]) -> None:
    served, _ = agent

    async def go() -> Any:
        async with mcp_client(served.url, ALICE) as client:
            return await client.call_tool("evaluate_resource_conditoin", {})

    with pytest.raises(BaseException) as caught:
        run(go())
    error = _mcp_error(caught.value)
    assert error.error.code == INVALID_PARAMS  # MCP: an unknown tool is a protocol error


def _mcp_error(exc: BaseException) -> MCPError:
    """The MCPError in ``exc`` (the client's task group may wrap it in a group)."""
    if isinstance(exc, MCPError):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            with contextlib.suppress(AssertionError):
                return _mcp_error(inner)
    raise AssertionError(f"no MCPError in {exc!r}")


def test_without_a_credential_the_endpoint_answers_401(agent: tuple[ServedAgent, Path]) -> None:
    served, _ = agent
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    response = httpx.post(
        served.url + "/mcp",
        json=body,
        headers={"Accept": "application/json, text/event-stream"},
    )
    assert response.status_code == 401


def test_a_browser_page_of_another_origin_is_refused(agent: tuple[ServedAgent, Path]) -> None:
    served, _ = agent
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    headers = {
        "Accept": "application/json, text/event-stream",
        "X-API-Key": ALICE,
        "MCP-Protocol-Version": "2025-11-25",
    }
    foreign = httpx.post(
        served.url + "/mcp", json=body, headers={**headers, "Origin": "http://evil.example"}
    )
    assert foreign.status_code == 403
    own = httpx.post(served.url + "/mcp", json=body, headers={**headers, "Origin": served.url})
    assert own.status_code == 200, own.text


def test_an_approval_gated_call_finishes_after_a_grant(
    agent: tuple[ServedAgent, Path],
) -> None:
    served, config = agent

    async def call() -> Any:
        async with mcp_client(served.url, ALICE) as client:
            return await client.call_tool("manage_interface", RESET)

    waiting = run(call())
    assert waiting.is_error is True
    approval = waiting.meta["approval"]
    task_id = waiting.meta["task_id"]
    assert waiting.meta["state"] == "TASK_STATE_INPUT_REQUIRED"
    assert "skillrack_resume" in waiting.content[0].text
    decided = subprocess.run(
        [
            skillrack_command(),
            "approvals",
            "grant",
            approval["approval_id"],
            "--config",
            str(config),
            "--by",
            "carol",
            "--reason",
            "CHG-9 reviewed",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert decided.returncode == 0, decided.stderr

    async def resume(key: str) -> Any:
        async with mcp_client(served.url, key) as client:
            return await client.call_tool("skillrack_resume", {"task_id": task_id})

    # Only the caller who started the task may continue it.
    other = run(resume(CAROL))
    assert other.is_error is True
    finished = run(resume(ALICE))
    assert finished.is_error is False, finished.content
    assert finished.meta["task_id"] == task_id
    assert finished.meta["state"] == "TASK_STATE_COMPLETED"
    document = describe(served.url, "manage_interface")
    jsonschema.Draft202012Validator(document["output_schema"]["resolution"]["schema"]).validate(
        finished.structured_content
    )


# One policy matrix over both protocols -------------------------------------------------------

MATRIX = [
    (ALICE, "evaluate_resource_condition", EVALUATE),
    (ALICE, "manage_interface", STATUS),
    (ALICE, "summarize_condition", EVALUATED),
    (BOB, "evaluate_resource_condition", EVALUATE),
    (BOB, "manage_interface", STATUS),
    (BOB, "assess_resource", ASSESS),
    (CAROL, "manage_interface", STATUS),
]


def _over_a2a(url: str, key: str, skill: str, arguments: Any) -> str:
    async def go() -> str:
        async with SkillClient(headers={"X-API-Key": key}) as client:
            try:
                await client.call(url, skill, arguments)
            except SkillCallError as exc:
                return exc.code
            return "completed"

    return str(run(go()))


def _over_mcp(url: str, key: str, skill: str, arguments: Any) -> str:
    async def go() -> str:
        async with mcp_client(url, key) as client:
            result = await client.call_tool(skill, arguments)
            if result.is_error:
                return str(result.meta["code"])
            return "completed"

    return str(run(go()))


@pytest.mark.parametrize(("key", "skill", "arguments"), MATRIX)
def test_one_policy_gives_the_same_decision_over_a2a_and_mcp(
    agent: tuple[ServedAgent, Path], key: str, skill: str, arguments: Any
) -> None:
    served, _ = agent
    over_a2a = _over_a2a(served.url, key, skill, arguments)
    over_mcp = _over_mcp(served.url, key, skill, arguments)
    assert over_a2a == over_mcp
    operators = {ALICE, CAROL}
    allowed = (
        key in operators and skill in {"evaluate_resource_condition", "manage_interface"}
    ) or (key == BOB and skill == "evaluate_resource_condition")
    assert (over_mcp == "completed") == allowed, over_mcp


# An independent client: the MCP Inspector's command line --------------------------------------


@pytest.fixture(scope="module")
def open_agent(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedAgent]:
    """The example vendor with --mcp on loopback, no credentials (the Inspector sends none)."""
    workdir = tmp_path_factory.mktemp("mcp-open-agent")
    served = start_agent(
        workdir, env=example_vendor_env(workdir / "site"), args=["--store", "memory", "--mcp"]
    ).wait_ready(120)
    try:
        yield served
    finally:
        served.stop()


def _inspect(command: list[str], url: str, *args: str) -> Any:
    completed = subprocess.run(
        [*command, url + "/mcp", *args], capture_output=True, text=True, timeout=120
    )
    assert completed.returncode == 0, completed.stderr[-2000:]
    return json.loads(completed.stdout)


def test_the_mcp_inspector_lists_and_calls_the_tools(
    open_agent: ServedAgent, tmp_path_factory: pytest.TempPathFactory
) -> None:
    command = inspector_cli(tmp_path_factory)
    listed = _inspect(command, open_agent.url, "--method", "tools/list")
    tools = {tool["name"]: tool for tool in listed["tools"]}
    assert {"evaluate_resource_condition", "manage_interface", "help"} <= set(tools)
    condition = json.dumps(EVALUATE["condition"])
    called = _inspect(
        command,
        open_agent.url,
        "--method",
        "tools/call",
        "--tool-name",
        "evaluate_resource_condition",
        "--tool-arg",
        "resource_id=network-resource-123",
        f"condition={condition}",
    )
    # The Inspector's client checked structuredContent against outputSchema (Ajv); again here.
    assert called.get("isError") in (None, False), called
    jsonschema.Draft202012Validator(tools["evaluate_resource_condition"]["outputSchema"]).validate(
        called["structuredContent"]
    )
    assert any(c["type"] == "resource" for c in called["content"])
    # The Inspector coerces values to the schema's types, so leave a required member out.
    refused = _inspect(
        command,
        open_agent.url,
        "--method",
        "tools/call",
        "--tool-name",
        "evaluate_resource_condition",
        "--tool-arg",
        "resource_id=network-resource-123",
    )
    assert refused["isError"] is True
    assert refused["_meta"]["code"] == "input_invalid"
    assert "/condition" in refused["_meta"]["pointers"]


# OpenID Connect: the protected-resource metadata MCP clients discover the issuer with -----------


def oidc_agent(issuer: Issuer, workdir: Path) -> tuple[Registry, Config]:
    """Tokens of ``issuer``; operators may call evaluate_resource_condition with network:write."""
    (workdir / "policy.toml").write_text(
        '[[rule]]\neffect = "allow"\nroles = ["operator"]\n'
        'skills = ["evaluate_resource_condition"]\n'
    )
    config = Config(
        base_dir=workdir,
        first_party={
            "oidc": {
                "issuer": issuer.issuer,
                "audience": AUDIENCE,
                "allow_loopback": True,
                "roles_claims": ["realm_access.roles"],
                "roles": {"network-operator": ["operator"]},
            },
            "policy": {"file": "policy.toml"},
        },
        skill_security={"evaluate_resource_condition": ({"oidc": ("network:write",)},)},
    )
    plugins = [*first_party_plugins(config), ("tests", TestSkills())]
    return build_registry(load_plugins(use_entry_points=False, extra=plugins)), config


@pytest.fixture(scope="module")
def oidc_agent_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Issuer]]:
    workdir = tmp_path_factory.mktemp("mcp-oidc")
    with running_issuer() as issuer:
        registry, config = oidc_agent(issuer, workdir)
        config = dataclasses.replace(config, server=dataclasses.replace(config.server, mcp=True))
        with running_agent(registry, config) as url:
            yield url, issuer


def test_an_oidc_agent_publishes_its_issuer_for_mcp_and_takes_its_tokens(
    oidc_agent_url: tuple[str, Issuer],
) -> None:
    url, issuer = oidc_agent_url
    for path in (
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-protected-resource",
    ):
        metadata = httpx.get(url + path)  # public: no credential
        assert metadata.status_code == 200
        assert metadata.json()["resource"] == url + "/mcp"
        assert metadata.json()["authorization_servers"] == [issuer.issuer]
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    accept = {"Accept": "application/json, text/event-stream"}
    assert httpx.post(url + "/mcp", json=body, headers=accept).status_code == 401

    # A token with the skill's scope (network:write) and the operator role calls it.
    token = issuer.token(scope="openid network:read network:write")

    async def go(bearer: str) -> Any:
        headers = {"Authorization": f"Bearer {bearer}"}
        async with (
            create_mcp_http_client(headers=headers) as http,
            Client(streamable_http_client(url + "/mcp", http_client=http)) as client,
        ):
            return await client.call_tool("evaluate_resource_condition", EVALUATE)

    done = run(go(token))
    assert done.is_error is False, done.content
    # Without the skill's scope: refused as over A2A (the same requirement, checked by the host).
    refused = run(go(issuer.token()))
    assert refused.is_error is True
