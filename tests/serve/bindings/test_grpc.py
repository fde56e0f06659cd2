"""A2A's gRPC binding against a real ``skillrack serve``: the same agent on all three bindings.

The transport-equivalence tests send one invocation through a2a-sdk's own
client over JSON-RPC, HTTP+JSON and gRPC and compare what comes back once
ids and timestamps are normalised: the final Task with its Artifacts (a
``describe_skill``, a skill that completes, ``input_invalid``, an
authorization refusal) and the errors before any task exists (no
credential, a wrong one: the draft's code in a ``google.rpc.ErrorInfo`` on
every binding).  The other tests look at what only gRPC carries: metadata
(credentials, ``A2A-Extensions`` and its echo, ``A2A-Version``), the body
guard's refusals, tenants, one rate budget and one failed-authentication
window shared with HTTP, TLS with the HTTPS files, and ``serve``'s start-up
errors.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import socket
import subprocess
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import grpc
import grpc.aio
import httpx
import pytest
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.client.client import ClientCallContext
from a2a.types import (
    AgentCard,
    GetTaskRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    StreamResponse,
    a2a_pb2_grpc,
)
from a2a.utils.constants import TransportProtocol
from a2a.utils.grpc_status import status_from_call
from google.protobuf import json_format, struct_pb2
from google.rpc import error_details_pb2
from helpers.certificates import TestCA
from helpers.served_process import PLUGIN_MODULE, digests, serving, start
from helpers.waiting import wait_until

from skillrack.protocol.messages import EXTENSION_URI
from skillrack.testing.serve import (
    START_TIMEOUT_S,
    ServedAgent,
    free_port,
    skillrack_command,
)

BINDINGS = [TransportProtocol.JSONRPC, TransportProtocol.HTTP_JSON, TransportProtocol.GRPC]
ALICE, BOB = "grpc-test-key-alice", "grpc-test-key-bob"
#: Values that differ between two otherwise identical calls.
VOLATILE = {"id", "contextId", "taskId", "messageId", "timestamp", "at"}


def _configure(workdir: Path, server: str) -> Path:
    """The probe plugin, two API keys (alice@acme, bob@globex) and a policy allowing echo."""
    workdir.mkdir(parents=True, exist_ok=True)
    keys = workdir / "keys.toml"
    entries = [(ALICE, "alice", "acme"), (BOB, "bob", "globex")]
    keys.write_text(
        "".join(
            f'[[key]]\nsha256 = "{hashlib.sha256(k.encode()).hexdigest()}"\n'
            f'identity = "{who}"\ntenant = "{tenant}"\nroles = ["operator"]\n\n'
            for k, who, tenant in entries
        )
    )
    policy = workdir / "policy.toml"
    policy.write_text('[[rule]]\neffect = "allow"\nroles = ["operator"]\nskills = ["echo"]\n')
    config = workdir / "skillrack.toml"
    config.write_text(
        f'[plugins]\nbuiltin = ["{PLUGIN_MODULE}"]\n\n[server]\n{server}\n'
        f'[plugins.api_keys]\nfile = "{keys}"\n\n[plugins.policy]\nfile = "{policy}"\n'
        # A per-skill requirement no API key meets (keys grant no scopes): refused alike.
        '\n[skills.ask]\nsecurity = [{ apiKey = ["network:write"] }]\n'
    )
    return config


@pytest.fixture(scope="module")
def agent(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedAgent]:
    workdir = tmp_path_factory.mktemp("grpc")
    port = free_port()
    # [server] grpc_port: the configuration key (the TLS test uses --grpc-port).
    config = _configure(workdir, f"rate_per_minute = 1000000\ngrpc_port = {port}\n")
    with serving(workdir, config=config) as served:
        yield served


@pytest.fixture(scope="module")
def card(agent: ServedAgent) -> AgentCard:
    async def resolve() -> AgentCard:
        async with httpx.AsyncClient(timeout=10) as http:
            return await A2ACardResolver(http, agent.url).get_agent_card()

    return asyncio.run(resolve())


def grpc_address(card: AgentCard) -> str:
    [interface] = [i for i in card.supported_interfaces if i.protocol_binding == "GRPC"]
    return str(interface.url)


def _request(data: Any, *, parts: int = 1) -> SendMessageRequest:
    value = struct_pb2.Value()
    json_format.ParseDict(data, value)
    return SendMessageRequest(
        message=Message(
            message_id=str(uuid.uuid4()),
            role=Role.ROLE_USER,
            parts=[Part(data=value) for _ in range(parts)],
            extensions=[EXTENSION_URI],
        )
    )


def _normal(value: Any) -> Any:
    """``value`` with ids and timestamps replaced, so that two calls compare equal."""
    if isinstance(value, dict):
        return {k: "*" if k in VOLATILE else _normal(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_normal(v) for v in value]
    return value


def _wire_error(body: Any) -> dict[str, Any]:
    """The error of a JSON-RPC or HTTP+JSON error body: message, status and its ErrorInfo."""
    error = body["error"]
    details = error.get("data") if "jsonrpc" in body else error.get("details")
    [info] = [d for d in details if d.get("@type", "").endswith("ErrorInfo")]
    return {
        "message": error["message"],
        "info": {k: v for k, v in info.items() if k != "@type"},
    }


def _grpc_error(exc: BaseException) -> dict[str, Any]:
    """The same from the gRPC status a2a-sdk's client raised from."""
    call = exc.__cause__
    assert isinstance(call, grpc.aio.AioRpcError), repr(exc)
    status = status_from_call(call)
    assert status is not None, call
    infos = []
    for detail in status.details:
        info = error_details_pb2.ErrorInfo()
        if detail.Unpack(info):
            infos.append(json_format.MessageToDict(info))
    [info] = infos
    return {"message": status.message, "info": info, "status": call.code().name}


