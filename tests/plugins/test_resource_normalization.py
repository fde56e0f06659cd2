"""Resource values are normalized before policy matching: no spelling slips past a deny rule.

``Core-Router-1``, a full-width letter, a leading space or a zero-width space
would reach the device a deny rule written for ``core-router-1`` protects if
compared as written.  They are compared in a normal form (NFKC, format
characters removed, whitespace stripped, case folded unless the rule says
``case_sensitive = true``), and a value matches when it matches as written
**or** normalized, so a rule only ever widens.  Tested on the policy file and
the approval rules, and against a real ``skillrack serve``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers.served_process import digests

from skillrack.host.config import ConfigError
from skillrack.serve.security.authz import AuthorizationRequest
from skillrack.serve.security.caller import ANONYMOUS
from skillrack.testing.serve import ServedAgent, error_of, invoke, skill_request, start_agent
from skillrack_plugins.approval_rules import ApprovalRules, parse_rule
from skillrack_plugins.policy_file import PolicyFile, normalize_resource, parse_policy

#: Spellings of ``core-router-1`` that reach the same device.
BYPASSES = [
    "Core-Router-1",
    "CORE-ROUTER-1",
    "\uff43ore-router-1",  # FULLWIDTH LATIN SMALL LETTER C
    "\uff23\uff4f\uff52\uff45-router-1",  # full-width "Core"
    " core-router-1",
    "core-router-1\t",
    "\u3000core-router-1",  # IDEOGRAPHIC SPACE
    "core\u200b-router-1",  # ZERO WIDTH SPACE
    "core\u00ad-router-1",  # SOFT HYPHEN
    "core-router-\uff11",  # FULLWIDTH DIGIT ONE
]

#: Start-up allowance: a loaded machine (CI, parallel sessions) can take longer than 30 s.
STARTUP_S = 120.0

POLICY = """
[[rule]]
effect = "allow"
authenticated = false
skills = ["inspect"]
description = "any device but the one below"

[[rule]]
effect = "deny"
authenticated = false
skills = ["inspect"]
resources = ["core-router-1"]
description = "the production core"
"""


def request(*values: Any) -> AuthorizationRequest:
    return AuthorizationRequest(
        caller=ANONYMOUS,
        skill_id="inspect",
        skill_version="1.0",
        plugin="example",
        authority={},
        resources={"/device": list(values)} if len(values) != 1 else {"/device": values[0]},
    )


@pytest.fixture
def policy(tmp_path: Path) -> PolicyFile:
    path = tmp_path / "policy.toml"
    path.write_text(POLICY, encoding="utf-8")
    return PolicyFile(path)


@pytest.mark.parametrize("value", BYPASSES)
def test_every_spelling_is_denied(policy: PolicyFile, value: str) -> None:
    decision = policy.authorize_invocation(request(value))
    assert decision is not None and not decision.allowed, value
    assert "the production core" in decision.reason


@pytest.mark.parametrize("value", BYPASSES)
def test_a_spelling_next_to_an_allowed_resource_is_denied(policy: PolicyFile, value: str) -> None:
    decision = policy.authorize_invocation(request("edge-7", value))
    assert decision is not None and not decision.allowed


def test_other_devices_are_still_allowed(policy: PolicyFile) -> None:
    for value in ("core-router-2", "Edge-7", "core-router-10"):
        decision = policy.authorize_invocation(request(value))
        assert decision is not None and decision.allowed, value


def test_allow_rules_compare_the_normal_form_unless_case_sensitive() -> None:
    text = '[[rule]]\neffect = "allow"\nauthenticated = false\nskills = ["*"]\n'
    [folding] = parse_policy(text + 'resources = ["edge-*"]\n', "test")
    assert folding.matches(request("EDGE-7")) and folding.matches(request("\uff45dge-7"))
    [exact] = parse_policy(text + 'resources = ["edge-*"]\ncase_sensitive = true\n', "test")
    assert not exact.matches(request("EDGE-7")) and exact.matches(request("edge-7"))


def test_normalized_patterns_match_too() -> None:
    [rule] = parse_policy(
        '[[rule]]\neffect = "deny"\nauthenticated = false\nskills = ["*"]\n'
        'resources = [" CORE-\uff32outer-*"]\n',
        "test",
    )
    assert rule.matches(request("core-router-1"))


def test_a_case_sensitive_rule_keeps_case_but_not_the_other_spellings() -> None:
    [rule] = parse_policy(
        '[[rule]]\neffect = "deny"\nauthenticated = false\ncase_sensitive = true\n'
        'skills = ["*"]\nresources = ["core-router-1"]\n',
        "test",
    )
    assert not rule.matches(request("Core-Router-1"))
    for value in (" core-router-1", "\uff43ore-router-1", "core\u200b-router-1"):
        assert rule.matches(request(value)), value


def test_normalization_only_widens_a_rule() -> None:
    # "[A-z]" matches "_" as written; the folded pattern "[a-z]" would not.
    [rule] = parse_policy(
        '[[rule]]\neffect = "deny"\nauthenticated = false\nskills = ["*"]\nresources = ["[A-z]"]\n',
        "test",
    )
    assert rule.matches(request("_"))


def test_the_normal_form() -> None:
    assert normalize_resource(" \uff23ore-Router\u200b-1 ") == "core-router-1"
    assert normalize_resource("Cafe\u0301") == normalize_resource("caf\u00e9") == "caf\u00e9"
    assert normalize_resource("Stra\u00dfe") == "strasse"
    assert normalize_resource(" Core ", case_sensitive=True) == "Core"


def test_case_sensitive_must_be_a_boolean() -> None:
    with pytest.raises(ConfigError, match="'case_sensitive' must be true or false"):
        parse_policy('[[rule]]\neffect = "deny"\nskills = ["*"]\ncase_sensitive = "no"\n', "t")
    with pytest.raises(ConfigError, match="'case_sensitive' must be true or false"):
        parse_rule(1, {"effect": "refuse", "skills": ["*"], "case_sensitive": 1})


@pytest.mark.parametrize("value", BYPASSES)
def test_approval_refusals_see_every_spelling(value: str) -> None:
    rules = ApprovalRules(
        [
            parse_rule(
                1,
                {
                    "effect": "refuse",
                    "authenticated": False,
                    "skills": ["inspect"],
                    "resources": ["core-router-1"],
                },
            )
        ]
    )
    decision = rules.approve_invocation(request(value))
    assert decision is not None and not decision.allowed


# Against a real server -------------------------------------------------------------------------

PLUGIN = """
from skillrack import DomainSchema, Skill, hookimpl


