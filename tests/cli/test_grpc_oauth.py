"""OAuth tokens over gRPC: sent to the agent's own gRPC port when safe, never where a card says.

A real ``skillrack serve --grpc-port`` takes tokens of a local OpenID Connect
issuer (``[plugins.oidc]``): ``skillrack call --binding grpc`` with
``--oauth-*`` obtains one and sends it to the gRPC port, on the named
agent's host (loopback), as ``authorization`` metadata; the agent admits
it.  The plain a2a-sdk agent's card then plays a hostile card: it puts its
gRPC interface on another host (``127.0.0.2``), where a gRPC server records
every call's metadata.  Even with that origin allowed for the headers, the
call is refused before anything is sent there, naming ``--oauth-origin``;
with ``--oauth-origin`` the token goes, and only then.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import httpx
import jwt
import pytest
from helpers.oidc_issuer import AUDIENCE, TOKEN, Issuer, running_issuer
from helpers.plain_a2a_agent import PlainAgent, plain_agent
from helpers.served_process import PLUGIN_MODULE, serving

from skillrack.cli import main as cli
from skillrack.client.origin import Origin
from skillrack.client.token_reach import token_refusal
from skillrack.host.config import load_config
from skillrack.host.settings import ConfigError
from skillrack.testing.serve import CARD_PATH, ServedAgent, free_port


@pytest.fixture(scope="module")
def issuer() -> Iterator[Issuer]:
    with running_issuer() as running:
        running.client("caller", "caller-secret", ("network:read",))
        yield running


@pytest.fixture(scope="module")
def secret(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("oauth") / "secret"
    path.write_text("caller-secret\n")
    return path


def oauth(issuer: Issuer, secret: Path) -> list[str]:
    return [
        "--oauth-token-url", issuer.base + TOKEN, "--oauth-client-id", "caller",
        "--oauth-client-secret-file", str(secret),
    ]  # fmt: skip


@pytest.fixture(scope="module")
def agent(tmp_path_factory: pytest.TempPathFactory, issuer: Issuer) -> Iterator[ServedAgent]:
    workdir = tmp_path_factory.mktemp("grpc-oauth")
    (workdir / "policy.toml").write_text(
        '[[rule]]\neffect = "allow"\nskills = ["*"]\nroles = ["operator"]\n', encoding="utf-8"
    )
    config = workdir / "skillrack.toml"
    config.write_text(
        f"""
[plugins]
builtin = ["{PLUGIN_MODULE}"]

[server]
rate_per_minute = 1000000
grpc_port = {free_port()}

[plugins.policy]
file = "policy.toml"

