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

import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from helpers.own_redis import OwnRedis, own_redis
from helpers.scraped import refusals
from helpers.served_process import probe_request, start, write_config

from skillrack.testing.serve import HEADERS, message

pytestmark = pytest.mark.slow

KEY_PREFIX = "failover-test:"


@pytest.fixture
def redis(tmp_path: Path) -> Iterator[OwnRedis]:
    with own_redis(tmp_path) as server:
        yield server


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
        # Each of deny's five 503s counted; allow refused nothing.
        assert refusals(deny.url, "limits_store_unavailable") == 5
        assert refusals(allow.url, "limits_store_unavailable") == 0

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
