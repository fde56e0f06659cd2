"""Authorization before details (issue 14, item 4), over HTTP against a real agent.

The draft's diagnostic details "MUST NOT disclose ... other information that
the caller is not authorized to receive".  The agent therefore decides
whether the caller may invoke the skill at all *before* validating its
arguments, and on the operation, resources and constraints *after* (as the
draft requires: "a current authorization decision covering the requested
skill, resources, operation, and applicable constraints").  The first-party
policy file is used unchanged: a policy that needs resources to decide is
never forced to deny at the skill level, and a caller whom no rule could
ever allow a skill (whatever the resources) is refused before validation.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers.agent_harness import running_agent
from helpers.builders import SkillsPlugin, registry_of, simple_skill

from skillrack import hookimpl
from skillrack.host.config import Config
from skillrack.host.registry import Registry
from skillrack.host.startup import first_party_plugins
from skillrack.serve.security.authz import (
    SKILL_SCOPE,
    AuthorizationRequest,
    Decision,
    authorize_skill,
)
from skillrack.serve.security.caller import ANONYMOUS
from skillrack.testing.serve import error_of, invoke, skill_request

COUNTED = {
    "type": "object",
    "required": ["count"],
    "properties": {"count": {"type": "integer", "minimum": 1}},
    "additionalProperties": False,
}
ON_DEVICE = {
    "type": "object",
    "required": ["device", "count"],
    "properties": {"device": {"type": "string"}, "count": {"type": "integer"}},
    "additionalProperties": False,
}
POLICY = """
[[rule]]
effect = "allow"
skills = ["open", "guarded"]
authenticated = false

[[rule]]
effect = "deny"
skills = ["guarded"]
authenticated = false
description = "nobody may use guarded"

[[rule]]
effect = "allow"
skills = ["by_resource"]
resources = ["lab-*"]
authenticated = false

