"""The approval-rules plugin: ``approve_invocation`` by declarative rules, in front of operators.

Through ``skillrack serve`` as an operator runs it (``[plugins.approval_rules]``
in the configuration file): an execute skill's call that a rule approves
completes without an operator, one a rule refuses ends REJECTED with
``authorization_failed``, one no rule matches waits for an operator exactly as
it does without the plugin.  In process: the rules' matching, their
configuration errors, and that an approval never overrides an authorization
policy's deny.
"""

from __future__ import annotations

import os
import textwrap
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from helpers.agent_harness import running_agent
from helpers.agent_skills import AllowAll, DenyForbidden, TestSkills
from helpers.builders import registry_of

from skillrack.cli import main as cli
from skillrack.host.config import FIRST_PARTY, Config, ConfigError, load_config
from skillrack.host.registry import Registry
from skillrack.host.startup import first_party_plugins
from skillrack.protocol.messages import EXTENSION_URI
from skillrack.serve.security.approvals import ApprovalStore
from skillrack.serve.security.authz import AuthorizationRequest, Decision
from skillrack.serve.security.caller import ANONYMOUS, Caller
from skillrack.testing.serve import (
    CARD_PATH,
    ServedAgent,
    error_of,
    invoke,
    skill_request,
    start_agent,
)
from skillrack_plugins import approval_rules
from skillrack_plugins.approval_rules import ApprovalRules

PROBE_MODULE = "skillrack_approval_probe"
PROBE_SOURCE = '''
"""An execute skill: restarting a device is a side effect an operator may have to approve."""

from skillrack import Authority, DomainSchema, Skill, hookimpl


def _schema(name, schema):
    return DomainSchema.inline(schema, schema_uri=f"urn:test:approval-probe:{name}", version="1.0")


async def restart(arguments, context):
    return {"restarted": arguments["device"]}


@hookimpl
def register_skills(register):
    register(
        Skill(
            id="restart_device",
            version="1.0",
            name="Restart a device",
            description="approval probe: restarts a device",
            input_schema=_schema(
                "in",
                {
                    "type": "object",
                    "required": ["device"],
                    "properties": {"device": {"type": "string"}},
                },
            ),
            output_schema=_schema("out", {"type": "object"}),
            handler=restart,
            authority=Authority("execute", approval_may_be_required=True),
            resources=("/device",),
        )
    )
'''

CONFIG = f"""
[plugins]
builtin = ["{PROBE_MODULE}"]

[server]
rate_per_minute = 1000000

[[plugins.approval_rules.rule]]
effect = "approve"
skills = ["restart_device"]
resources = ["lab-*"]
authenticated = false
description = "lab devices restart without an operator"

[[plugins.approval_rules.rule]]
effect = "refuse"
skills = ["restart_device"]
resources = ["core-*"]
authenticated = false
description = "core devices never restart through the agent"
"""


