"""A secured agent over real HTTP: API keys, bearer JWT, a policy file, approvals, tenants."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import ec
from helpers.agent_harness import running_agent
from helpers.agent_skills import TestSkills
from helpers.builders import VECTOR_DIGEST

from skillrack.cli import main as cli
from skillrack.host.config import Config
from skillrack.host.plugins import load_plugins
from skillrack.host.registry import Registry, build_registry
from skillrack.host.startup import first_party_plugins
from skillrack.serve.security.approvals import ApprovalStore
from skillrack.testing.serve import HEADERS, error_of, rpc, skill_request
from skillrack_plugins.api_keys import hash_key

ALICE_KEY, CAROL_KEY = "alice-secret-key-1", "carol-secret-key-2"
ISSUER, AUDIENCE = "https://idp.example.net", "skillrack-tests"
ARGS = {
    "resource_id": "network-resource-123",
    "condition": {"metric": "utilization", "operator": "gte", "threshold": 80, "unit": "percent"},
}
POLICY = """
[[rule]]
effect = "allow"
roles = ["operator"]
skills = ["evaluate_resource_condition", "manage", "slow_cancellable"]

[[rule]]
effect = "deny"
identities = ["bob"]
skills = ["manage"]
operations = ["delete"]
"""


@pytest.fixture(scope="module")
def signing_key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory, signing_key: Any) -> Path:
    root = tmp_path_factory.mktemp("secured")
    keys = [
        {
            "sha256": hash_key(ALICE_KEY),
            "identity": "alice",
            "tenant": "acme",
            "roles": ["operator"],
        },
        {"sha256": hash_key(CAROL_KEY), "identity": "carol", "tenant": "acme"},
    ]
    (root / "keys.toml").write_text(
        "".join(
            f'[[key]]\nsha256 = "{k["sha256"]}"\nidentity = "{k["identity"]}"\n'
            f'tenant = "{k["tenant"]}"\nroles = {json.dumps(k.get("roles", []))}\n\n'
            for k in keys
        )
    )
    jwk = json.loads(jwt.algorithms.ECAlgorithm.to_jwk(signing_key.public_key()))
    (root / "jwks.json").write_text(json.dumps({"keys": [{**jwk, "kid": "k1", "alg": "ES256"}]}))
    (root / "policy.toml").write_text(POLICY)
    return root


@pytest.fixture(scope="module")
def config(workdir: Path) -> Config:
    return Config(
        base_dir=workdir,
        first_party={
            "api_keys": {"file": "keys.toml"},
            "jwt": {"jwks": "jwks.json", "issuer": ISSUER, "audience": AUDIENCE},
            "policy": {"file": "policy.toml"},
        },
    )


@pytest.fixture(scope="module")
def registry(config: Config) -> Registry:
    plugins = [*first_party_plugins(config), ("tests", TestSkills())]
    return build_registry(load_plugins(use_entry_points=False, extra=plugins))


@pytest.fixture(scope="module")
def base(registry: Registry, config: Config) -> Iterator[str]:
    with running_agent(registry, config) as url:
        yield url


def token(key: Any, *, sub: str = "bob", tenant: str = "globex", expires_in: int = 300) -> str:
    claims = {
        "sub": sub,
        "tenant": tenant,
        "roles": ["operator"],
        "iss": ISSUER,
        "aud": AUDIENCE,
        "exp": int(time.time()) + expires_in,
    }
    return jwt.encode(claims, key, algorithm="ES256", headers={"kid": "k1"})


def alice() -> dict[str, str]:
    return {"X-API-Key": ALICE_KEY}


def carol() -> dict[str, str]:
    return {"X-API-Key": CAROL_KEY}


def bob(key: Any) -> dict[str, str]:
    return {"Authorization": f"Bearer {token(key)}"}


def send(
    base: str,
    registry: Registry,
    skill: str,
    args: Any,
    auth: dict[str, str],
    task_id: str | None = None,
    **params: Any,
) -> Any:
    registered = registry.skills[skill]
    data = skill_request(skill, args, registered.skill.version, registered.interface_digest)
    message: dict[str, Any] = {
        "messageId": str(time.time_ns()),
        "role": "ROLE_USER",
        "parts": [{"data": data}],
    }
    if task_id:
        message = {**message, "taskId": task_id, "parts": [{"text": "decided?"}]}
    body = {
        "jsonrpc": "2.0",
        "id": "1",
        "method": "SendMessage",
        "params": {"message": message, **params},
    }
    answer = httpx.post(base + "/", json=body, headers={**HEADERS, **auth}, timeout=30).json()
    assert "result" in answer, answer
    return answer["result"]["task"]


# Authentication --------------------------------------------------------------------------------


def test_card_is_public_and_lists_the_schemes(base: str) -> None:
    card = httpx.get(base + "/.well-known/agent-card.json").json()
    assert set(card["securitySchemes"]) == {"apiKey", "bearer"}
    assert card["securitySchemes"]["apiKey"]["apiKeySecurityScheme"]["name"] == "X-API-Key"
    assert {tuple(r["schemes"]) for r in card["securityRequirements"]} == {("apiKey",), ("bearer",)}


@pytest.mark.parametrize("path", ["/", "/message:send", "/tasks/x"])
@pytest.mark.parametrize("auth", ["none", "wrong-key", "expired", "garbage-token"])
def test_unauthenticated_requests_get_401(
    base: str, signing_key: Any, path: str, auth: str
) -> None:
    headers = dict(HEADERS)
    if auth == "wrong-key":
        headers["X-API-Key"] = "not-a-key"
    elif auth == "expired":
        headers["Authorization"] = f"Bearer {token(signing_key, expires_in=-3600)}"
    elif auth == "garbage-token":
        headers["Authorization"] = "Bearer abc.def.ghi"
    body = {"jsonrpc": "2.0", "id": "1", "method": "GetTask", "params": {"id": "x"}}
    if path == "/tasks/x":
        response = httpx.get(base + path, headers=headers)
    else:
        response = httpx.post(base + path, json=body if path == "/" else {}, headers=headers)
    assert response.status_code == 401
    assert response.headers["www-authenticate"]
    payload = response.json()
    if path == "/":
        assert payload["error"]["data"][0]["metadata"]["code"] == "authorization_failed"
    else:
        assert payload["error"]["details"][0]["reason"] == "AUTHORIZATION_FAILED"
    assert "audience" not in response.text and "signature" not in response.text


def test_valid_key_and_token_are_accepted(base: str, registry: Registry, signing_key: Any) -> None:
    assert (
        send(base, registry, "evaluate_resource_condition", ARGS, alice())["status"]["state"]
        == "TASK_STATE_COMPLETED"
    )
    assert (
        send(base, registry, "evaluate_resource_condition", ARGS, bob(signing_key))["status"][
            "state"
        ]
        == "TASK_STATE_COMPLETED"
    )


# Authorization, call by call -------------------------------------------------------------------


def test_policy_is_enforced_per_skill_and_operation(
    base: str, registry: Registry, signing_key: Any
) -> None:
    denied = send(base, registry, "evaluate_resource_condition", ARGS, carol())
    assert denied["status"]["state"] == "TASK_STATE_REJECTED"
    assert error_of(denied)["code"] == "authorization_failed"
    assert "rule" not in json.dumps(denied["status"])  # no policy internals
    read = send(base, registry, "manage", {"operation": "read"}, bob(signing_key))
    assert read["status"]["state"] == "TASK_STATE_COMPLETED"
    delete = send(base, registry, "manage", {"operation": "delete"}, bob(signing_key))
    assert delete["status"]["state"] == "TASK_STATE_REJECTED"
    assert error_of(delete)["code"] == "authorization_failed"


def test_changed_policy_file_takes_effect_on_the_next_call(
    base: str, registry: Registry, workdir: Path
) -> None:
    policy = workdir / "policy.toml"
    assert (
        send(base, registry, "evaluate_resource_condition", ARGS, alice())["status"]["state"]
        == "TASK_STATE_COMPLETED"
    )
    policy.write_text(POLICY.replace('"evaluate_resource_condition", ', ""))
    try:
        task = send(base, registry, "evaluate_resource_condition", ARGS, alice())
        assert error_of(task)["code"] == "authorization_failed"
    finally:
        policy.write_text(POLICY)
    assert (
        send(base, registry, "evaluate_resource_condition", ARGS, alice())["status"]["state"]
        == "TASK_STATE_COMPLETED"
    )


# Approvals -------------------------------------------------------------------------------------


@pytest.mark.parametrize("decision", ["grant", "deny"])
def test_approval_granted_or_refused(
    base: str,
    registry: Registry,
    workdir: Path,
    decision: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    parked = send(base, registry, "manage", {"operation": "delete"}, alice())
    assert parked["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    [part] = parked["status"]["message"]["parts"]
    waiting = part["data"]["skillrack_approval"]
    assert waiting["state"] == "pending" and waiting["operation"] == "delete"
    store = str(workdir / "skillrack-approvals.db")
    assert cli.main(["approvals", "list", "--store", store, "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert waiting["approval_id"] in [a["id"] for a in listed]
    still = send(base, registry, "manage", {}, alice(), task_id=parked["id"])
    assert still["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"  # nothing decided yet
    assert (
        cli.main(
            ["approvals", decision, waiting["approval_id"], "--store", store, "--reason", "ok"]
        )
        == 0
    )
    final = send(base, registry, "manage", {}, alice(), task_id=parked["id"])
    if decision == "grant":
        assert final["status"]["state"] == "TASK_STATE_COMPLETED"
        [primary] = [a for a in final["artifacts"] if a["name"] == "manage"]
        assert primary["parts"][0]["data"]["result"] == {"operation": "delete"}
    else:
        assert final["status"]["state"] == "TASK_STATE_REJECTED"
        assert error_of(final)["code"] == "authorization_failed"
    assert (
        cli.main(["approvals", "grant", waiting["approval_id"], "--store", store, "--reason", "ok"])
        == 1
    )  # a decision is final: granting it again changes nothing, exit 1


def test_approval_store_cli_usage(workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = workdir / "other.db"
    ApprovalStore(store)
    assert cli.main(["approvals", "grant", "nope", "--store", str(store), "--reason", "ok"]) == 1
    with pytest.raises(SystemExit) as info:
        cli.main(["approvals", "grant", "--store", str(store)])
    assert info.value.code == 2


# Tenant isolation ------------------------------------------------------------------------------


def test_tasks_of_another_tenant_do_not_exist(
    base: str, registry: Registry, signing_key: Any
) -> None:
    task = send(
        base,
        registry,
        "slow_cancellable",
        {"seconds": 5},
        alice(),
        configuration={"returnImmediately": True},
    )
    other = bob(signing_key)
    assert rpc(base, "GetTask", {"id": task["id"]}, other)["error"]["code"] == -32001
    assert rpc(base, "CancelTask", {"id": task["id"]}, other)["error"]["code"] == -32001
    assert (
        rpc(base, "SubscribeToTask", {"id": task["id"]}, other).get("error", {}).get("code")
        == -32001
    )
    listed = rpc(base, "ListTasks", {"pageSize": 100}, other)["result"].get("tasks", [])
    assert task["id"] not in [t["id"] for t in listed]
    rest = httpx.get(f"{base}/tasks/{task['id']}", headers={**HEADERS, **other})
    assert rest.status_code == 404
    # the same tenant (acme) sees it; the owner can cancel it
    assert rpc(base, "GetTask", {"id": task["id"]}, carol())["result"]["id"] == task["id"]
    assert (
        rpc(base, "CancelTask", {"id": task["id"]}, alice())["result"]["status"]["state"]
        == "TASK_STATE_CANCELED"
    )


def test_push_notifications_are_not_offered(base: str) -> None:
    config = {"taskId": "x", "url": "http://169.254.169.254/latest/meta-data"}
    answer = rpc(base, "CreateTaskPushNotificationConfig", config, alice())
    assert answer["error"]["code"] == -32003  # PushNotificationNotSupportedError


def test_the_draft_digest_is_unchanged_by_security(base: str) -> None:
    card = httpx.get(base + "/.well-known/agent-card.json").json()
    bindings = card["capabilities"]["extensions"][0]["params"]["skills"]
    assert {
        "skill_id": "evaluate_resource_condition",
        "skill_version": "1.0",
        "interface_digest": VECTOR_DIGEST,
    } in bindings