[[rule]]
effect = "allow"
skills = ["team_device"]
identities = ["lab-team"]
resources = ["lab-*"]
description = "only the lab team, only on lab devices"
"""
INVALID = {"count": "many", "extra": True}


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = Path(tmp_path_factory.mktemp("authz-order"))
    (root / "policy.toml").write_text(POLICY)
    return root


@pytest.fixture(scope="module")
def config(workdir: Path) -> Config:
    return Config(base_dir=workdir, first_party={"policy": {"file": "policy.toml"}})


@pytest.fixture(scope="module")
def registry(config: Config) -> Registry:
    skills = SkillsPlugin(
        simple_skill("open", input_schema=COUNTED),
        simple_skill("guarded", input_schema=COUNTED),
        simple_skill("unlisted", input_schema=COUNTED),
        simple_skill("by_resource", input_schema=ON_DEVICE, resources=("/device",)),
        simple_skill("team_device", input_schema=ON_DEVICE, resources=("/device",)),
    )
    return registry_of([*first_party_plugins(config), ("skills", skills)])


@pytest.fixture(scope="module")
def base(registry: Registry, config: Config) -> Iterator[str]:
    with running_agent(registry, config) as url:
        yield url


def call(
    base: str, registry: Registry, skill: str, arguments: Any, binding: str = "JSONRPC"
) -> Any:
    digest = registry.skills[skill].interface_digest
    return invoke(base, skill_request(skill, arguments, "1.0", digest), binding)


def assert_refused_without_details(task: Any) -> None:
    assert task["status"]["state"] == "TASK_STATE_REJECTED"
    error = error_of(task)
    assert error["code"] == "authorization_failed"
    assert "details" not in error
    text = json.dumps(task["status"])
    assert "count" not in text and "integer" not in text and "nobody" not in text
    assert "/device" not in text and "lab" not in text


def test_authorization_before_details_when_a_policy_denies_the_skill(
    base: str, registry: Registry
) -> None:
    """A deny rule naming the skill alone refuses before validation: no field details."""
    assert_refused_without_details(call(base, registry, "guarded", INVALID))
    assert_refused_without_details(call(base, registry, "guarded", {"count": 2}))


def test_authorization_before_details_when_no_policy_allows_the_skill(
    base: str, registry: Registry
) -> None:
    """No rule for the skill, and nothing declared that could change that: refused first."""
    assert_refused_without_details(call(base, registry, "unlisted", INVALID))


def test_authorization_allowed_caller_gets_input_details(base: str, registry: Registry) -> None:
    task = call(base, registry, "open", INVALID)
    assert task["status"]["state"] == "TASK_STATE_REJECTED"
    error = error_of(task)
    assert error["code"] == "input_invalid"
    assert {"/count", ""} & {d["instance_path"] for d in error["details"]}
    assert call(base, registry, "open", {"count": 2})["status"]["state"] == "TASK_STATE_COMPLETED"


def test_authorization_of_resources_after_validation(base: str, registry: Registry) -> None:
    """A rule that needs resources is not forced to deny: it decides after validation."""
    invalid = call(base, registry, "by_resource", {"device": "lab-1", "count": "x"})
    assert error_of(invalid)["code"] == "input_invalid"
    lab = call(base, registry, "by_resource", {"device": "lab-1", "count": 1})
    assert lab["status"]["state"] == "TASK_STATE_COMPLETED"
    core = call(base, registry, "by_resource", {"device": "core-1", "count": 1})
    assert core["status"]["state"] == "TASK_STATE_REJECTED"
    assert error_of(core)["code"] == "authorization_failed"


@pytest.mark.parametrize("binding", ["JSONRPC", "HTTP+JSON"])
def test_no_rule_could_allow_the_caller_a_skill_with_resources(
    base: str, registry: Registry, binding: str
) -> None:
    """The skill declares resources, and the only rule for it names another caller: the
    policy file denies at the skill stage, so the caller (anonymous here) learns
    authorization_failed and no field details, with invalid and with valid arguments."""
    invalid = call(base, registry, "team_device", {"device": 7, "count": "x"}, binding)
    assert_refused_without_details(invalid)
    valid = call(base, registry, "team_device", {"device": "lab-1", "count": 1}, binding)
    assert_refused_without_details(valid)
    # A caller a rule allows on these arguments learns what they must look like...
    other = call(base, registry, "by_resource", {"device": "lab-1", "count": "x"}, binding)
    assert error_of(other)["code"] == "input_invalid" and error_of(other)["details"]
    # ...but not when the call-stage decision on them would deny it (issue 28, item 3).
    denied = call(base, registry, "by_resource", {"device": 7, "count": "x"}, binding)
    assert_refused_without_details(denied)
    core = call(base, registry, "by_resource", {"device": "core-1", "count": "x"}, binding)
    assert_refused_without_details(core)


def test_a_policy_failure_is_diagnosed_for_the_operator(
    base: str, registry: Registry, caplog: pytest.LogCaptureFixture
) -> None:
    """The caller learns only authorization_failed; the operator's log names the task, the
    condition and the rule that refused (the draft's diagnostics: "policy failures")."""
    caplog.set_level(logging.INFO, logger="skillrack")
    task = call(base, registry, "guarded", {"count": 2})
    assert_refused_without_details(task)
    lines = [r.getMessage() for r in caplog.records]
    assert any(
        task["id"] in line and "TASK_STATE_REJECTED with authorization_failed" in line
        for line in lines
    ), lines
    assert any(task["id"] in line and "nobody may use guarded" in line for line in lines), lines


# The skill-level rule, opinion by opinion ------------------------------------------------------


class Fixed:
    def __init__(self, answer: Decision | None) -> None:
        self.answer = answer

    @hookimpl
    def authorize_invocation(self, request: AuthorizationRequest) -> Decision | None:
        assert request.scope == SKILL_SCOPE and request.arguments is None
        return self.answer


SKILL_REQUEST = AuthorizationRequest(
    caller=ANONYMOUS,
    skill_id="s",
    skill_version="1.0",
    plugin="p",
    authority={},
    scope=SKILL_SCOPE,
)


@pytest.mark.parametrize(
    "answers, has_details, refused",
    [
        ([Decision.deny()], True, True),  # every opinion denies
        ([Decision.deny(), None], True, True),
        ([Decision.deny(), Decision.allow()], True, False),  # the call decides, after validation
        ([None], True, False),  # a policy may need the details
        ([None], False, True),  # nothing left to learn: the call would be denied
        ([], False, True),
        ([Decision.allow()], False, False),
    ],
)
async def test_authorization_skill_level_rule(
    answers: list[Decision | None], has_details: bool, refused: bool
) -> None:
    registry = registry_of([(f"p{n}", Fixed(a)) for n, a in enumerate(answers)])
    assert registry.manager is not None
    verdict = await authorize_skill(registry.manager, SKILL_REQUEST, has_details=has_details)
    assert verdict.allowed is not refused
