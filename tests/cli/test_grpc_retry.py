"""skillrack's own gRPC port over its rate limit: ``resource_limit_exceeded`` with the wait.

A real ``skillrack serve --grpc-port`` with a rate limit of two requests a
minute answers the third with ``RESOURCE_EXHAUSTED``, its ``ErrorInfo`` and
``retry-after`` trailing metadata.  The client shows it as the draft's
``resource_limit_exceeded`` with that wait, as it shows HTTP 429; ``--retry``
does not begin a wait that would pass the call's ``--timeout``.  Another
replica counts its limits in a Redis of the test's own with
``limits_on_outage = "deny"``: while Redis is stopped its gRPC port answers
``UNAVAILABLE`` with ``retry-after: 2``, and a call with ``--retry`` waits
that long and goes through once Redis is back.  (The same against the plain
a2a-sdk agent, with its ``google.rpc.RetryInfo``:
tests/cli/test_plain_agent_limits.py.)  An interface nobody listens on is a
``transport_error``, never retried.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from helpers.own_redis import own_redis
from helpers.served_process import serving, write_config, write_operator_config

from skillrack.cli import main as cli
from skillrack.client.busy import AgentBusy
from skillrack.client.disk_cache import DiskCache
from skillrack.client.grpc_channel import grpc_failure
from skillrack.client.skill_client import SkillClient
from skillrack.testing.serve import CARD_PATH, ServedAgent, free_port

KEY = "grpc-retry-test-key"


@pytest.fixture(scope="module")
def limited(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ServedAgent, list[str]]]:
    workdir = tmp_path_factory.mktemp("grpc-retry")
    config = write_operator_config(workdir, KEY, f"rate_per_minute = 2\ngrpc_port = {free_port()}")
    with serving(workdir, config=config) as served:
        card = httpx.get(served.url + CARD_PATH, timeout=10).json()
        [target] = [i["url"] for i in card["supportedInterfaces"] if i["protocolBinding"] == "GRPC"]
        options = ["--binding", "grpc", "--allow-origin", f"http://{target}"]
        yield served, [*options, "--header", f"X-API-Key: {KEY}", "--no-cache"]


def grpc_origin(url: str) -> str:
    card = httpx.get(url + CARD_PATH, timeout=10).json()
    [target] = [i["url"] for i in card["supportedInterfaces"] if i["protocolBinding"] == "GRPC"]
    return f"http://{target}"


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


@pytest.mark.slow
async def test_retry_waits_out_a_limits_store_outage_over_grpc(tmp_path: Path) -> None:
    with own_redis(tmp_path) as redis:
        config = write_config(
            tmp_path,
            f'grpc_port = {free_port()}\ncard_max_age = 300\nlimits_store = "{redis.url}"\n'
            'limits_on_outage = "deny"\n',
        )
        with serving(tmp_path, config=config) as agent:
            disk = DiskCache(tmp_path / "cache")  # the card and document: no HTTP below

            def client(retries: int) -> SkillClient:
                allow = [grpc_origin(agent.url)]
                return SkillClient(
                    binding="GRPC", allow_origins=allow, disk_cache=disk, retries=retries
                )

            async with client(0) as first:
                assert (await first.call(agent.url, "echo", {"text": "a"})).result == {"echo": "a"}
            redis.stop()
            async with client(0) as refused:
                with pytest.raises(AgentBusy) as busy:
                    await refused.call(agent.url, "echo", {"text": "b"})
            assert busy.value.code == "resource_limit_exceeded" and busy.value.retry_after == 2
            assert "answered gRPC UNAVAILABLE" in busy.value.message, busy.value.message
            assert "limits_on_outage" in busy.value.message
            back = threading.Timer(1.0, redis.start)  # Redis returns during the first wait
            back.start()
            started = time.monotonic()
            async with client(5) as patient:
                result = await patient.call(agent.url, "echo", {"text": "c"})
            back.join()
            assert result.result == {"echo": "c"}
            assert time.monotonic() - started >= 2.0  # the wait the agent asked for, at least


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
    assert mapped.code == "transport_error" and "the gRPC connection failed" in mapped.message
