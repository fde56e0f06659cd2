"""State two replicas share: approvals in PostgreSQL, per-caller limits in Redis.

Replicas A and B are separate ``skillrack serve`` processes holding the
example vendor, on one PostgreSQL database (``[server] store``) and one
Redis (``[server] limits_store``, under a key prefix of this run's own):

* a ``skillrack call`` to A waits for an approval; ``skillrack approvals
  grant`` run with B's configuration decides it, and the call finishes;
* a caller's ``rate_per_minute`` holds across both: requests alternating
  between them are refused (429) once the caller made that many in all,
  by A and B alike.

The concurrency counters are tested on Redis directly, as two replicas'
counters: one caller's slots hold across both, and the slots of a replica
that died (no release, no renewal) are free again once their lease expires.
Everything skips, saying so, when PostgreSQL or Redis cannot be reached.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from helpers.example_vendor import example_vendor_env
from helpers.postgres import fresh_database

from skillrack.serve.stores.counters import RedisCounter
from skillrack.testing.serve import HEADERS, skillrack_command, start_agent

REDIS_URL = "redis://127.0.0.1:6379/0"
WAITING = re.compile(r"waiting for approval (\w+) by role 'operator' \(task ([0-9a-f-]+);")
CALL = (skillrack_command(), "call")
GRANT = (skillrack_command(), "approvals", "grant")
RATE = 40
RESET = json.dumps(
    {
        "operation": "reset_counters",
        "device_id": "edge-router-1",
        "interface": "eth1",
        "reason": "x",
    }
)


def _redis_or_skip() -> None:
    try:
        import redis
    except ImportError:
        pytest.skip("redis-py is not installed (the redis extra)")
    try:
        redis.Redis.from_url(REDIS_URL, socket_connect_timeout=3).ping()
    except redis.RedisError as exc:
        pytest.skip(f"Redis is not reachable at {REDIS_URL} ({exc})")


@pytest.fixture(scope="module")
def prefix() -> Iterator[str]:
    """A key prefix of this test's own (and its xdist worker's); its keys are deleted afterwards."""
    _redis_or_skip()
    import redis

    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    name = f"skillrack-test:{worker}:{uuid.uuid4().hex[:12]}:"
    yield name
    client = redis.Redis.from_url(REDIS_URL)
    for key in client.scan_iter(match=name + "*"):
        client.delete(key)


@pytest.fixture(scope="module")
def replicas(
    prefix: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, str, Path]]:
    """Replicas A and B: their URLs, and B's configuration."""
    with fresh_database() as database:
        config = (
            f'[server]\nstore = "{database}"\nlimits_store = "{REDIS_URL}"\n'
            f'limits_key_prefix = "{prefix}"\nrate_per_minute = {RATE}\n'
        )
        started, configs = [], []
        for name in ("replica-a", "replica-b"):
            workdir = tmp_path_factory.mktemp(name)
            (workdir / "skillrack.toml").write_text(config)
            configs.append(workdir / "skillrack.toml")
            started.append(
                start_agent(
                    workdir,
                    env=example_vendor_env(workdir / "site"),
                    args=("--config", str(workdir / "skillrack.toml")),
                )
            )
        try:
            ready = [served.wait_ready(120) for served in started]
            for served in ready:
                assert "approvals store: postgresql+asyncpg://" in served.output()
                assert f"limits counted in: redis {REDIS_URL} (keys {prefix}*)" in served.output()
            yield ready[0].url, ready[1].url, configs[1]
        finally:
            for served in started:
                served.stop()


