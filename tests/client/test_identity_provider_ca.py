"""An identity provider on a private CA: --oauth-ca-bundle, ca_bundle settings, SSL_CERT_FILE.

The test issuer (tests/helpers/oidc_issuer.py) is served over TLS with a
certificate of a test CA no trust store knows.  A client-credentials token
is obtained from it by ``skillrack call`` with ``--oauth-ca-bundle``, or
with the standard ``SSL_CERT_FILE`` naming the CA, and not without either
(the certificate does not verify); a host's ``[peers.NAME.oauth] ca_bundle``
lets its delegation obtain one; ``[plugins.oidc] ca_bundle`` lets an agent
fetch the issuer's keys and accept its tokens.  The issuer's own request
counts say what reached it.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from helpers.agent_harness import running_agent
from helpers.agent_skills import AllowAll, TestSkills
from helpers.builders import SkillsPlugin, registry_of, simple_skill
from helpers.certificates import TestCA
from helpers.oidc_issuer import AUDIENCE, REALM, TOKEN, Issuer

from skillrack.cli import main as cli
from skillrack.client.skill_client import SkillClient
from skillrack.errors import SkillCallError
from skillrack.host.config import Config, load_config
from skillrack.host.plugins import load_plugins
from skillrack.host.registry import build_registry
from skillrack.host.startup import first_party_plugins

SKILL = "evaluate_resource_condition"
ARGS = {
    "resource_id": "network-resource-123",
    "condition": {"metric": "utilization", "operator": "gte", "threshold": 80, "unit": "percent"},
}


@pytest.fixture(scope="module")
def ca(tmp_path_factory: pytest.TempPathFactory) -> TestCA:
    return TestCA(tmp_path_factory.mktemp("idp-pki"), name="skillrack test IdP CA")


@pytest.fixture(scope="module")
def issuer(ca: TestCA) -> Iterator[Issuer]:
    """The issuer, on https with a certificate of ``ca``."""
    running = Issuer()
    running.base = f"https://127.0.0.1:{running.port}"
    running.issuer = running.base + REALM
    running.client("svc", "svc-secret", ("network:read",))
    server_cert = ca.issue_server("127.0.0.1")
    server = uvicorn.Server(
        uvicorn.Config(
            running.app(),
            host="127.0.0.1",
            port=running.port,
            log_level="warning",
            ssl_certfile=str(server_cert.cert),
            ssl_keyfile=str(server_cert.key),
        )
    )
    thread = threading.Thread(target=lambda: asyncio.run(server.serve()), daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", running.port), timeout=0.2).close()
            break
        except OSError:
            time.sleep(0.05)
    yield running
    server.should_exit = True
    thread.join(10)


@pytest.fixture(scope="module")
def agent() -> Iterator[str]:
    with running_agent(registry_of([("tests", TestSkills()), ("allow", AllowAll())])) as url:
        yield url


def _call(agent: str, issuer: Issuer, tmp_path: Path, *more: str) -> int:
    (tmp_path / "secret").write_text("svc-secret\n", encoding="utf-8")
    argv = ["call", agent, SKILL, "--args", json.dumps(ARGS)]
    argv += ["--oauth-token-url", issuer.base + TOKEN, "--oauth-client-id", "svc"]
    argv += ["--oauth-client-secret-file", str(tmp_path / "secret"), *more]
    return cli.main(argv)


def test_oauth_ca_bundle_reaches_a_token_url_on_a_private_ca(
    agent: str,
    issuer: Issuer,
    ca: TestCA,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    before = issuer.hits[TOKEN]
    status = _call(agent, issuer, tmp_path)
    error = json.loads(capsys.readouterr().out)["error"]
    assert status == 1 and error["code"] == "transport_error", error
    assert "certificate verify failed" in error["message"].lower()
    assert issuer.hits[TOKEN] == before  # the handshake failed: no request was read
    status = _call(agent, issuer, tmp_path, "--oauth-ca-bundle", str(ca.bundle))
    out = capsys.readouterr().out
    assert status == 0, out
    assert json.loads(out)["state"] == "TASK_STATE_COMPLETED"
    assert issuer.hits[TOKEN] == before + 1


def test_ssl_cert_file_is_honoured(
    agent: str,
    issuer: Issuer,
    ca: TestCA,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", str(ca.bundle))
    before = issuer.hits[TOKEN]
    status = _call(agent, issuer, tmp_path)
    assert status == 0, capsys.readouterr().out
    assert issuer.hits[TOKEN] == before + 1


def test_a_bundle_that_does_not_load_is_a_usage_error(
    agent: str, issuer: Issuer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as stopped:
        _call(agent, issuer, tmp_path, "--oauth-ca-bundle", str(tmp_path / "absent.pem"))
    assert stopped.value.code == 2
    assert "--oauth-ca-bundle" in capsys.readouterr().err


async def relay(arguments: Any, context: Any) -> Any:
    try:
        outcome = await context.delegate("observer", SKILL, ARGS)
    except SkillCallError as exc:
        return {"code": exc.code, "message": exc.message}
    return {"state": outcome.state}


async def test_a_peer_oauth_table_takes_a_ca_bundle(
    agent: str, issuer: Issuer, ca: TestCA, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    (tmp_path / "svc-secret.txt").write_text("svc-secret", encoding="utf-8")
    (tmp_path / "idp-ca.pem").write_bytes(ca.bundle.read_bytes())
    (tmp_path / "skillrack.toml").write_text(
        f'[peers.observer]\nurl = "{agent}"\n'
        "[peers.observer.oauth]\n"
        f'token_url = "{issuer.base + TOKEN}"\nclient_id = "svc"\n'
        'client_secret_file = "svc-secret.txt"\nca_bundle = "idp-ca.pem"\n',
        encoding="utf-8",
    )
    config = load_config(tmp_path / "skillrack.toml")
    relay_skill = simple_skill("relay", handler=relay)
    registry = registry_of([("relay", SkillsPlugin(relay_skill)), ("allow", AllowAll())])
    before = issuer.hits[TOKEN]
    with running_agent(registry, config) as delegator:
        async with SkillClient() as client:
            outcome = await client.call(delegator, "relay", {})
    assert outcome.result == {"state": "TASK_STATE_COMPLETED"}, outcome.result
    assert issuer.hits[TOKEN] == before + 1


@pytest.mark.parametrize("with_bundle", [True, False], ids=["ca_bundle", "none"])
def test_plugins_oidc_takes_a_ca_bundle(
    issuer: Issuer,
    ca: TestCA,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    with_bundle: bool,
) -> None:
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    (tmp_path / "idp-ca.pem").write_bytes(ca.bundle.read_bytes())
    oidc: dict[str, Any] = {"issuer": issuer.issuer, "audience": AUDIENCE, "allow_loopback": True}
    if with_bundle:
        oidc["ca_bundle"] = "idp-ca.pem"
    config = Config(base_dir=tmp_path, first_party={"oidc": oidc})
    plugins = [*first_party_plugins(config), ("tests", TestSkills()), ("allow", AllowAll())]
    registry = build_registry(load_plugins(use_entry_points=False, extra=plugins))
    token = issuer.token()
    with running_agent(registry, config) as url:
        argv = ["call", url, SKILL, "--args", json.dumps(ARGS)]
        status = cli.main([*argv, "--header", f"Authorization: Bearer {token}"])
    out = json.loads(capsys.readouterr().out)
    if with_bundle:
        assert status == 0 and out["state"] == "TASK_STATE_COMPLETED", out
    else:  # the issuer's keys cannot be fetched: the token is refused, generically
        assert status == 1 and out["error"]["code"] == "authorization_failed", out
