"""``/-/livez`` and ``/-/readyz``, and the sample Kubernetes Deployment that probes them.

The Deployment in ``docs/failures.md`` is read (its probes' paths and ``Host``
header, its grace, its replicas, the configuration it mounts), and a real
``skillrack serve`` answers those probes over loopback as the kubelet would
ask them.  A readiness check that fails makes ``/-/readyz`` answer 503 naming it.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import httpx
from helpers.served_process import serving, write_config

from skillrack.host.config import load_config
from skillrack.serve.bindings.operator_endpoints import LIVEZ_PATH, READYZ_PATH

DOC = Path(__file__).resolve().parents[2] / "docs" / "failures.md"


def _manifest() -> str:
    [block] = re.findall(r"```yaml\n(.*?)```", DOC.read_text(), flags=re.DOTALL)
    return block


def _mounted_config(manifest: str) -> str:
    """The ``skillrack.toml`` the ConfigMap holds (its indented literal block)."""
    found = re.search(r"skillrack\.toml: \|\n((?:    .*\n)+)", manifest)
    assert found is not None, manifest
    return "\n".join(line.removeprefix("    ") for line in found.group(1).splitlines())


def test_the_sample_deployment_matches_what_is_served(tmp_path: Path) -> None:
    manifest = _manifest()
    probes = re.findall(
        r"(liveness|readiness)Probe:\n\s+httpGet:\n\s+path: (\S+)\n\s+port: (\d+)\n"
        r"\s+httpHeaders:\n\s+- name: Host\n\s+value: (\S+)",
        manifest,
    )
    assert {kind: path for kind, path, _, _ in probes} == {
        "liveness": LIVEZ_PATH,
        "readiness": READYZ_PATH,
    }
    assert re.search(r"\n  replicas: 2\n", manifest)
    [grace] = re.findall(r"terminationGracePeriodSeconds: (\d+)", manifest)
    config_text = _mounted_config(manifest)
    config_path = tmp_path / "deployment.toml"
    config_path.write_text(config_text)
    config = load_config(config_path)  # the mounted configuration is one skillrack reads
    assert config.server.store.startswith("postgresql+asyncpg://skillrack@postgres:")
    assert config.server.limits_store.startswith("redis://redis:")
    # The orchestrator waits for the drain and the 5 s given to open streams afterwards.
    assert int(grace) > config.server.shutdown_grace + 5
    host = probes[0][3]
    assert all(probe[3] == host for probe in probes)

    served_config = write_config(tmp_path, f'allowed_hosts = ["{host}", "127.0.0.1"]\n')
    with serving(tmp_path / "agent", config=served_config) as agent:
        for _, path, _, _ in probes:
            answer = httpx.get(agent.url + path, headers={"Host": host}, timeout=10)
            assert answer.status_code == 200, answer.text
        ready = httpx.get(agent.url + READYZ_PATH, timeout=10).json()
        assert ready == {
            "status": "ready",
            "checks": {"task_store": "ok", "plugins": "ok"},
        }
        assert tomllib.loads(config_text)["server"]["shutdown_grace"] == 30


def test_readyz_answers_503_naming_the_check_that_failed_or_hung() -> None:
    import asyncio

    from starlette.applications import Starlette
    from starlette.routing import Route

    from skillrack.serve.bindings import operator_endpoints

    async def fine() -> str | None:
        return None

    async def refused() -> str | None:
        raise ConnectionRefusedError("Connect call failed ('127.0.0.1', 6379)")

    async def hangs() -> str | None:
        await asyncio.sleep(60)
        return None

    draining = [False]
    checks = {"task_store": fine, "limits_store": refused}
    app = Starlette(
        routes=[Route(READYZ_PATH, operator_endpoints.readyz_endpoint(checks, lambda: draining[0]))]
    )

    async def run() -> None:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://agent") as client:
            answer = await client.get(READYZ_PATH)
            assert answer.status_code == 503
            assert answer.json()["checks"] == {
                "task_store": "ok",
                "limits_store": "ConnectionRefusedError: Connect call failed ('127.0.0.1', 6379)",
            }
            checks["limits_store"] = fine
            assert (await client.get(READYZ_PATH)).status_code == 200
            draining[0] = True
            answer = await client.get(READYZ_PATH)
            assert answer.status_code == 503
            assert answer.json()["checks"]["shutdown"].startswith("draining")
            draining[0] = False
            saved, operator_endpoints.CHECK_TIMEOUT_S = operator_endpoints.CHECK_TIMEOUT_S, 0.2
            try:
                checks["task_store"] = hangs
                answer = await client.get(READYZ_PATH)
            finally:
                operator_endpoints.CHECK_TIMEOUT_S = saved
            assert answer.status_code == 503
            assert answer.json()["checks"]["task_store"] == "no answer within 0.2 s"

    asyncio.run(run())