[plugins.oidc]
issuer = "{issuer.issuer}"
audience = "{AUDIENCE}"
allow_loopback = true
roles_claims = ["realm_access.roles"]
roles = {{ "network-operator" = ["operator"] }}
""",
        encoding="utf-8",
    )
    with serving(workdir, config=config) as served:
        yield served


@pytest.fixture(scope="module")
def hostile() -> Iterator[PlainAgent]:
    with plain_agent(grpc_host="127.0.0.2") as served:
        yield served


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, Any]:
    status = cli.main(list(argv))
    out = capsys.readouterr().out
    try:
        return status, json.loads(out)
    except ValueError:
        return status, out.strip()


@pytest.mark.parametrize("way", [[], ["--stream"]])
def test_the_token_reaches_the_agents_own_grpc_port(
    agent: ServedAgent,
    issuer: Issuer,
    secret: Path,
    way: list[str],
    capsys: pytest.CaptureFixture[str],
) -> None:
    card = httpx.get(agent.url + CARD_PATH, timeout=10).json()
    [target] = [i["url"] for i in card["supportedInterfaces"] if i["protocolBinding"] == "GRPC"]
    grpc = ["--binding", "grpc", "--allow-origin", f"http://{target}"]
    argv = ["call", agent.url, "echo", "--args", '{"text": "hi"}', *grpc, *way]
    status, out = run(capsys, *argv, *oauth(issuer, secret))
    assert status == 0, out
    assert out["state"] == "TASK_STATE_COMPLETED" and out["result"] == {"echo": "hi"}
    # Without the token the agent refuses the gRPC call: the token is what got it in.
    status, out = run(capsys, *argv, "--no-cache")
    assert status == 1 and out["error"]["code"] == "authorization_failed", out


@pytest.mark.parametrize("mode", ["sync", "stream"])
async def test_a_token_the_grpc_port_refuses_is_dropped(
    issuer: Issuer, secret: Path, mode: Literal["sync", "stream"]
) -> None:
    """As after a 401 over HTTP: the next call asks the issuer for a new token."""
    from skillrack.client.oauth import ClientCredentials
    from skillrack.client.skill_client import SkillClient
    from skillrack.errors import SkillCallError

    creds = ClientCredentials(issuer.base + TOKEN, "caller", secret.read_text().strip())
    with plain_agent() as plain:
        allow = [f"http://{plain.grpc_target}"]
        async with SkillClient(binding="GRPC", oauth=creds, allow_origins=allow) as client:
            before = issuer.hits[TOKEN]
            plain.gate.unauthenticated = 1
            with pytest.raises(SkillCallError) as refused:
                await client.send_message(plain.url, ["a"], skill="echo", mode=mode)
            assert refused.value.code == "authorization_failed"
            answer = await client.send_message(plain.url, ["b"], skill="echo", mode=mode)
            assert answer["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
        first, second = (sent["authorization"] for sent in plain.grpc_metadata)
    assert issuer.hits[TOKEN] - before == 2 and first != second  # a new token after the refusal


def test_a_card_pointing_grpc_at_another_host_gets_no_token(
    hostile: PlainAgent, issuer: Issuer, secret: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    elsewhere = f"http://{hostile.grpc_target}"
    hostile.grpc_metadata.clear()
    hostile.gate.seen.clear()
    argv = ["call", hostile.url, "echo", "--text", "hi", "--binding", "grpc"]
    status, out = run(capsys, *argv, "--allow-origin", elsewhere, *oauth(issuer, secret))
    assert status == 1, out
    error = out["error"]
    assert error["code"] == "origin_refused", error
    assert f"gRPC interface at {elsewhere}, another host" in error["message"]
    assert f"--oauth-origin {elsewhere}" in error["message"]
    assert "nothing was sent" in error["message"]
    assert hostile.grpc_metadata == []  # no call at all reached the other host
    assert [what for what in hostile.gate.requests() if what.startswith("gRPC")] == []
    # Named by the caller for the token, the origin gets it (and is allowed for the call).
    status, out = run(capsys, *argv, "--oauth-origin", elsewhere, *oauth(issuer, secret))
    assert status == 0 and out == "echo: hi", out
    [sent] = hostile.grpc_metadata
    scheme, _, token = sent["authorization"].partition(" ")
    claims = jwt.decode(token, options={"verify_signature": False})
    assert scheme == "Bearer" and claims["azp"] == "caller"


def test_oauth_origin_goes_with_the_token_url(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main(
            ["call", "http://127.0.0.1:9", "s", "--args", "{}", "--oauth-origin", "http://x:1"]
        )
    assert exited.value.code == 2
    assert "--oauth-origin goes with --oauth-token-url" in capsys.readouterr().err


NAMED_TLS = Origin.of("https://agent.example.net")
NAMED_LOOPBACK = Origin.of("http://127.0.0.1:8000")


@pytest.mark.parametrize(
    ("named", "target", "explicit", "sent"),
    [
        (NAMED_TLS, "https://agent.example.net:50051", (), True),  # same host, TLS, any port
        (NAMED_TLS, "https://grpc.example.net:50051", (), False),  # another host
        (NAMED_TLS, "https://grpc.example.net:50051", ("https://grpc.example.net:50051",), True),
        (NAMED_LOOPBACK, "http://127.0.0.1:50051", (), True),  # loopback: no network crossed
        (NAMED_LOOPBACK, "http://localhost:50051", (), False),  # a name is not the address
        (Origin.of("http://agent.lan:8000"), "http://agent.lan:50051", (), False),  # no TLS
    ],
)
def test_where_a_token_may_go(
    named: Origin, target: str, explicit: tuple[str, ...], sent: bool
) -> None:
    allowed = {Origin.of(e) for e in explicit}
    why = token_refusal(Origin.of(target), named, allowed, str(named))
    assert (why is None) == sent, why
    if why is not None:
        assert f"--oauth-origin {Origin.of(target)}" in why


def test_peer_oauth_origins_in_the_configuration(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``origins`` in a peer's oauth table: parsed, checked, and given to its credentials."""
    from skillrack.serve.bindings.outbound import peer_credentials

    monkeypatch.setenv("CORE_SECRET", "s3cret")
    config = tmp_path / "skillrack.toml"
    table = (
        '[peers.core]\nurl = "https://core.example.net"\n\n[peers.core.oauth]\n'
        'token_url = "https://idp.example.net/token"\nclient_id = "me"\n'
        'client_secret_env = "CORE_SECRET"\n'
    )
    config.write_text(table + 'origins = ["https://grpc.example.net:50051"]\n')
    loaded = load_config(config)
    assert loaded.peer_oauth["core"].origins == ("https://grpc.example.net:50051",)
    [creds] = peer_credentials(loaded).values()
    assert creds.token_origins == {Origin.of("https://grpc.example.net:50051")}
    config.write_text(table + 'origins = ["https://grpc.example.net/a2a"]\n')
    with pytest.raises(ConfigError, match=r"peers\.core\.oauth\.origins must be a list of origins"):
        load_config(config)