def _schema(name, schema):
    return DomainSchema.inline(schema, schema_uri=f"urn:test:normal:{name}", version="1.0")


async def inspect(arguments, context):
    return {"device": arguments["device"]}


@hookimpl
def register_skills(register):
    register(
        Skill(
            id="inspect",
            version="1.0",
            name="inspect",
            description="reads a device",
            input_schema=_schema(
                "in",
                {
                    "type": "object",
                    "properties": {"device": {"type": "string"}},
                    "required": ["device"],
                },
            ),
            output_schema=_schema("out", {"type": "object"}),
            handler=inspect,
            resources=["/device"],
        )
    )
"""


@pytest.fixture(scope="module")
def agent(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedAgent]:
    workdir = tmp_path_factory.mktemp("normalization")
    (workdir / "plugin").mkdir()
    (workdir / "plugin" / "normal_probe.py").write_text(PLUGIN, encoding="utf-8")
    (workdir / "policy.toml").write_text(POLICY, encoding="utf-8")
    config = workdir / "skillrack.toml"
    config.write_text(
        '[plugins]\nbuiltin = ["normal_probe"]\n\n[plugins.policy]\nfile = "policy.toml"\n'
    )
    python_path = os.pathsep.join(
        filter(None, [str(workdir / "plugin"), os.environ.get("PYTHONPATH")])
    )
    served = start_agent(
        workdir,
        plugins="",
        args=("--config", str(config), "--store", "memory"),
        env={"PYTHONPATH": python_path},
    ).wait_ready(STARTUP_S)
    try:
        yield served
    finally:
        served.stop()


def call(agent: ServedAgent, device: str) -> Any:
    data = skill_request("inspect", {"device": device}, "1.0", digests(agent.url)["inspect"])
    return invoke(agent.url, data)


def test_served_bypasses_are_rejected(agent: ServedAgent) -> None:
    for value in BYPASSES:
        task = call(agent, value)
        assert task["status"]["state"] == "TASK_STATE_REJECTED", value
        assert error_of(task)["code"] == "authorization_failed"
    assert call(agent, "core-router-2")["status"]["state"] == "TASK_STATE_COMPLETED"
