"""An agent that takes OpenID Connect tokens, with a per-skill scope, served and called for real.

The issuer (tests/helpers/oidc_issuer.py) and the agent both run with uvicorn
on 127.0.0.1; tokens come from the issuer's token endpoint by the
client-credentials grant, as a service's would.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from helpers.agent_harness import running_agent
from helpers.agent_skills import AllowAll, TestSkills
from helpers.builders import SkillsPlugin, registry_of, simple_skill
from helpers.hostile_agents import steering_decoy
from helpers.oidc_issuer import AUDIENCE, TOKEN, Issuer, running_issuer

from skillrack.cli import main as cli
from skillrack.client.oauth import ClientCredentials
from skillrack.client.skill_client import SkillClient
from skillrack.errors import SkillCallError
from skillrack.host.config import Config, ConfigError, PeerOAuth, load_config
from skillrack.host.plugins import load_plugins
from skillrack.host.registry import Registry, build_registry
from skillrack.host.startup import first_party_plugins
from skillrack.serve.bindings.outbound import peer_credentials
from skillrack.testing.serve import CARD_PATH, error_of, invoke, send, skill_request

SKILL = "evaluate_resource_condition"
ARGS = {
    "resource_id": "network-resource-123",
    "condition": {"metric": "utilization", "operator": "gte", "threshold": 80, "unit": "percent"},
}
POLICY = """
[[rule]]
effect = "allow"
roles = ["operator"]
skills = ["evaluate_resource_condition"]
"""


@pytest.fixture(scope="module")
def issuer() -> Iterator[Issuer]:
    with running_issuer() as running:
        running.client("reader", "reader-secret", ("network:read",))
        running.client("writer", "writer-secret", ("network:read", "network:write"))
        yield running


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("oidc-agent")
    (root / "policy.toml").write_text(POLICY, encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def agent(issuer: Issuer, workdir: Path) -> Iterator[tuple[str, Registry]]:
    registry, config = oidc_agent(issuer, workdir)
    with running_agent(registry, config) as url:
        yield url, registry


def oidc_agent(issuer: Issuer, workdir: Path) -> tuple[Registry, Config]:
    """The agent under test: OIDC tokens, the policy file, a scope for SKILL."""
    (workdir / "policy.toml").write_text(POLICY, encoding="utf-8")
    config = Config(
        base_dir=workdir,
        first_party={
            "oidc": {
                "issuer": issuer.issuer,
                "audience": AUDIENCE,
                "allow_loopback": True,
                "roles_claims": ["realm_access.roles"],
                "roles": {"network-operator": ["operator"]},
            },
            "policy": {"file": "policy.toml"},
        },
        skill_security={SKILL: ({"oidc": ("network:write",)},)},
    )
    plugins = [*first_party_plugins(config), ("tests", TestSkills())]
    return build_registry(load_plugins(use_entry_points=False, extra=plugins)), config


def client_token(issuer: Issuer, client: str, secret: str) -> str:
    answer = httpx.post(
        issuer.base + TOKEN, data={"grant_type": "client_credentials"}, auth=(client, secret)
    )
    assert answer.status_code == 200, answer.text
    token: str = answer.json()["access_token"]
    return token


def call(agent: tuple[str, Registry], binding: str, headers: dict[str, str]) -> Any:
    url, registry = agent
    skill = registry.skills[SKILL]
    data = skill_request(SKILL, ARGS, skill.skill.version, skill.interface_digest)
    return invoke(url, data, binding=binding, headers=headers)


def test_the_card_advertises_openid_connect_and_the_skills_scope(
    agent: tuple[str, Registry], issuer: Issuer
) -> None:
    card = httpx.get(agent[0] + CARD_PATH).json()
    assert card["securitySchemes"] == {
        "oidc": {
            "openIdConnectSecurityScheme": {
                "openIdConnectUrl": issuer.issuer + "/.well-known/openid-configuration",
                "description": f"Bearer tokens issued by {issuer.issuer}",
            }
        }
    }
    entry = next(s for s in card["skills"] if s["id"] == SKILL)
    assert entry["securityRequirements"] == [{"schemes": {"oidc": {"list": ["network:write"]}}}]


@pytest.mark.parametrize("binding", ["JSONRPC", "HTTP+JSON"])
def test_the_skills_scope_is_enforced_on_both_bindings(
    agent: tuple[str, Registry], issuer: Issuer, binding: str
) -> None:
    reader = {"Authorization": "Bearer " + client_token(issuer, "reader", "reader-secret")}
    task = call(agent, binding, reader)
    assert task["status"]["state"] == "TASK_STATE_REJECTED"
    assert error_of(task)["code"] == "authorization_failed"
    assert "oidc (scopes network:write)" in error_of(task)["message"]
    writer = {"Authorization": "Bearer " + client_token(issuer, "writer", "writer-secret")}
    task = call(agent, binding, writer)
    assert task["status"]["state"] == "TASK_STATE_COMPLETED", task


@pytest.mark.parametrize("binding", ["JSONRPC", "HTTP+JSON"])
def test_a_token_of_another_issuer_gets_401(
    agent: tuple[str, Registry], issuer: Issuer, binding: str
) -> None:
    stranger = Issuer()  # same claims, keys the agent's issuer never published
    headers = {"Authorization": "Bearer " + stranger.token(kid=stranger.current)}
    answer = send(agent[0], {"skill": SKILL}, binding=binding, headers=headers)
    assert answer.status_code == 401
    assert answer.headers["www-authenticate"].startswith("Bearer")


@pytest.mark.parametrize(
    ("typ", "claims"),
    [
        ("JWT", {}),  # an ID token of the same issuer and audience
        ("logout+jwt", {}),  # a back-channel logout token
        (None, {}),  # no typ at all
        ("at+jwt", {"exp": "9999999999"}),  # exp as a string (a library would convert it)
        ("at+jwt", {"iat": True}),
        ("at+jwt", {"aud": [AUDIENCE, 7]}),
    ],
    ids=["id-token", "logout-token", "no-typ", "exp-string", "iat-bool", "aud-number"],
)
def test_only_access_tokens_with_well_typed_claims(
    agent: tuple[str, Registry], issuer: Issuer, typ: str | None, claims: dict[str, Any]
) -> None:
    """Issue 28: the JWT ``typ`` must be ``at+jwt`` and registered claims have their JSON types;
    the same token with ``typ = at+jwt`` and well-typed claims is taken (checked first)."""
    good = issuer.token(scope="network:write")
    assert call(agent, "JSONRPC", {"Authorization": "Bearer " + good})["status"]["state"] == (
        "TASK_STATE_COMPLETED"
    )
    bad = issuer.token(headers={"typ": typ}, scope="network:write", **claims)
    answer = send(agent[0], {"skill": SKILL}, headers={"Authorization": "Bearer " + bad})
    assert answer.status_code == 401
    assert "invalid bearer token" in answer.text


def test_token_types_are_configurable(issuer: Issuer, tmp_path: Path) -> None:
    """An issuer marking access tokens ``JWT`` (Keycloak) is listed knowingly in token_types."""
    registry, config = oidc_agent(issuer, tmp_path)
    settings = {**config.first_party["oidc"], "token_types": ["JWT", "application/at+jwt"]}
    config = dataclasses.replace(config, first_party={**config.first_party, "oidc": settings})
    plugins = [*first_party_plugins(config), ("tests", TestSkills())]
    registry = build_registry(load_plugins(use_entry_points=False, extra=plugins))
    with running_agent(registry, config) as url:
        keycloak_like = issuer.token(headers={"typ": "JWT"}, scope="network:write")
        task = call((url, registry), "JSONRPC", {"Authorization": "Bearer " + keycloak_like})
        assert task["status"]["state"] == "TASK_STATE_COMPLETED"
        logout = issuer.token(headers={"typ": "logout+jwt"}, scope="network:write")
        answer = send(url, {"skill": SKILL}, headers={"Authorization": "Bearer " + logout})
        assert answer.status_code == 401


# The client: OAuth 2.0 client credentials ------------------------------------------------------


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, Any]:
    status = cli.main(list(argv))
    captured = capsys.readouterr()
    try:
        return status, json.loads(captured.out)
    except ValueError:
        return status, captured.out + captured.err


def oauth_options(issuer: Issuer, client: str, secret_file: Path, *scopes: str) -> list[str]:
    options = ["--oauth-token-url", issuer.base + TOKEN, "--oauth-client-id", client]
    options += ["--oauth-client-secret-file", str(secret_file)]
    for scope in scopes:
        options += ["--oauth-scope", scope]
    return options


@pytest.fixture
def secrets_dir(tmp_path: Path) -> Path:
    (tmp_path / "writer").write_text("writer-secret\n")
    (tmp_path / "reader").write_text("reader-secret\n")
    (tmp_path / "wrong").write_text("not-the-secret\n")
    return tmp_path


def test_skillrack_call_obtains_a_token_by_client_credentials(
    agent: tuple[str, Registry],
    issuer: Issuer,
    secrets_dir: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    asked = issuer.hits[TOKEN]
    options = oauth_options(issuer, "writer", secrets_dir / "writer", "network:write")
    status, out = run(capsys, "call", agent[0], SKILL, "--args", json.dumps(ARGS), *options)
    assert status == 0, out
    assert out["state"] == "TASK_STATE_COMPLETED"
    assert issuer.hits[TOKEN] == asked + 1  # one token for the card, describe and call
    status, out = run(capsys, "describe", agent[0], SKILL, "--json", *options)
    assert status == 0 and out["interface"]["skill_id"] == SKILL, out
    status, out = run(capsys, "check", agent[0], *options)  # the policy refuses other skills
    assert "PASS [evaluate_resource_condition] an invalid input is rejected" in out, out


def test_a_card_requirement_the_client_cannot_meet_is_one_local_error(
    agent: tuple[str, Registry],
    issuer: Issuer,
    secrets_dir: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    options = oauth_options(issuer, "reader", secrets_dir / "reader", "network:read")
    status, out = run(capsys, "call", agent[0], SKILL, "--args", json.dumps(ARGS), *options)
    assert status == 1
    error = out["error"]
    assert error["code"] == "authorization_failed" and "task_id" not in out
    assert f"skill {SKILL!r} requires oidc (scopes network:write)" in error["message"]
    assert "--oauth-scope" in error["message"]
    status, out = run(capsys, "call", agent[0], SKILL, "--args", json.dumps(ARGS))
    assert status == 1 and "--oauth-token-url" in out["error"]["message"]
    assert "the agent requires oidc" in out["error"]["message"]


def test_a_refused_client_and_bad_options_are_one_line(
    agent: tuple[str, Registry],
    issuer: Issuer,
    secrets_dir: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    options = oauth_options(issuer, "writer", secrets_dir / "wrong")
    status, out = run(capsys, "describe", agent[0], SKILL, *options)
    assert status == 1 and out["error"]["code"] == "authorization_failed"
    assert "refused client 'writer' with HTTP 401 (invalid_client)" in out["error"]["message"]
    assert "not-the-secret" not in json.dumps(out)
    with pytest.raises(SystemExit) as info:
        cli.main(["describe", agent[0], SKILL, "--oauth-client-id", "writer"])
    assert info.value.code == 2
    assert "--oauth-token-url and --oauth-client-id go together" in capsys.readouterr().err
    insecure = ["--oauth-token-url", "http://idp.example.net/token", "--oauth-client-id", "x"]
    with pytest.raises(SystemExit):
        cli.main(
            [
                "describe",
                agent[0],
                SKILL,
                *insecure,
                "--oauth-client-secret-file",
                str(secrets_dir / "writer"),
            ]
        )
    assert "must be https" in capsys.readouterr().err


async def test_the_token_is_cached_and_sent_to_the_named_origin_only(
    agent: tuple[str, Registry], issuer: Issuer
) -> None:
    creds = ClientCredentials(issuer.base + TOKEN, "writer", "writer-secret", ("network:write",))
    async with SkillClient(oauth=creds) as client:
        asked = issuer.hits[TOKEN]
        for _ in range(2):
            result = await client.call(agent[0], SKILL, ARGS)
            assert result.state == "TASK_STATE_COMPLETED"
        assert issuer.hits[TOKEN] == asked + 1
        source = client.tokens[None]
        token = await source.token()
        source._clock = lambda: token.use_until + 1  # shortly before expiry: a new one
        await client.call(agent[0], SKILL, ARGS)
        assert issuer.hits[TOKEN] == asked + 2
    # A decoy whose card is the agent's: the calls go to the agent (allowed), the token
    # only to the decoy the call named, so the agent refuses them.
    with steering_decoy(agent[0]) as decoy:
        async with SkillClient(oauth=creds, allow_origins=[agent[0]]) as client:
            with pytest.raises(SkillCallError) as info:
                await client.call(decoy, SKILL, ARGS)
    assert info.value.code == "authorization_failed" and "HTTP 401" in info.value.message


def test_peers_take_an_oauth_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "skillrack.toml"
    path.write_text(
        '[peers.core]\nurl = "https://core.example.net"\n\n[peers.core.oauth]\n'
        'token_url = "https://idp.example.net/token"\nclient_id = "assurance"\n'
        'client_secret_env = "CORE_SECRET_FOR_TEST"\nscopes = ["network:read"]\n',
        encoding="utf-8",
    )
    config = load_config(path)
    assert config.peer_oauth["core"].scopes == ("network:read",)
    monkeypatch.setenv("CORE_SECRET_FOR_TEST", "s3cret")
    creds = peer_credentials(config)["https://core.example.net"]
    assert (creds.client_id, creds.client_secret) == ("assurance", "s3cret")
    assert "s3cret" not in repr(creds)
    monkeypatch.delenv("CORE_SECRET_FOR_TEST")
    with pytest.raises(ConfigError, match=r"peers\.core\.oauth: the client secret is empty"):
        peer_credentials(config)
    path.write_text(
        '[peers.core]\nurl = "https://core.example.net"\n\n[peers.core.oauth]\n'
        'token_url = "https://idp.example.net/token"\nclient_id = "a"\nclient_secret = "x"\n',
        encoding="utf-8",
    )
    with pytest.raises(
        ConfigError, match=r'\[peers\.core\.oauth\]: unknown key "client_secret" \(did you mean'
    ):
        load_config(path)
    twice = Config(
        base_dir=tmp_path,
        peers={"a": "https://core.example.net", "b": "https://core.example.net/x"},
        peer_oauth={
            "a": PeerOAuth("https://idp.example.net/t", "a", client_secret_env="HOME"),
            "b": PeerOAuth("https://idp.example.net/t", "b", client_secret_env="HOME"),
        },
    )
    with pytest.raises(ConfigError, match=r"share the origin https://core\.example\.net"):
        peer_credentials(twice)


async def relay(arguments: Any, context: Any) -> Any:
    """Delegate to the named peer; the outcome's state, or the local error's code."""
    try:
        outcome = await context.delegate(arguments["peer"], SKILL, ARGS)
    except SkillCallError as exc:
        return {"code": exc.code, "message": exc.message, "remote": exc.remote}
    return {"state": outcome.state}


async def test_peers_obtain_tokens_by_client_credentials(
    agent: tuple[str, Registry], issuer: Issuer, tmp_path: Path
) -> None:
    """A host delegating to the OIDC agent: its [peers] oauth table gets the tokens."""
    (tmp_path / "writer.secret").write_text("writer-secret\n")
    (tmp_path / "reader.secret").write_text("reader-secret\n")
    token_url = issuer.base + TOKEN
    config = Config(
        base_dir=tmp_path,
        peers={"secured": agent[0], "unscoped": "http://127.0.0.1:1"},  # set below
        peer_oauth={
            "secured": PeerOAuth(token_url, "writer", "writer.secret", scopes=("network:write",)),
            "unscoped": PeerOAuth(token_url, "reader", "reader.secret"),
        },
    )
    relay_skill = simple_skill(
        "relay",
        input_schema={"type": "object", "required": ["peer"], "properties": {"peer": {}}},
        handler=relay,
    )
    registry = registry_of([("relay", SkillsPlugin(relay_skill)), ("allow", AllowAll())])
    # Credentials are per origin: the second peer is a second copy of the agent.
    (tmp_path / "copy").mkdir()
    with running_agent(*oidc_agent(issuer, tmp_path / "copy")) as copy:
        config = dataclasses.replace(config, peers={"secured": agent[0], "unscoped": copy})
        with running_agent(registry, config) as delegator:
            async with SkillClient() as client:
                served = await client.call(delegator, "relay", {"peer": "secured"})
                refused = await client.call(delegator, "relay", {"peer": "unscoped"})
    assert served.result == {"state": "TASK_STATE_COMPLETED"}
    assert refused.result["code"] == "authorization_failed" and not refused.result["remote"]
    assert "oidc (scopes network:write)" in refused.result["message"]