# Through skillrack serve ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("approval-rules")
    (root / "plugin").mkdir()
    (root / "plugin" / f"{PROBE_MODULE}.py").write_text(PROBE_SOURCE, encoding="utf-8")
    (root / "skillrack.toml").write_text(CONFIG, encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def agent(workdir: Path) -> Iterator[ServedAgent]:
    python_path = os.pathsep.join(
        filter(None, [str(workdir / "plugin"), os.environ.get("PYTHONPATH")])
    )
    served = start_agent(
        workdir,
        plugins="",
        args=("--config", str(workdir / "skillrack.toml")),
        env={"PYTHONPATH": python_path},
    ).wait_ready()
    try:
        yield served
    finally:
        served.stop()


def restart(agent: ServedAgent, device: str, task_id: str | None = None) -> Any:
    card = httpx.get(agent.url + CARD_PATH, timeout=10).json()
    [extension] = [e for e in card["capabilities"]["extensions"] if e["uri"] == EXTENSION_URI]
    [entry] = [s for s in extension["params"]["skills"] if s["skill_id"] == "restart_device"]
    data = skill_request("restart_device", {"device": device}, "1.0", entry["interface_digest"])
    return invoke(agent.url, data, task_id=task_id)


def test_a_call_a_rule_approves_completes_without_an_operator(agent: ServedAgent) -> None:
    task = restart(agent, "lab-7")
    assert task["status"]["state"] == "TASK_STATE_COMPLETED", task
    [result] = [a for a in task["artifacts"] if a["name"] == "restart_device"]
    assert result["parts"][0]["data"]["result"] == {"restarted": "lab-7"}


def test_a_call_a_rule_refuses_is_rejected(agent: ServedAgent) -> None:
    task = restart(agent, "core-router-1")
    assert task["status"]["state"] == "TASK_STATE_REJECTED"
    assert error_of(task)["code"] == "authorization_failed"
    assert "artifacts" not in task or not task["artifacts"]


def test_a_call_no_rule_matches_waits_for_an_operator(
    agent: ServedAgent, workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    parked = restart(agent, "edge-3")
    assert parked["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    [part] = parked["status"]["message"]["parts"]
    waiting = part["data"]["skillrack_approval"]
    assert waiting["state"] == "pending" and waiting["resources"] == {"/device": "edge-3"}
    store = str(workdir / "skillrack-approvals.db")
    assert (
        cli.main(["approvals", "grant", waiting["approval_id"], "--store", store, "--reason", "ok"])
        == 0
    )
    capsys.readouterr()
    final = restart(agent, "edge-3", task_id=parked["id"])
    assert final["status"]["state"] == "TASK_STATE_COMPLETED"


def test_the_configuration_names_the_plugin(workdir: Path) -> None:
    config = load_config(workdir / "skillrack.toml")
    assert FIRST_PARTY["approval_rules"] == "skillrack_plugins.approval_rules"
    [(name, plugin)] = first_party_plugins(config)
    assert name == "approval_rules" and isinstance(plugin, ApprovalRules)
    assert [rule.effect for rule in plugin.rules] == ["approve", "refuse"]


# In process: an approval never overrides a policy ------------------------------------------


def rules_plugin(text: str) -> ApprovalRules:
    settings = tomllib.loads(textwrap.dedent(text))["plugins"]["approval_rules"]
    return approval_rules.create(settings, Path("."))


def test_a_policy_deny_wins_over_an_approval(tmp_path: Path) -> None:
    approve_all = rules_plugin(
        """
        [[plugins.approval_rules.rule]]
        effect = "approve"
        skills = ["*"]
        authenticated = false
        """
    )
    registry = registry_of(
        [
            ("tests", TestSkills()),
            ("allow", AllowAll()),
            ("deny", DenyForbidden()),  # denies every delete
            ("approval_rules", approve_all),
        ]
    )
    with running_agent(registry, Config(base_dir=tmp_path)) as url:
        task = send_manage(url, registry, "delete")
    assert task["status"]["state"] == "TASK_STATE_REJECTED"
    assert error_of(task)["code"] == "authorization_failed"


def test_a_refusal_ends_a_flagged_operation_rejected(tmp_path: Path) -> None:
    refuse_deletes = rules_plugin(
        """
        [[plugins.approval_rules.rule]]
        effect = "refuse"
        skills = ["manage"]
        operations = ["delete"]
        authenticated = false
        """
    )
    registry = registry_of(
        [("tests", TestSkills()), ("allow", AllowAll()), ("approval_rules", refuse_deletes)]
    )
    with running_agent(registry, Config(base_dir=tmp_path)) as url:
        refused = send_manage(url, registry, "delete")
        read = send_manage(url, registry, "read")  # asked, but no rule matches a read
    assert refused["status"]["state"] == "TASK_STATE_REJECTED"
    assert error_of(refused)["code"] == "authorization_failed"
    assert read["status"]["state"] == "TASK_STATE_COMPLETED"
    # refused by a rule: nothing was left for an operator to decide
    assert ApprovalStore(tmp_path / Config().server.approvals_store).list() == []


def send_manage(url: str, registry: Registry, operation: str) -> Any:
    skill = registry.skills["manage"]
    data = skill_request(
        "manage", {"operation": operation}, skill.skill.version, skill.interface_digest
    )
    return invoke(url, data)


# The rules ---------------------------------------------------------------------------------

RULES = """
[[plugins.approval_rules.rule]]
effect = "approve"
skills = ["manage"]
operations = ["delete"]
roles = ["operator"]
resources = ["lab-*"]

[[plugins.approval_rules.rule]]
effect = "refuse"
skills = ["manage"]
resources = ["core-*"]

[[plugins.approval_rules.rule]]
effect = "approve"
skills = ["restart_*"]
identities = ["svc-*"]
tenants = ["acme"]

[[plugins.approval_rules.rule]]
effect = "approve"
skills = ["public_*"]
authenticated = false
"""


def ask_plugin(
    plugin: ApprovalRules,
    caller: Caller,
    skill_id: str,
    operation: str | None = None,
    resources: dict[str, Any] | None = None,
) -> Decision | None:
    request = AuthorizationRequest(
        caller=caller,
        skill_id=skill_id,
        skill_version="1.0",
        plugin="tests",
        authority={"default_mode": "execute", "approval_may_be_required": True},
        operation=operation,
        resources=resources or {},
    )
    return plugin.approve_invocation(request)


def ask(
    caller: Caller,
    skill_id: str,
    *,
    operation: str | None = None,
    resources: dict[str, Any] | None = None,
) -> Decision | None:
    return ask_plugin(rules_plugin(RULES), caller, skill_id, operation, resources)


OPERATOR = Caller("alice", "acme", True, {"roles": ["operator"]})
SERVICE = Caller("svc-backup", "acme", True)


@pytest.mark.parametrize(
    ("caller", "skill_id", "operation", "resources", "expected"),
    [
        (OPERATOR, "manage", "delete", {"/device": "lab-1"}, True),
        (OPERATOR, "manage", "delete", {"/device": ["lab-1", "lab-2"]}, True),
        # an approve rule needs every resource to match; a refuse rule only one
        (OPERATOR, "manage", "delete", {"/device": ["lab-1", "edge-1"]}, None),
        (OPERATOR, "manage", "delete", {"/device": ["lab-1", "core-1"]}, False),
        (OPERATOR, "manage", "delete", {"/device": 7}, None),
        (OPERATOR, "manage", "delete", {}, None),
        (OPERATOR, "manage", None, {"/device": "lab-1"}, None),  # no operation, no match
        (Caller("bob", "acme", True), "manage", "delete", {"/device": "lab-1"}, None),
        (SERVICE, "restart_device", None, {}, True),
        (Caller("svc-backup", "globex", True), "restart_device", None, {}, None),
        (Caller("svc-backup", "acme", False), "restart_device", None, {}, None),
        (ANONYMOUS, "public_status", None, {}, True),
        (OPERATOR, "other_skill", None, {}, None),
    ],
)
def test_rules(
    caller: Caller,
    skill_id: str,
    operation: str | None,
    resources: dict[str, Any],
    expected: bool | None,
) -> None:
    decision = ask(caller, skill_id, operation=operation, resources=resources)
    assert (None if decision is None else decision.allowed) is expected


def test_a_reason_names_the_rule() -> None:
    refused = ask(OPERATOR, "manage", operation="delete", resources={"/device": "core-9"})
    assert refused is not None and refused.reason == "refused by approval rule 2"


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        (
            {"rules": []},
            '[plugins.approval_rules]: unknown key "rules" (did you mean "rule"?); known: rule',
        ),
        ({"rule": {"effect": "approve"}}, "'rule' must be an array of tables"),
        (
            {"rule": [{"skills": ["x"]}]},
            'rule 1: key \'effect\' must be "approve", "refuse" or "require"',
        ),
        (
            {"rule": [{"effect": "approve", "skills": ["x"], "approvals_required": 2}]},
            "rule 1: key 'approvals_required' is for effect = \"require\" rules only",
        ),
        (
            {"rule": [{"effect": "require", "skills": ["x"], "approvals_required": 0}]},
            "'approvals_required' must be an integer of at least 1",
        ),
        (
            {"rule": [{"effect": "require", "skills": ["x"], "approver_roles": []}]},
            "'approver_roles' must be a non-empty list of role names",
        ),
        ({"rule": [{"effect": "allow", "skills": ["x"]}]}, "(got 'allow')"),
        ({"rule": [{"effect": "approve"}]}, "rule 1: key 'skills' is required"),
        ({"rule": [{"effect": "approve", "skills": []}]}, "'skills' must be a non-empty list"),
        ({"rule": [{"effect": "approve", "skills": ["x"], "who": 1}]}, 'unknown key "who"'),
        (
            {"rule": [{"effect": "approve", "skills": ["x"], "authenticated": "no"}]},
            "'authenticated' must be true or false",
        ),
        ({"rule": ["x"]}, "rule 1 must be a table"),
    ],
)
def test_configuration_errors_name_the_key(settings: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as info:
        approval_rules.create(settings, Path("."))
    assert message in str(info.value) and "plugins.approval_rules" in str(info.value)
    assert "\n" not in str(info.value)


def test_the_approvals_page_example_is_a_valid_configuration() -> None:
    page = (Path(__file__).parents[2] / "docs" / "approvals.md").read_text()
    section = page.split("## Approval rules", 1)[1].split("\n## ", 1)[0]
    example = section.split("```toml", 1)[1].split("```", 1)[0]
    plugin = rules_plugin(example)
    assert [rule.effect for rule in plugin.rules] == ["approve", "refuse"]
    lab = ask_plugin(plugin, OPERATOR, "manage", "delete", {"/device": "lab-1"})
    core = ask_plugin(plugin, OPERATOR, "manage", "delete", {"/device": ["lab-1", "core-1"]})
    assert lab is not None and lab.allowed and core is not None and not core.allowed


def test_no_rules_leave_every_call_to_an_operator() -> None:
    plugin = approval_rules.create({}, Path("."))
    request = AuthorizationRequest(
        caller=OPERATOR, skill_id="manage", skill_version="1.0", plugin="tests", authority={}
    )
    assert plugin.rules == () and plugin.approve_invocation(request) is None


REQUIRE_RULES = """
[[plugins.approval_rules.rule]]
effect = "approve"
skills = ["*"]

[[plugins.approval_rules.rule]]
effect = "require"
skills = ["show_*"]
approver_roles = ["network-lead"]

[[plugins.approval_rules.rule]]
effect = "require"
skills = ["show_config"]
resources = ["core-*"]
approvals_required = 2
approver_roles = ["network-lead", "security"]

[[plugins.approval_rules.rule]]
effect = "refuse"
skills = ["show_config"]
resources = ["secret-*"]
"""


@pytest.mark.parametrize(
    ("skill_id", "resources", "expected"),
    [
        ("other", {}, (True, 0, ())),  # only the approve rule
        ("show_routes", {}, (False, 1, ("network-lead",))),  # require wins over approve
        ("show_config", {"/device": "edge-1"}, (False, 1, ("network-lead",))),
        # both matching requirements must be met: the largest count, approvers holding a
        # role both rules name (a security officer alone cannot stand in for the lead
        # the first rule asks for); one protected resource value is enough
        (
            "show_config",
            {"/device": ["edge-1", "core-1"]},
            (False, 2, ("network-lead",)),
        ),
        ("show_config", {"/device": ["core-1", "secret-1"]}, (False, 0, ())),  # refuse wins
    ],
)
def test_require_rules(
    skill_id: str, resources: dict[str, Any], expected: tuple[bool, int, tuple[str, ...]]
) -> None:
    decision = ask_plugin(rules_plugin(REQUIRE_RULES), OPERATOR, skill_id, None, resources)
    assert decision is not None
    assert (decision.allowed, decision.approvals_required, decision.approver_roles) == expected
    assert decision.requires_people is (decision.approvals_required > 0)


DISJOINT_RULES = """
[[plugins.approval_rules.rule]]
effect = "require"
skills = ["push_*"]
approvals_required = 2
approver_roles = ["network-lead"]

[[plugins.approval_rules.rule]]
effect = "require"
skills = ["push_config"]
approver_roles = ["security"]
"""


def test_require_rules_with_no_common_role_refuse() -> None:
    """Two rules that apply and share no approver role: nobody could meet both, so the
    call is refused at once, naming both role lists (issue 28, fail closed)."""
    plugin = rules_plugin(DISJOINT_RULES)
    decision = ask_plugin(plugin, OPERATOR, "push_config", None, {})
    assert decision is not None and not decision.allowed and not decision.requires_people
    assert "['network-lead'] and ['security']" in decision.reason
    alone = ask_plugin(plugin, OPERATOR, "push_routes", None, {})
    assert alone is not None
    assert (alone.approvals_required, alone.approver_roles) == (2, ("network-lead",))
