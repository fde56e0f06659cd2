"""skillrack's own gRPC port over its rate limit: ``resource_limit_exceeded`` with the wait.

A real ``skillrack serve --grpc-port`` with a rate limit of two requests a
minute answers the third with ``RESOURCE_EXHAUSTED``, its ``ErrorInfo`` and
``retry-after`` trailing metadata.  The client shows it as the draft's
``resource_limit_exceeded`` with that wait, as it shows HTTP 429; ``--retry``
does not begin a wait that would pass the call's ``--timeout``.  (That
``--retry`` waits as asked and then goes through, on gRPC as over HTTP, is
shown against the plain a2a-sdk agent: tests/cli/test_plain_agent_limits.py.)
An interface nobody listens on is a ``transport_error``, never retried.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from helpers.served_process import PLUGIN_MODULE, serving

from skillrack.cli import main as cli
from skillrack.client.busy import AgentBusy
from skillrack.client.grpc_channel import grpc_failure
from skillrack.testing.serve import CARD_PATH, ServedAgent, free_port

KEY = "grpc-retry-test-key"


@pytest.fixture(scope="module")
def limited(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ServedAgent, list[str]]]:
    workdir = tmp_path_factory.mktemp("grpc-retry")
    keys, policy = workdir / "keys.toml", workdir / "policy.toml"
    keys.write_text(
        f'[[key]]\nsha256 = "{hashlib.sha256(KEY.encode()).hexdigest()}"\n'
        'identity = "alice"\nroles = ["operator"]\n'
    )
    policy.write_text('[[rule]]\neffect = "allow"\nroles = ["operator"]\nskills = ["*"]\n')
    config = workdir / "skillrack.toml"
    config.write_text(
        f'[plugins]\nbuiltin = ["{PLUGIN_MODULE}"]\n\n'
        f"[server]\nrate_per_minute = 2\ngrpc_port = {free_port()}\n\n"
        f'[plugins.api_keys]\nfile = "{keys}"\n\n[plugins.policy]\nfile = "{policy}"\n'
    )
    with serving(workdir, config=config) as served:
        card = httpx.get(served.url + CARD_PATH, timeout=10).json()
        [target] = [i["url"] for i in card["supportedInterfaces"] if i["protocolBinding"] == "GRPC"]
        options = ["--binding", "grpc", "--allow-origin", f"http://{target}"]
        yield served, [*options, "--header", f"X-API-Key: {KEY}", "--no-cache"]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, Any]:
    status = cli.main(list(argv))
    return status, json.loads(capsys.readouterr().out)


def test_over_the_limit_is_resource_limit_exceeded_with_the_wait(
    limited: tuple[ServedAgent, list[str]], capsys: pytest.CaptureFixture[str]
) -> None:
    agent, options = limited
    argv = ["call", agent.url, "echo", "--args", '{"text": "hi"}', *options]
    for _ in range(4):  # two requests a minute; a call is two (describe_skill, the call)
        status, out = run(capsys, *argv)
        if status != 0:
            break
    assert status == 1, out
    error = out["error"]
    assert error["code"] == "resource_limit_exceeded", error
    assert 0 < error["retry_after"] <= 60
    message = error["message"]
    assert "the agent answered gRPC RESOURCE_EXHAUSTED" in message, message
    assert f"retry after {error['retry_after']:g} s" in message and "--retry N" in message
    assert "transport_error" not in message and "AioRpcError" not in message
    # A wait past the call's timeout is not begun: the refusal is reported at once.
    started = time.monotonic()
    status, out = run(capsys, *argv, "--retry", "3", "--timeout", "5")
    assert time.monotonic() - started < 4
    assert status == 1 and out["error"]["code"] == "resource_limit_exceeded"


def test_an_interface_nobody_listens_on_is_a_transport_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """grpcio's own UNAVAILABLE (nothing reached) is not the agent's: not retried, not busy."""
    import asyncio

    import grpc.aio
    from a2a.types import GetTaskRequest, a2a_pb2_grpc

    async def unreachable() -> BaseException:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{free_port()}") as channel:
            try:
                await a2a_pb2_grpc.A2AServiceStub(channel).GetTask(GetTaskRequest(id="t"))
            except grpc.aio.AioRpcError as exc:
                return exc
        raise AssertionError("nothing listens there")

    mapped = grpc_failure(asyncio.run(unreachable()), "calling x")
    assert mapped is not None and not isinstance(mapped, AgentBusy)
    assert mapped.code == "transport_error" and "unreachable" in mapped.message