async def outcome(card: AgentCard, binding: str, data: Any, key: str | None) -> dict[str, Any]:
    """What a2a-sdk's client gets for SendMessage(data) over ``binding``, normalised."""
    errors: list[Any] = []

    async def keep_errors(response: httpx.Response) -> None:
        if response.status_code >= 400:
            await response.aread()
            errors.append((response.status_code, response.json()))

    http = httpx.AsyncClient(timeout=30, event_hooks={"response": [keep_errors]})
    config = ClientConfig(
        streaming=False,
        supported_protocol_bindings=[binding],
        use_client_preference=True,
        httpx_client=http,
        grpc_channel_factory=grpc.aio.insecure_channel,
    )
    client = ClientFactory(config).create(card)
    parameters = {"A2A-Extensions": EXTENSION_URI, **({"X-API-Key": key} if key else {})}
    try:
        [event] = [
            e
            async for e in client.send_message(
                _request(data), context=ClientCallContext(service_parameters=parameters)
            )
        ]
        return {"task": _normal(json_format.MessageToDict(event.task))}
    except Exception as exc:
        if binding == TransportProtocol.GRPC:
            return {"error": _grpc_error(exc)}
        [(status, body)] = errors
        found = _wire_error(body)
        found["status"] = {401: "UNAUTHENTICATED", 429: "RESOURCE_EXHAUSTED"}.get(status, status)
        if "jsonrpc" not in body:
            assert body["error"]["status"] == found["status"], body
        return {"error": found}
    finally:
        await client.close()
        await http.aclose()


def _invocation(agent: ServedAgent, skill: str, arguments: Any) -> dict[str, Any]:
    return {
        "skill": skill,
        "skill_version": "1.0",
        "interface_digest": digests(agent.url)[skill],
        "arguments": arguments,
    }


CASES = {
    "describe_skill": (lambda a: {"skill": "describe_skill", "arguments": {"skill_id": "echo"}}),
    "success": (lambda a: _invocation(a, "echo", {"text": "same everywhere"})),
    "input_invalid": (lambda a: _invocation(a, "echo", {"text": 5})),
    "authorization_refused": (lambda a: _invocation(a, "crash", {})),
    "requirement_unmet": (lambda a: _invocation(a, "ask", {})),
}


