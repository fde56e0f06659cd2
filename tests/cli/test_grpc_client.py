"""The client on A2A's gRPC binding (``--binding grpc``), and gRPC server reflection on ``serve``.

Against a real ``skillrack serve --grpc-port`` (API keys, so credentials must
travel as gRPC metadata) and against an agent written with a2a-sdk alone.
What the gRPC call returns is compared with the same call over JSON-RPC.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import httpx
import pytest
from grpc_reflection.v1alpha.proto_reflection_descriptor_database import (
    ProtoReflectionDescriptorDatabase,
)
from helpers.plain_a2a_agent import PlainAgent, plain_agent
from helpers.served_process import serving, write_operator_config

from skillrack.cli import main as cli
from skillrack.testing.serve import CARD_PATH, ServedAgent, free_port

KEY = "grpc-client-test-key"


@pytest.fixture(scope="module")
def agent(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedAgent]:
    workdir = tmp_path_factory.mktemp("grpc-client")
    config = write_operator_config(
        workdir, KEY, f"rate_per_minute = 1000000\ngrpc_port = {free_port()}"
    )
    with serving(workdir, config=config) as served:
        yield served


@pytest.fixture(scope="module")
def grpc_target(agent: ServedAgent) -> str:
    card = httpx.get(agent.url + CARD_PATH, timeout=10).json()
    [target] = [i["url"] for i in card["supportedInterfaces"] if i["protocolBinding"] == "GRPC"]
    return str(target)


@pytest.fixture(scope="module")
def plain() -> Iterator[PlainAgent]:
    with plain_agent() as served:
        yield served


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, Any]:
    status = cli.main(list(argv))
    out = capsys.readouterr().out
    try:
        return status, json.loads(out)
    except ValueError:
        return status, out


@pytest.mark.parametrize("way", [[], ["--stream"], ["--poll"]])
def test_call_over_grpc_matches_jsonrpc(
    agent: ServedAgent, grpc_target: str, way: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    base = ["call", agent.url, "echo", "--args", '{"text": "hi"}', "--header", f"X-API-Key: {KEY}"]
    allow = ["--allow-origin", f"http://{grpc_target}"]
    status, over_grpc = run(capsys, *base, *way, "--binding", "grpc", *allow)
    assert status == 0, over_grpc
    status, over_jsonrpc = run(capsys, *base, *way, "--binding", "JSONRPC")
    assert status == 0
    assert over_grpc["state"] == over_jsonrpc["state"] == "TASK_STATE_COMPLETED"
    assert over_grpc["result"] == over_jsonrpc["result"] == {"echo": "hi"}
    assert over_grpc["task_id"] != over_jsonrpc["task_id"]
    # The gRPC task is the agent's: JSON-RPC reads the same task by its id.
    status, again = run(capsys, *base[:3], "--task-id", over_grpc["task_id"], *base[5:])
    assert status == 0 and again["task_id"] == over_grpc["task_id"]


def test_grpc_port_is_another_origin(
    agent: ServedAgent, grpc_target: str, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out = run(
        capsys, "describe", agent.url, "echo", "--binding", "GRPC", "--json",
        "--header", f"X-API-Key: {KEY}",
    )  # fmt: skip
    assert status == 1 and out["error"]["code"] == "origin_refused"
    assert f"--allow-origin http://{grpc_target}" in out["error"]["message"]


def test_refused_credentials_over_grpc_are_authorization_failed(
    agent: ServedAgent, grpc_target: str, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out = run(
        capsys, "call", agent.url, "echo", "--args", "{}", "--binding", "grpc",
        "--allow-origin", f"http://{grpc_target}", "--header", "X-API-Key: wrong",
    )  # fmt: skip
    assert status == 1 and out["error"]["code"] == "authorization_failed"
    assert "gRPC" in out["error"]["message"]


def test_base_skill_of_a_plain_agent_over_grpc(
    plain: PlainAgent, capsys: pytest.CaptureFixture[str]
) -> None:
    allow = ["--allow-origin", f"http://{plain.grpc_target}"]
    for way in ([], ["--stream"]):
        status, out = run(
            capsys, "call", plain.url, "echo", "--text", "over grpc", "--binding", "grpc",
            *allow, *way,
        )  # fmt: skip
        assert status == 0 and out.strip() == "echo: over grpc"


def test_serve_offers_grpc_reflection(grpc_target: str) -> None:
    with grpc.insecure_channel(grpc_target) as channel:
        services = set(ProtoReflectionDescriptorDatabase(channel).get_services())
        found = ProtoReflectionDescriptorDatabase(channel).FindFileContainingSymbol(
            "lf.a2a.v1.A2AService"
        )
    assert {"lf.a2a.v1.A2AService", "grpc.reflection.v1alpha.ServerReflection"} <= services
    assert found.package == "lf.a2a.v1"


def test_unknown_binding_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main(["call", "http://127.0.0.1:9", "x", "--args", "{}", "--binding", "smoke"])
    assert exited.value.code == 2


@pytest.mark.parametrize("binding", ["JSONRPC", "HTTP+JSON", "GRPC"])
def test_an_api_key_agents_refusal_suggests_its_header(
    agent: ServedAgent, grpc_target: str, binding: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 31: the refusal of an API-key agent suggested a Bearer header (every binding)."""
    via = ["--binding", binding, "--allow-origin", f"http://{grpc_target}"]
    status, out = run(
        capsys, "call", agent.url, "echo", "--args", "{}", "--header", "X-API-Key: wrong", *via
    )
    message = out["error"]["message"]
    assert status == 1 and out["error"]["code"] == "authorization_failed"
    assert "--header 'X-API-Key: KEY'" in message and "Bearer" not in message