@pytest.mark.slow
def test_approval_granted_through_b_finishes_a_task_started_on_a(
    replicas: tuple[str, str, Path],
) -> None:
    a, _, config_b = replicas
    call = subprocess.Popen(
        [*CALL, a, "manage_interface", "--args", RESET, "--approval-interval", "0.5"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert call.stderr is not None
        line = call.stderr.readline()
        found = re.search(
            r"waiting for approval (\w+) by role 'operator' \(task ([0-9a-f-]+);", line
        )
        assert found is not None, line + call.stderr.read()
        granted = subprocess.run(
            [
                *GRANT,
                found.group(1),
                "--config",
                str(config_b),
                "--by",
                "operator-on-b",
                "--reason",
                "ok",
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert granted.returncode == 0, granted.stderr
        out, err = call.communicate(timeout=120)
    finally:
        call.kill()
    assert call.returncode == 0, err
    result = json.loads(out)
    assert result["task_id"] == found.group(2) and result["state"] == "TASK_STATE_COMPLETED"
    assert result["result"]["counters_reset"] is True


@pytest.mark.slow
def test_a_callers_rate_limit_holds_across_both_replicas(
    replicas: tuple[str, str, Path],
) -> None:
    a, b, _ = replicas
    body = {"jsonrpc": "2.0", "id": "1", "method": "GetTask", "params": {"id": "none"}}
    accepted = 0
    with httpx.Client(headers=HEADERS, timeout=30) as client:
        for turn in range(2 * RATE + 2):
            answer = client.post((a if turn % 2 else b) + "/", json=body)
            if answer.status_code == 429:
                break
            accepted += 1
        else:
            pytest.fail(f"{2 * RATE + 2} requests through two replicas, none refused")
        # Counted per process, each replica would have accepted RATE: together they did.
        assert accepted <= RATE
        for url in (a, b):
            refused = client.post(url + "/", json=body)
            assert refused.status_code == 429
            assert int(refused.headers["retry-after"]) >= 1


@pytest.mark.slow
def test_concurrency_slots_are_shared_and_a_dead_replicas_slots_expire(prefix: str) -> None:
    async def run() -> None:
        replica_a = RedisCounter(REDIS_URL, prefix + "slots-test:", lease_s=0.6)
        replica_b = RedisCounter(REDIS_URL, prefix + "slots-test:", lease_s=0.6)
        try:
            first = await replica_a.acquire("id:/alice", 2)
            second = await replica_b.acquire("id:/alice", 2)
            assert first and second
            assert await replica_a.acquire("id:/alice", 2) is None  # two running, on A and B
            assert await replica_b.acquire("id:/bob", 2)  # another caller is not affected
            await replica_b.release("id:/alice", second)
            third = await replica_a.acquire("id:/alice", 2)
            assert third is not None
            await asyncio.sleep(1.5)  # A renews its leases while they are held
            assert await replica_b.acquire("id:/alice", 2) is None
            # A dies: no release, no renewal; its two slots expire with their leases.
            await replica_a.aclose()
            await asyncio.sleep(1.0)
            assert await replica_b.acquire("id:/alice", 2)
            assert await replica_b.acquire("id:/alice", 2)
            assert await replica_b.acquire("id:/alice", 2) is None
        finally:
            await replica_b.aclose()

    asyncio.run(run())


@pytest.mark.slow
def test_rate_limit_in_redis_is_a_sliding_window(prefix: str) -> None:
    async def run() -> None:
        counter = RedisCounter(REDIS_URL, prefix + "rate-test:")
        try:
            for _ in range(3):
                assert await counter.rate("ip:192.0.2.1", 3, 1.0) is None
            retry = await counter.rate("ip:192.0.2.1", 3, 1.0)
            assert retry == 1
            assert await counter.rate("ip:192.0.2.2", 3, 1.0) is None  # per caller
            await asyncio.sleep(1.1)
            assert await counter.rate("ip:192.0.2.1", 3, 1.0) is None  # the window slid
        finally:
            await counter.aclose()

    asyncio.run(run())


def test_an_unreachable_redis_counts_in_this_process(caplog: pytest.LogCaptureFixture) -> None:
    async def run() -> None:
        counter = RedisCounter("redis://127.0.0.1:1/0", "skillrack-test:down:")
        try:
            assert await counter.rate("ip:192.0.2.9", 1, 60.0) is None
            assert await counter.rate("ip:192.0.2.9", 1, 60.0) is not None  # still limited
            token = await counter.acquire("ip:192.0.2.9", 1)
            assert token is not None and await counter.acquire("ip:192.0.2.9", 1) is None
            await counter.release("ip:192.0.2.9", token)
            assert await counter.acquire("ip:192.0.2.9", 1) is not None
        finally:
            await counter.aclose()

    asyncio.run(run())
    warnings = [r for r in caplog.records if "unreachable" in r.getMessage()]
    assert len(warnings) == 1  # once a minute, not once a request


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("redis://127.0.0.1:1/0", "[server] limits_store redis redis://127.0.0.1:1/0"),
        ("http://127.0.0.1:6379", "give a redis:// (or rediss://, unix://) URL"),
        ("redis://user:secret@127.0.0.1:1/0", "redis://user:***@127.0.0.1:1/0"),
    ],
)
def test_serve_refuses_a_limits_store_it_cannot_use_in_one_line(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    value: str,
    expected: str,
) -> None:
    from skillrack.cli.main import main

    monkeypatch.setenv("SKILLRACK_LOAD_PLUGINS", "")
    config = tmp_path / "skillrack.toml"
    config.write_text(f'[server]\nstore = "memory"\nlimits_store = "{value}"\n')
    assert main(["serve", "--config", str(config), "--port", "1"]) == 1
    err = capsys.readouterr().err
    assert expected in err and "secret" not in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