@pytest.mark.parametrize("case", sorted(CASES))
async def test_the_same_task_on_every_binding(
    agent: ServedAgent, card: AgentCard, case: str
) -> None:
    data = CASES[case](agent)
    got = {b: await outcome(card, b, data, ALICE) for b in BINDINGS}
    jsonrpc = got[TransportProtocol.JSONRPC]
    assert got[TransportProtocol.HTTP_JSON] == jsonrpc
    assert got[TransportProtocol.GRPC] == jsonrpc
    task = jsonrpc["task"]
    expected = {
        "describe_skill": ("TASK_STATE_COMPLETED", None),
        "success": ("TASK_STATE_COMPLETED", None),
        "input_invalid": ("TASK_STATE_REJECTED", "input_invalid"),
        "authorization_refused": ("TASK_STATE_REJECTED", "authorization_failed"),
        "requirement_unmet": ("TASK_STATE_REJECTED", "authorization_failed"),
    }[case]
    assert task["status"]["state"] == expected[0], task
    if expected[1] is None:
        [result] = [a for a in task["artifacts"] if a["name"] == data["skill"]]
        assert result["parts"][0]["data"]["skill"] == data["skill"], task
        if case == "success":
            assert result["parts"][0]["data"]["result"] == {"echo": "same everywhere"}
    else:
        [part] = task["status"]["message"]["parts"]
        assert part["data"]["error"]["code"] == expected[1], task
        assert "artifacts" not in task, task
    if case == "requirement_unmet":
        assert "requires apiKey (scopes network:write)" in part["data"]["error"]["message"]
    if case == "input_invalid":
        [detail] = part["data"]["error"]["details"]
        assert detail["instance_path"] == "/text" and detail["keyword"] == "type", detail


@pytest.mark.parametrize("key", [None, "not-a-key"])
async def test_the_same_refusal_on_every_binding(
    agent: ServedAgent, card: AgentCard, key: str | None
) -> None:
    data = _invocation(agent, "echo", {"text": "x"})
    got = {b: await outcome(card, b, data, key) for b in BINDINGS}
    assert got[TransportProtocol.HTTP_JSON] == got[TransportProtocol.JSONRPC]
    assert got[TransportProtocol.GRPC] == got[TransportProtocol.JSONRPC]
    error = got[TransportProtocol.GRPC]["error"]
    assert error["status"] == "UNAUTHENTICATED", error
    assert error["info"] == {
        "reason": "AUTHORIZATION_FAILED",
        "domain": "skillrack",
        "metadata": {"code": "authorization_failed"},
    }


async def test_an_a2a_error_is_the_same_on_every_binding(card: AgentCard) -> None:
    raised = {}
    for binding in BINDINGS:
        config = ClientConfig(
            supported_protocol_bindings=[binding],
            use_client_preference=True,
            grpc_channel_factory=grpc.aio.insecure_channel,
        )
        client = ClientFactory(config).create(card)
        context = ClientCallContext(service_parameters={"X-API-Key": ALICE})
        try:
            with pytest.raises(Exception) as caught:
                await client.get_task(GetTaskRequest(id="no-such-task"), context=context)
        finally:
            await client.close()
        raised[binding] = (type(caught.value).__name__, str(caught.value))
    assert raised[TransportProtocol.JSONRPC][0] == "TaskNotFoundError", raised
    assert len(set(raised.values())) == 1, raised


