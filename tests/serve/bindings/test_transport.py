"""Per-caller limits, the safe default policy, and TLS, on real servers and processes."""

from __future__ import annotations

import datetime as dt
import ipaddress
import os
import ssl
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from helpers.agent_harness import running_agent
from helpers.waiting import wait_until

from skillrack.host.config import Config, ServerSettings
from skillrack.host.registry import Registry
from skillrack.testing.serve import (
    error_of,
    free_port,
    invoke,
    skill_request,
    skillrack_command,
    wait_for_state,
)


@pytest.fixture(scope="module")
def base(registry: Registry, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    config = Config(
        base_dir=tmp_path_factory.mktemp("limits"),
        server=ServerSettings(rate_per_minute=40, max_concurrent_tasks=1, max_parts=2),
    )
    with running_agent(registry, config) as url:
        yield url


def slow(registry: Registry, seconds: float) -> dict[str, object]:
    skill = registry.skills["slow_cancellable"]
    return skill_request("slow_cancellable", {"seconds": seconds}, "1.0", skill.interface_digest)


def test_concurrent_tasks_per_caller(base: str, registry: Registry) -> None:
    first = invoke(base, slow(registry, 2), configuration={"returnImmediately": True})
    wait_for_state(base, first["id"], {"TASK_STATE_WORKING"})  # it holds the caller's slot
    second = invoke(base, slow(registry, 0))
    assert second["status"]["state"] == "TASK_STATE_REJECTED"
    assert error_of(second)["code"] == "resource_limit_exceeded"
    assert "1" not in error_of(second)["message"]  # the threshold is not disclosed
    httpx.post(
        base + "/",
        json={"jsonrpc": "2.0", "id": 1, "method": "CancelTask", "params": {"id": first["id"]}},
        headers={"A2A-Version": "1.0"},
    )


def test_too_many_parts_is_refused_before_a_task(base: str) -> None:
    parts = [{"text": "a"}, {"text": "b"}, {"text": "c"}]
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "SendMessage",
        "params": {"message": {"messageId": "m", "role": "ROLE_USER", "parts": parts}},
    }
    answer = httpx.post(base + "/", json=body, headers={"A2A-Version": "1.0"}).json()
    assert answer["error"]["data"][0]["metadata"]["code"] == "resource_limit_exceeded"
    rest = httpx.post(base + "/message:send", json=body["params"], headers={"A2A-Version": "1.0"})
    assert rest.status_code == 413


def test_request_rate_per_caller(base: str) -> None:
    answers = [httpx.get(base + "/tasks/none", headers={"A2A-Version": "1.0"}) for _ in range(45)]
    limited = [a for a in answers if a.status_code == 429]
    assert limited, [a.status_code for a in answers]
    assert limited[0].json()["error"]["details"][0]["reason"] == "RESOURCE_LIMIT_EXCEEDED"
    assert limited[0].headers["retry-after"]
    card = httpx.get(base + "/.well-known/agent-card.json")  # the card is never limited
    assert card.status_code == 200


# The safe default ------------------------------------------------------------------------------


def serve(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    """``skillrack serve`` in ``cwd``, so its default task store is the test's own file."""
    return subprocess.Popen(
        [skillrack_command(), "serve", *args, "--log-level", "warning"],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "SKILLRACK_LOAD_PLUGINS": "", **(env or {})},
    )


def test_non_loopback_without_policy_refuses_to_start(tmp_path: Path) -> None:
    process = serve("--host", "0.0.0.0", "--port", str(free_port()), cwd=tmp_path)
    _, err = process.communicate(timeout=30)
    assert process.returncode == 1
    assert "no authorization policy is configured" in err and "--insecure-allow-all" in err
    assert err.count("\n") == 1


def self_signed(tmp_path: Path) -> tuple[Path, Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=1))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


def test_tls(tmp_path: Path) -> None:
    cert, key = self_signed(tmp_path)
    port = free_port()
    process = serve(
        "--port", str(port), "--ssl-certfile", str(cert), "--ssl-keyfile", str(key), cwd=tmp_path
    )
    try:

        def card_or_none() -> Any:
            try:
                return httpx.get(
                    f"https://127.0.0.1:{port}/.well-known/agent-card.json",
                    verify=ssl.create_default_context(cafile=str(cert)),
                ).json()
            except httpx.TransportError:
                return None

        card = wait_until(card_or_none, "the card over HTTPS", timeout=20)
        assert {i["url"] for i in card["supportedInterfaces"]} == {
            f"https://127.0.0.1:{port}/",
            f"https://127.0.0.1:{port}",
        }
        with pytest.raises(httpx.TransportError):
            httpx.get(f"http://127.0.0.1:{port}/.well-known/agent-card.json", timeout=3)
    finally:
        process.terminate()
        process.communicate(timeout=10)
