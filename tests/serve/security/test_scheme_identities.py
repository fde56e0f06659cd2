"""Without a tenant, one identity string from two authentication schemes is two callers (issue 28).

A real ``skillrack serve`` takes API keys and JWTs, neither naming a tenant,
and both name their caller ``alice``.  Tasks, follow-ups and approvals keep
them apart: the JWT's ``alice`` neither sees nor continues the API key's
``alice``'s task, and the approval record names the scheme, so separation of
duties compares identities per scheme.  A decider whose scheme is unknown
(``skillrack approvals --by``) still counts as every ``alice``: a gap in what
is known never lets anyone decide their own request.
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Iterator
from pathlib import Path

import jwt
import pytest
from helpers.served_process import probe_request, send, serving, write_config

from skillrack.serve.security.approvals import (
    GRANTED,
    ApprovalStore,
    Decider,
    DecisionRefused,
)
from skillrack.testing.serve import rpc
from skillrack_plugins.api_keys import hash_key

KEY = "sk-alice-by-key-0123456789"
HMAC = b"hmac-secret-of-the-test-issuer-0123456789"
AUDIENCE = "skillrack-test"
ISSUER = "https://issuer.test"


def token(subject: str = "alice") -> str:
    claims = {
        "sub": subject,
        "roles": ["operator"],
        "iss": ISSUER,
        "aud": AUDIENCE,
        "exp": int(time.time()) + 300,
    }
    return jwt.encode(claims, HMAC, algorithm="HS256", headers={"kid": "k1"})


BY_KEY = {"X-API-Key": KEY}


def by_jwt() -> dict[str, str]:
    return {"Authorization": f"Bearer {token()}"}


@pytest.fixture(scope="module")
def agent(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    workdir = tmp_path_factory.mktemp("schemes")
    (workdir / "keys.toml").write_text(
        f'[[key]]\nsha256 = "{hash_key(KEY)}"\nidentity = "alice"\nroles = ["operator"]\n'
    )
    k = base64.urlsafe_b64encode(HMAC).rstrip(b"=").decode()
    (workdir / "jwks.json").write_text(
        json.dumps({"keys": [{"kty": "oct", "kid": "k1", "alg": "HS256", "k": k}]})
    )
    (workdir / "policy.toml").write_text(
        '[[rule]]\neffect = "allow"\nroles = ["operator"]\nskills = ["*"]\n'
    )
    server = f"""
[plugins.api_keys]
file = "keys.toml"

[plugins.jwt]
jwks = "jwks.json"
issuer = "{ISSUER}"
audience = "{AUDIENCE}"
algorithms = ["HS256"]

[plugins.policy]
file = "policy.toml"

[[plugins.approval_rules.rule]]
effect = "require"
skills = ["echo"]
"""
    config = write_config(workdir, server)
    with serving(workdir, config=config) as served:
        yield served.url, workdir


def test_tasks_and_follow_ups_are_kept_apart_by_scheme(agent: tuple[str, Path]) -> None:
    url, _ = agent
    asked = send(url, probe_request(url, "ask", {}), headers=BY_KEY)
    assert asked["status"]["state"] == "TASK_STATE_INPUT_REQUIRED", asked
    # The JWT's alice is another caller: the task is not hers to see or continue.
    seen = rpc(url, "GetTask", {"id": asked["id"]}, headers=by_jwt())
    assert seen.get("error", {}).get("code") == -32001, seen  # TaskNotFoundError
    follow = rpc(
        url,
        "SendMessage",
        {
            "message": {
                "messageId": "m-jwt",
                "role": "ROLE_USER",
                "taskId": asked["id"],
                "parts": [{"data": {"answer": "from the other alice"}}],
            }
        },
        headers=by_jwt(),
    )
    assert "error" in follow, follow
    # The API key's alice still sees it as it was, and may answer it.
    mine = rpc(url, "GetTask", {"id": asked["id"]}, headers=BY_KEY)
    assert mine["result"]["status"]["state"] == "TASK_STATE_INPUT_REQUIRED", mine


def test_approvals_record_the_scheme_and_separation_of_duties_uses_it(
    agent: tuple[str, Path],
) -> None:
    url, workdir = agent
    waiting = send(url, probe_request(url, "echo", {"text": "x"}), headers=BY_KEY)
    assert waiting["status"]["state"] == "TASK_STATE_INPUT_REQUIRED", waiting
    approval_id = waiting["status"]["message"]["parts"][0]["data"]["skillrack_approval"][
        "approval_id"
    ]
    # An independent read of the approvals file the agent wrote.
    store = ApprovalStore(workdir / "skillrack-approvals.db")
    approval = store.get(approval_id)
    assert (approval.caller, approval.tenant, approval.caller_scheme) == ("alice", "", "api_key")
    with pytest.raises(DecisionRefused, match="separation of duties"):
        store.decide(
            approval_id,
            granted=True,
            by=Decider("alice", scheme="api_key", via="console"),
            reason="mine",
        )
    with pytest.raises(DecisionRefused, match="separation of duties"):  # scheme unknown: CLI
        store.decide(approval_id, granted=True, by=Decider("alice", via="cli"), reason="x")
    granted = store.decide(
        approval_id, granted=True, by=Decider("alice", scheme="jwt", via="console"), reason="ok"
    )
    assert granted.state == GRANTED
    assert granted.decisions[0]["scheme"] == "jwt"
    # The task the API key's alice started goes on once approved.
    done = send(url, None, task_id=waiting["id"], headers=BY_KEY, parts=[{"text": "go"}])
    assert done["status"]["state"] == "TASK_STATE_COMPLETED", done


def test_a_row_without_a_scheme_compares_the_name_alone(tmp_path: Path) -> None:
    """Approvals written before schemes were recorded: every alice is that alice."""
    store = ApprovalStore(tmp_path / "old.db")
    old = store.request(
        task_id="t-old",
        skill_id="echo",
        skill_version="1.0",
        operation=None,
        caller="alice",
        tenant="",
        resources={},
    )
    with pytest.raises(DecisionRefused, match="separation of duties"):
        store.decide(old.id, granted=True, by=Decider("alice", scheme="jwt"), reason="x")