async def test_streaming_over_grpc(agent: ServedAgent, card: AgentCard) -> None:
    kinds = {}
    for binding in (TransportProtocol.JSONRPC, TransportProtocol.GRPC):
        config = ClientConfig(
            streaming=True,
            supported_protocol_bindings=[binding],
            use_client_preference=True,
            grpc_channel_factory=grpc.aio.insecure_channel,
        )
        client = ClientFactory(config).create(card)
        context = ClientCallContext(
            service_parameters={"X-API-Key": ALICE, "A2A-Extensions": EXTENSION_URI}
        )
        request = _request(_invocation(agent, "echo", {"text": "streamed"}))
        try:
            events: list[StreamResponse] = [
                e async for e in client.send_message(request, context=context)
            ]
        finally:
            await client.close()
        kinds[binding] = [e.WhichOneof("payload") for e in events]
        last = events[-1]
        final = last.task if last.HasField("task") else last.status_update
        assert final.status.state == 3, events  # TASK_STATE_COMPLETED
    assert kinds[TransportProtocol.GRPC] == kinds[TransportProtocol.JSONRPC], kinds


# Raw gRPC: metadata, refusals, tenants ------------------------------------------------------


@pytest.fixture
async def stub(card: AgentCard) -> AsyncIterator[a2a_pb2_grpc.A2AServiceStub]:
    async with grpc.aio.insecure_channel(grpc_address(card)) as channel:
        yield a2a_pb2_grpc.A2AServiceStub(channel)


def _metadata(key: str | None = ALICE, extensions: bool = True) -> list[tuple[str, str]]:
    found = [("a2a-version", "1.0")]
    if key:
        found.append(("x-api-key", key))
    if extensions:
        found.append(("a2a-extensions", EXTENSION_URI))
    return found


def _info(error: grpc.aio.AioRpcError) -> dict[str, Any]:
    status = status_from_call(error)
    assert status is not None, error
    for detail in status.details:
        info = error_details_pb2.ErrorInfo()
        if detail.Unpack(info):
            return dict(json_format.MessageToDict(info))
    raise AssertionError(f"no ErrorInfo in {status}")


async def test_the_extension_header_is_echoed_when_activated(
    agent: ServedAgent, stub: a2a_pb2_grpc.A2AServiceStub
) -> None:
    data = _invocation(agent, "echo", {"text": "x"})
    call = stub.SendMessage(_request(data), metadata=_metadata())
    response = await call
    assert response.task.status.state == 3, response
    assert ("a2a-extensions", EXTENSION_URI) in list(await call.initial_metadata())
    quiet = stub.SendMessage(_request(data), metadata=_metadata(extensions=False))
    await quiet
    assert "a2a-extensions" not in {k for k, _ in await quiet.initial_metadata()}


async def test_unauthenticated_carries_the_challenge(
    agent: ServedAgent, stub: a2a_pb2_grpc.A2AServiceStub
) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await stub.SendMessage(
            _request(_invocation(agent, "echo", {})), metadata=_metadata(key=None)
        )
    assert caught.value.code() == grpc.StatusCode.UNAUTHENTICATED
    trailing = dict(caught.value.trailing_metadata() or ())
    assert trailing["www-authenticate"] == 'ApiKey header="X-API-Key"', trailing
    assert _info(caught.value)["reason"] == "AUTHORIZATION_FAILED"


async def test_a2a_version_is_required(stub: a2a_pb2_grpc.A2AServiceStub) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await stub.GetTask(GetTaskRequest(id="x"), metadata=[("x-api-key", ALICE)])
    assert caught.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert _info(caught.value)["reason"] == "VERSION_NOT_SUPPORTED"