def test_skills_and_describe_over_grpc(
    agent: ServedAgent, grpc_target: str, capsys: pytest.CaptureFixture[str]
) -> None:
    via = ["--binding", "grpc", "--allow-origin", f"http://{grpc_target}"]
    via += ["--header", f"X-API-Key: {KEY}"]
    status, over_grpc = run(capsys, "skills", agent.url, "--json", *via)
    assert status == 0
    status, over_http = run(capsys, "skills", agent.url, "--json", "--header", f"X-API-Key: {KEY}")
    assert status == 0 and over_grpc == over_http
    status, document = run(capsys, "describe", agent.url, "echo", "--json", *via)
    assert status == 0 and document["interface"]["skill_id"] == "echo"


async def test_skill_client_speaks_grpc_from_python(agent: ServedAgent, grpc_target: str) -> None:
    from skillrack.client.skill_client import SkillClient

    async with SkillClient(
        binding="grpc",
        headers={"X-API-Key": KEY},
        allow_origins=[f"http://{grpc_target}"],
    ) as client:
        result = await client.call(agent.url, "echo", {"text": "py"}, mode="stream")
    assert result.result == {"echo": "py"}
    with pytest.raises(ValueError, match="is not JSONRPC, HTTP\\+JSON or GRPC"):
        SkillClient(binding="smoke")


async def test_headers_and_trace_context_travel_as_grpc_metadata(plain: PlainAgent) -> None:
    from opentelemetry.sdk.trace import TracerProvider

    from skillrack.client.skill_client import SkillClient

    tracer = TracerProvider().get_tracer("test")
    plain.grpc_metadata.clear()
    async with SkillClient(
        binding="GRPC",
        headers={"X-Probe": "p-1"},
        allow_origins=[f"http://{plain.grpc_target}"],
    ) as client:
        with tracer.start_as_current_span("caller") as span:
            answer = await client.send_message(plain.url, ["traced"], skill="echo")
    assert answer["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
    [sent] = plain.grpc_metadata
    ids = span.get_span_context()
    assert sent["x-probe"] == "p-1"
    assert sent["traceparent"].split("-")[1:3] == [f"{ids.trace_id:032x}", f"{ids.span_id:016x}"]


def test_describe_is_the_same_on_every_binding(
    agent: ServedAgent, grpc_target: str, capsys: pytest.CaptureFixture[str]
) -> None:
    key = ["--header", f"X-API-Key: {KEY}", "--allow-origin", f"http://{grpc_target}"]
    printed = set()
    for binding in ("JSONRPC", "HTTP+JSON", "GRPC"):
        status, out = run(capsys, "describe", agent.url, "echo", "--binding", binding, *key)
        assert status == 0 and out.startswith("echo 1.0")
        printed.add(out)
    assert len(printed) == 1  # the summary, byte for byte


def test_a_missing_key_sends_nothing_over_grpc(
    agent: ServedAgent, grpc_target: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 31 item 2 on gRPC: the card's requirement is read first; no gRPC call is made."""
    via = ["--binding", "grpc", "--allow-origin", f"http://{grpc_target}"]
    status, out = run(capsys, "call", agent.url, "echo", "--args", "{}", *via)
    assert status == 1 and out["error"]["code"] == "authorization_failed", out
    message = out["error"]["message"]
    assert "nothing was sent" in message and "--header 'X-API-Key: KEY'" in message, message


def test_a_pinned_schema_that_changed_is_refused_over_grpc(
    agent: ServedAgent, grpc_target: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 31 item 1 on gRPC: the document read over gRPC is held to the pin; echo not called."""
    via = ["--binding", "grpc", "--allow-origin", f"http://{grpc_target}"]
    via += ["--header", f"X-API-Key: {KEY}"]
    status, document = run(capsys, "describe", agent.url, "echo", "--json", *via)
    assert status == 0, document
    schema = document["interface"]["input_schema"]
    uri, version, digest = schema["schema_uri"], schema["version"], schema["digest"]
    call = ["call", agent.url, "echo", "--args", '{"text": "pinned"}', *via]
    status, out = run(capsys, *call, "--pin-schema", f"{uri}@{version}={digest}")
    assert status == 0 and out["result"] == {"echo": "pinned"}, out
    other = "sha256:" + "0" * 64
    status, out = run(capsys, *call, "--pin-schema", f"{uri}@{version}={other}")
    assert status == 1 and out["error"]["code"] == "interface_invalid", out
    message = out["error"]["message"]
    assert f"has digest {digest}" in message and f"pinned to {other}" in message, message
    assert "not called" in message
