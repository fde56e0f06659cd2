"""An agent that takes OpenID Connect tokens, with a per-skill scope, served and called for real.

The issuer (tests/helpers/oidc_issuer.py) and the agent both run with uvicorn
on 127.0.0.1; tokens come from the issuer's token endpoint by the
client-credentials grant, as a service's would.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from helpers.agent_harness import running_agent
from helpers.agent_skills import TestSkills
from helpers.oidc_issuer import AUDIENCE, TOKEN, Issuer, running_issuer

from skillrack.host.compose import first_party_plugins
from skillrack.host.config import Config
from skillrack.host.plugins import load_plugins
from skillrack.host.registry import Registry, build_registry
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
    registry = build_registry(load_plugins(use_entry_points=False, extra=plugins))
    with running_agent(registry, config) as url:
        yield url, registry


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