async def test_the_body_guards_refusals_apply(
    agent: ServedAgent, stub: a2a_pb2_grpc.A2AServiceStub
) -> None:
    big = _request(_invocation(agent, "echo", {"n": 2**60}))
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await stub.SendMessage(big, metadata=_metadata())
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    info = _info(caught.value)
    assert info["metadata"] == {
        "code": "input_invalid",
        "pointer": "/message/parts/0/data/arguments/n",
    }, info
    nan = _request(_invocation(agent, "echo", {}))
    nan.message.parts[0].data.struct_value.fields["arguments"].struct_value.fields[
        "n"
    ].number_value = float("nan")
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await stub.SendMessage(nan, metadata=_metadata())
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert _info(caught.value)["metadata"] == {"code": "input_invalid"}
    many = _request(_invocation(agent, "echo", {}), parts=17)
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await stub.SendMessage(many, metadata=_metadata())
    assert _info(caught.value)["metadata"]["code"] == "resource_limit_exceeded"
    deep: Any = "bottom"
    for _ in range(32):  # one level more than a Data Part carries (protobuf builds it)
        deep = {"d": deep}
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await stub.SendMessage(_request(deep), metadata=_metadata())
    assert _info(caught.value)["metadata"] == {
        "code": "resource_limit_exceeded",
        "pointer": "/message/parts/0/data",
    }


async def test_bytes_that_are_not_the_message_are_input_invalid(card: AgentCard) -> None:
    async with grpc.aio.insecure_channel(grpc_address(card)) as channel:
        send = channel.unary_unary(
            "/lf.a2a.v1.A2AService/SendMessage",
            request_serializer=lambda raw: raw,
            response_deserializer=lambda raw: raw,
        )
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await send(b"\xff\xff\xff\xff", metadata=_metadata())
        assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "Decode" not in (caught.value.details() or ""), caught.value.details()
        assert _info(caught.value)["metadata"] == {"code": "input_invalid"}
        with pytest.raises(grpc.aio.AioRpcError) as caught:  # authentication comes first
            await send(b"\xff\xff\xff\xff", metadata=_metadata(key=None))
        assert caught.value.code() == grpc.StatusCode.UNAUTHENTICATED
        # Larger than [server] max_body_bytes: gRPC's own refusal, before any code of ours.
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await send(b"x" * 4_100_000, metadata=_metadata())
        assert caught.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED


async def test_tasks_belong_to_the_callers_tenant(
    agent: ServedAgent, stub: a2a_pb2_grpc.A2AServiceStub
) -> None:
    data = _invocation(agent, "echo", {"text": "mine"})
    task = (await stub.SendMessage(_request(data), metadata=_metadata())).task
    mine = await stub.GetTask(GetTaskRequest(id=task.id), metadata=_metadata())
    assert mine.id == task.id
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await stub.GetTask(GetTaskRequest(id=task.id), metadata=_metadata(key=BOB))
    assert caught.value.code() == grpc.StatusCode.NOT_FOUND
    assert _info(caught.value)["reason"] == "TASK_NOT_FOUND"


# One budget, one window, TLS, start-up --------------------------------------------------------


