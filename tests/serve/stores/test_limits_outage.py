"""Redis, the shared limits store, stops and starts again under two real ``skillrack serve``.

Replica "deny" (``limits_on_outage = "deny"``) and replica "allow" (the
default) count in the test's own redis-server.  While it is stopped, "deny"
refuses every request at once with a retryable 503 naming the store, "allow"
serves, counting in its own process; each logs the outage once however many
requests it meets, and counts it in ``skillrack_limits_store_outages_total``.
When Redis is back, both count in it again without a restart (the keys
appear in Redis).
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from helpers.served_process import probe_request, start, write_config

from skillrack.testing.serve import HEADERS, message

pytestmark = pytest.mark.slow

KEY_PREFIX = "failover-test:"


@dataclass
class OwnRedis:
    """A redis-server of the test's own on a fixed loopback port, to stop and start."""

    directory: Path
    port: int
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        server = shutil.which("redis-server")
        assert server is not None
        self.process = subprocess.Popen(
            [
                server,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                str(self.directory),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
                return
            except OSError:
                assert time.monotonic() < deadline and self.process.poll() is None
                time.sleep(0.05)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=10)

    def stored_keys(self) -> list[str]:
        cli = shutil.which("redis-cli") or "redis-cli"
        out = subprocess.run(
            [cli, "-p", str(self.port), "--scan", "--pattern", f"{KEY_PREFIX}*"],
            capture_output=True,
            check=True,
            timeout=10,
        )
        return out.stdout.decode().split()


@pytest.fixture
def redis(tmp_path: Path) -> Iterator[OwnRedis]:
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = OwnRedis(tmp_path, port)
    server.start()
    try:
        yield server
    finally:
        server.stop()


def _echo(url: str, request: dict[str, object]) -> tuple[httpx.Response, float]:
    body = {
        "jsonrpc": "2.0",
        "id": "1",
        "method": "SendMessage",
        "params": {"message": message(request)},
    }
    began = time.monotonic()
    answer = httpx.post(url + "/", json=body, headers=HEADERS, timeout=30)
    return answer, time.monotonic() - began


def _outages(url: str) -> float:
    text = httpx.get(url + "/metrics", timeout=10).text
    [line] = [
        line
        for line in text.splitlines()
        if line.startswith("skillrack_limits_store_outages_total")
    ]
    return float(line.split()[-1])


def test_a_redis_outage_follows_limits_on_outage(redis: OwnRedis, tmp_path: Path) -> None:
    agents = {}
    for mode in ("deny", "allow"):
        (tmp_path / mode).mkdir()
        config = write_config(
            tmp_path / mode,
            f'limits_store = "{redis.url}"\nlimits_key_prefix = "{KEY_PREFIX}{mode}:"\n'
            f'limits_on_outage = "{mode}"\n',
        )
        agents[mode] = start(tmp_path / mode, config=config)
    try:
        deny, allow = (agents[mode].wait_ready() for mode in ("deny", "allow"))
        requests = {mode: probe_request(agents[mode].url, "echo", {}) for mode in agents}
        for mode, agent in agents.items():
            answer, _ = _echo(agent.url, requests[mode])
            assert answer.json()["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
        assert any(key.startswith(f"{KEY_PREFIX}deny:") for key in redis.stored_keys())

        redis.stop()
        for _ in range(5):
            refused, took = _echo(deny.url, requests["deny"])
            assert took < 7, took  # redis-py's connect timeout is 5 s: never a hang
            assert refused.status_code == 503, refused.text
            assert refused.headers["retry-after"] == "2"
            error = refused.json()["error"]
            assert "limits_on_outage" in error["message"] and str(redis.port) in error["message"]
            assert error["data"][0]["metadata"]["code"] == "resource_limit_exceeded"
            served, _ = _echo(allow.url, requests["allow"])
            assert served.json()["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
        for agent in (deny, allow):
            assert agent.output().count("unreachable") == 1, agent.output()
            assert _outages(agent.url) == 1

        redis.start()
        for mode, agent in agents.items():
            answer, _ = _echo(agent.url, requests[mode])
            assert answer.json()["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
            assert "answers again" in agent.output()
        assert any(key.startswith(f"{KEY_PREFIX}deny:") for key in redis.stored_keys())
        assert any(key.startswith(f"{KEY_PREFIX}allow:") for key in redis.stored_keys())
    finally:
        for agent in agents.values():
            agent.stop()
