"""An agent that requires mutual TLS *and* an OAuth 2.0 scope, reached with ``skillrack call``.

Issue 20's "done when": ``skillrack serve`` over TLS asking for client
certificates of a test CA (``[plugins.mtls]``) and taking tokens of a local
OpenID Connect issuer (``[plugins.oidc]``), with ``echo`` requiring both at
once (``[skills.echo] security = [{ mtls = [], oidc = ["network:write"] }]``).
``skillrack call`` presents its certificate and obtains a token by client
credentials; without the token it stops locally, naming the option.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.certificates import Issued, TestCA
from helpers.oidc_issuer import AUDIENCE, TOKEN, Issuer, running_issuer
from helpers.served_process import PLUGIN_MODULE, serving

from skillrack.testing.serve import ServedAgent, skillrack_command

SPIFFE = "spiffe://acme.example/ns/noc/sa/observer"


@pytest.fixture(scope="module")
def issuer() -> Iterator[Issuer]:
    with running_issuer() as running:
        running.client("writer", "writer-secret", ("network:read", "network:write"))
        yield running


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> tuple[TestCA, Issued, Issued]:
    ca = TestCA(tmp_path_factory.mktemp("pki"))
    return ca, ca.issue_server("127.0.0.1"), ca.issue_client("observer", uris=(SPIFFE,))


@pytest.fixture(scope="module")
def agent(
    tmp_path_factory: pytest.TempPathFactory,
    issuer: Issuer,
    pki: tuple[TestCA, Issued, Issued],
) -> Iterator[ServedAgent]:
    ca, server, observer = pki
    workdir = tmp_path_factory.mktemp("mtls-oauth")
    (workdir / "policy.toml").write_text(
        '[[rule]]\neffect = "allow"\nskills = ["echo"]\nroles = ["operator"]\n', encoding="utf-8"
    )
    config = workdir / "skillrack.toml"
    config.write_text(
        f"""
[plugins]
builtin = ["{PLUGIN_MODULE}"]

[server]
rate_per_minute = 1000000
ssl_client_ca = "{ca.bundle}"
ssl_client_auth = "required"

[plugins.policy]
file = "policy.toml"

[[plugins.mtls.map]]
spiffe_id = "{SPIFFE}"
identity = "observer"
tenant = "acme-corp"  # the issuer's tenant claim: both credentials name one tenant
roles = ["operator"]

[plugins.oidc]
issuer = "{issuer.issuer}"
audience = "{AUDIENCE}"
allow_loopback = true
roles_claims = ["realm_access.roles"]
roles = {{ "network-operator" = ["operator"] }}

[skills.echo]
security = [{{ mtls = [], oidc = ["network:write"] }}]
""",
        encoding="utf-8",
    )
    tls = ca.client_context(observer)
    tls_args = ("--ssl-certfile", str(server.cert), "--ssl-keyfile", str(server.key))
    with serving(workdir, config=config, args=tls_args, tls=tls) as served:
        yield served


def _call(agent: ServedAgent, *options: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [skillrack_command(), "call", agent.url, "echo", "--args", '{"text": "hi"}', *options],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.slow
def test_skillrack_call_presents_a_certificate_and_a_token(
    agent: ServedAgent, issuer: Issuer, pki: tuple[TestCA, Issued, Issued], tmp_path: Path
) -> None:
    ca, _, observer = pki
    (tmp_path / "secret").write_text("writer-secret\n")
    tls = ("--ca-bundle", str(ca.bundle), "--client-cert", str(observer.cert))
    tls += ("--client-key", str(observer.key))
    oauth = ("--oauth-token-url", issuer.base + TOKEN, "--oauth-client-id", "writer")
    oauth += ("--oauth-client-secret-file", str(tmp_path / "secret"))
    called = _call(agent, *tls, *oauth, "--oauth-scope", "network:write")
    assert called.returncode == 0, called.stdout + called.stderr
    assert json.loads(called.stdout)["result"] == {"echo": "hi"}
    # The certificate alone meets half of the skill's one requirement: refused locally.
    refused = _call(agent, *tls)
    assert refused.returncode == 1, refused.stdout + refused.stderr
    error = json.loads(refused.stdout)["error"]
    assert error["code"] == "authorization_failed"
    assert "requires mtls and oidc (scopes network:write)" in error["message"]
    assert "--oauth-token-url" in error["message"]
    # A token without the scope: the same, after asking the issuer.
    unscoped = _call(agent, *tls, *oauth, "--oauth-scope", "network:read")
    assert unscoped.returncode == 1 and "network:write" in unscoped.stdout