def test_limits_are_shared_with_http(tmp_path: Path) -> None:
    """Requests count against one rate for both; failures against one window per address."""
    port = free_port()
    config = _configure(
        tmp_path, f"rate_per_minute = 3\nfailed_auth_per_minute = 2\ngrpc_port = {port}\n"
    )
    with serving(tmp_path, config=config) as served:
        headers = {"A2A-Version": "1.0", "X-API-Key": ALICE}
        body = {"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "x"}}
        for _ in range(3):
            assert httpx.post(served.url + "/", json=body, headers=headers).status_code == 200

        async def over_grpc(key: str) -> grpc.aio.AioRpcError:
            async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
                with pytest.raises(grpc.aio.AioRpcError) as caught:
                    await a2a_pb2_grpc.A2AServiceStub(channel).GetTask(
                        GetTaskRequest(id="x"), metadata=_metadata(key=key)
                    )
            return caught.value

        limited = asyncio.run(over_grpc(ALICE))
        assert limited.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, limited
        assert _info(limited)["metadata"] == {"code": "resource_limit_exceeded"}
        assert "retry-after" in dict(limited.trailing_metadata() or ())
        for _ in range(2):
            assert asyncio.run(over_grpc("wrong")).code() == grpc.StatusCode.UNAUTHENTICATED
        blocked = httpx.post(served.url + "/", json=body, headers={**headers, "X-API-Key": BOB})
        assert blocked.status_code == 429, blocked.text
        assert "failed authentications" in blocked.json()["error"]["message"]


def test_tls_with_the_https_certificate(tmp_path: Path) -> None:
    ca = TestCA(tmp_path / "ca")
    server = ca.issue_server()
    grpc_port = free_port()
    args = (
        *("--ssl-certfile", str(server.cert), "--ssl-keyfile", str(server.key)),
        *("--grpc-port", str(grpc_port)),
    )
    served = start(tmp_path / "agent", args=args)
    try:
        # The banner's lines may reach the log one by one: wait for the last one, metrics.
        wait_until(
            lambda: "  metrics: " in served.output() or served.process.poll() is not None,
            "the agent's whole start-up banner (or its exit)",
            timeout=START_TIMEOUT_S,
        )
        assert f"gRPC: 127.0.0.1:{grpc_port} (TLS" in served.output(), served.output()
        data = {"skill": "describe_skill", "arguments": {"skill_id": "echo"}}

        async def calls() -> tuple[int, grpc.StatusCode]:
            credentials = grpc.ssl_channel_credentials(root_certificates=ca.bundle.read_bytes())
            address = f"127.0.0.1:{grpc_port}"
            async with grpc.aio.secure_channel(address, credentials) as channel:
                answer = await a2a_pb2_grpc.A2AServiceStub(channel).SendMessage(
                    _request(data), metadata=_metadata(key=None)
                )
            async with grpc.aio.insecure_channel(address) as channel:
                with pytest.raises(grpc.aio.AioRpcError) as caught:
                    await a2a_pb2_grpc.A2AServiceStub(channel).SendMessage(
                        _request(data), metadata=_metadata(key=None), timeout=5
                    )
            return answer.task.status.state, caught.value.code()

        state, plaintext = asyncio.run(calls())
        assert state == 3  # TASK_STATE_COMPLETED
        assert plaintext == grpc.StatusCode.UNAVAILABLE
    finally:
        served.stop()


def _serve_fails(tmp_path: Path, *args: str) -> str:
    done = subprocess.run(
        [skillrack_command(), "serve", "--host", "127.0.0.1", *args],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "SKILLRACK_LOAD_PLUGINS": ""},
    )
    assert done.returncode == 1, (done.stdout, done.stderr)
    return done.stderr


def test_the_grpc_port_must_differ_from_the_agents(tmp_path: Path) -> None:
    port = str(free_port())
    err = _serve_fails(tmp_path, "--port", port, "--grpc-port", port)
    assert "--grpc-port" in err and "--port too" in err and err.count("\n") == 1, err


def test_a_taken_grpc_port_is_one_line(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy = str(taken.getsockname()[1])
        err = _serve_fails(tmp_path, "--port", str(free_port()), "--grpc-port", busy)
    assert f"gRPC cannot listen on 127.0.0.1 port {busy}" in err, err
    assert "Traceback" not in err, err


@pytest.mark.slow
def test_workers_share_the_grpc_port(tmp_path: Path) -> None:
    """``--workers 2``: each worker serves gRPC on the one port (SO_REUSEPORT)."""
    grpc_port = free_port()
    args = ("--workers", "2", "--grpc-port", str(grpc_port))
    with serving(tmp_path, args=args) as served:
        assert f"gRPC: 127.0.0.1:{grpc_port}" in served.output(), served.output()
        data = {"skill": "describe_skill", "arguments": {"skill_id": "echo"}}

        async def calls() -> list[int]:
            states = []
            for _ in range(6):  # a fresh connection each: the kernel picks a worker
                async with grpc.aio.insecure_channel(f"127.0.0.1:{grpc_port}") as channel:
                    answer = await a2a_pb2_grpc.A2AServiceStub(channel).SendMessage(
                        _request(data), metadata=_metadata(key=None)
                    )
                states.append(answer.task.status.state)
            return states

        assert asyncio.run(calls()) == [3] * 6  # TASK_STATE_COMPLETED
