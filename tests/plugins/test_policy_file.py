"""The TOML policy plugin: rule matching, deny over allow, reload, failing closed."""

from __future__ import annotations

import logging
import os
import re
import textwrap
from pathlib import Path
from typing import Any

import pluggy
import pytest

from skillrack import hookspecs
from skillrack.host.config import ConfigError
from skillrack.serve.security.authz import (
    SKILL_SCOPE,
    AuthorizationRequest,
    Decision,
    authorize,
)
from skillrack.serve.security.caller import ANONYMOUS, Caller
from skillrack_plugins import policy_file
from skillrack_plugins.policy_file import PolicyFile

POLICY = """
[[rule]]
effect = "allow"
identities = ["alice", "svc-*"]
skills = ["evaluate_resource_condition", "collect_*"]
description = "operators' service accounts"

[[rule]]
effect = "allow"
roles = ["operator"]
skills = ["evaluate_resource_condition"]

[[rule]]
effect = "allow"
tenants = ["acme"]
skills = ["tenant_report"]

[[rule]]
effect = "allow"
skills = ["device_admin"]
operations = ["get_status", "reboot"]

[[rule]]
effect = "deny"
skills = ["device_admin"]
operations = ["reboot"]
description = "no reboots through the agent"

[[rule]]
effect = "deny"
identities = ["mallory"]
skills = ["*"]
description = "blocked account"

[[rule]]
effect = "allow"
identities = ["mallory"]
skills = ["evaluate_resource_condition"]

[[rule]]
effect = "allow"
skills = ["inspect_device"]
resources = ["core-router-*", "edge-?"]

[[rule]]
effect = "deny"
skills = ["inspect_device"]
resources = ["core-router-99"]
description = "lab router"

[[rule]]
effect = "allow"
authenticated = false
skills = ["public_*"]
"""


def write(path: Path, text: str) -> None:
    """Rewrite ``path`` and make sure its mtime moves even on coarse clocks."""
    before = path.stat().st_mtime_ns if path.exists() else 0
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    bumped = max(path.stat().st_mtime_ns, before + 1_000_000_000)
    os.utime(path, ns=(bumped, bumped))


def make(tmp_path: Path, text: str = POLICY) -> PolicyFile:
    write(tmp_path / "policy.toml", text)
    return policy_file.create({"file": "policy.toml"}, tmp_path)


def caller(
    identity: str = "bob",
    *,
    tenant: str = "",
    roles: list[str] | None = None,
    authenticated: bool = True,
) -> Caller:
    attributes: dict[str, Any] = {} if roles is None else {"roles": roles}
    return Caller(identity, tenant, authenticated, attributes)


def request(
    who: Caller,
    skill_id: str,
    *,
    operation: str | None = None,
    resources: dict[str, Any] | None = None,
) -> AuthorizationRequest:
    return AuthorizationRequest(
        caller=who,
        skill_id=skill_id,
        skill_version="1.0",
        plugin="example",
        authority={},
        operation=operation,
        resources=resources or {},
    )


def decide(policy: PolicyFile, req: AuthorizationRequest) -> Decision | None:
    return policy.authorize_invocation(req)


@pytest.fixture
def policy(tmp_path: Path) -> PolicyFile:
    return make(tmp_path)


# --- matching ---------------------------------------------------------------


@pytest.mark.parametrize("identity", ["alice", "svc-collector"])
def test_allow_by_identity_pattern(policy: PolicyFile, identity: str) -> None:
    for skill in ("evaluate_resource_condition", "collect_interfaces"):
        decision = decide(policy, request(caller(identity), skill))
        assert decision is not None and decision.allowed
        assert "rule 1" in decision.reason and "operators' service accounts" in decision.reason


def test_identity_patterns_are_case_sensitive_and_whole(policy: PolicyFile) -> None:
    assert decide(policy, request(caller("Alice"), "collect_x")) is None
    assert decide(policy, request(caller("alice2"), "collect_x")) is None


def test_allow_by_role(policy: PolicyFile) -> None:
    decision = decide(
        policy, request(caller(roles=["viewer", "operator"]), "evaluate_resource_condition")
    )
    assert decision is not None and decision.allowed and "rule 2" in decision.reason
    assert decide(policy, request(caller(roles=["viewer"]), "evaluate_resource_condition")) is None
    assert decide(policy, request(caller(), "evaluate_resource_condition")) is None


def test_roles_attribute_that_is_not_a_list_grants_nothing(policy: PolicyFile) -> None:
    odd = Caller("bob", "", True, {"roles": "operator"})
    assert decide(policy, request(odd, "evaluate_resource_condition")) is None


def test_allow_by_tenant(policy: PolicyFile) -> None:
    decision = decide(policy, request(caller(tenant="acme"), "tenant_report"))
    assert decision is not None and decision.allowed
    assert decide(policy, request(caller(tenant="globex"), "tenant_report")) is None
    assert decide(policy, request(caller(), "tenant_report")) is None


def test_deny_wins_over_allow(policy: PolicyFile) -> None:
    # mallory matches the allow rule 7 and the deny rule 6.
    decision = decide(policy, request(caller("mallory"), "evaluate_resource_condition"))
    assert decision is not None and not decision.allowed
    assert "rule 6" in decision.reason and "blocked account" in decision.reason


def test_operation_level_deny_in_a_multi_operation_skill(policy: PolicyFile) -> None:
    allowed = decide(policy, request(caller(), "device_admin", operation="get_status"))
    assert allowed is not None and allowed.allowed
    denied = decide(policy, request(caller(), "device_admin", operation="reboot"))
    assert denied is not None and not denied.allowed and "rule 5" in denied.reason
    # An operation no rule names, and a request without an operation: no opinion.
    assert decide(policy, request(caller(), "device_admin", operation="wipe")) is None
    assert decide(policy, request(caller(), "device_admin")) is None


def test_resources_all_matching_are_allowed(policy: PolicyFile) -> None:
    req = request(caller(), "inspect_device", resources={"/device": "core-router-1"})
    decision = decide(policy, req)
    assert decision is not None and decision.allowed and "rule 8" in decision.reason
    both = {"/device": "core-router-1", "/peer": "edge-7"}
    decision = decide(policy, request(caller(), "inspect_device", resources=both))
    assert decision is not None and decision.allowed


def test_resource_mismatch_does_not_match(policy: PolicyFile) -> None:
    req = request(caller(), "inspect_device", resources={"/device": "access-switch-1"})
    assert decide(policy, req) is None
    mixed = {"/device": "core-router-1", "/peer": "edge-17"}
    assert decide(policy, request(caller(), "inspect_device", resources=mixed)) is None


def test_resource_list_values_match_each_element(policy: PolicyFile) -> None:
    ok = {"/devices": ["core-router-1", "edge-2"]}
    decision = decide(policy, request(caller(), "inspect_device", resources=ok))
    assert decision is not None and decision.allowed
    bad = {"/devices": ["core-router-1", "dist-3"]}
    assert decide(policy, request(caller(), "inspect_device", resources=bad)) is None


def test_no_resource_values_do_not_match_a_rule_listing_resources(policy: PolicyFile) -> None:
    assert decide(policy, request(caller(), "inspect_device")) is None
    assert decide(policy, request(caller(), "inspect_device", resources={"/d": []})) is None


def test_unverifiable_resource_values_never_allow(policy: PolicyFile) -> None:
    for value in (42, {"name": "core-router-1"}, ["core-router-1", 7], [["core-router-1"]]):
        req = request(caller(), "inspect_device", resources={"/device": value})
        assert decide(policy, req) is None, value


def test_resource_deny_cannot_be_diluted_by_other_resources(policy: PolicyFile) -> None:
    lab = {"/device": "core-router-99"}
    decision = decide(policy, request(caller(), "inspect_device", resources=lab))
    assert decision is not None and not decision.allowed and "lab router" in decision.reason
    padded = {"/devices": ["core-router-1", "core-router-99"]}
    decision = decide(policy, request(caller(), "inspect_device", resources=padded))
    assert decision is not None and not decision.allowed


def test_anonymous_callers_are_not_matched_by_default(policy: PolicyFile) -> None:
    assert decide(policy, request(ANONYMOUS, "device_admin", operation="get_status")) is None
    unauth_alice = caller("alice", authenticated=False)
    assert decide(policy, request(unauth_alice, "collect_x")) is None
    # A rule with authenticated = false matches them.
    decision = decide(policy, request(ANONYMOUS, "public_catalog"))
    assert decision is not None and decision.allowed
    decision = decide(policy, request(caller(), "public_catalog"))
    assert decision is not None and decision.allowed


def test_no_matching_rule_means_no_opinion(policy: PolicyFile) -> None:
    assert decide(policy, request(caller("alice"), "something_else")) is None


def test_empty_policy_has_no_opinion(tmp_path: Path) -> None:
    policy = make(tmp_path, "# nothing yet\n")
    assert decide(policy, request(caller("alice"), "collect_x")) is None


async def test_works_as_a_registered_plugin_under_the_veto_rule(policy: PolicyFile) -> None:
    manager = pluggy.PluginManager(hookspecs.PROJECT)
    manager.add_hookspecs(hookspecs)
    manager.register(policy, name="policy-file")
    verdict = await authorize(manager, request(caller("alice"), "collect_x"))
    assert verdict.allowed
    verdict = await authorize(manager, request(caller("bob"), "collect_x"))
    assert not verdict.allowed and verdict.opinions == (("policy-file", None),)


# --- the skill stage (before validation) --------------------------------------


def skill_stage(who: Caller, skill_id: str) -> AuthorizationRequest:
    return AuthorizationRequest(
        caller=who,
        skill_id=skill_id,
        skill_version="1.0",
        plugin="example",
        authority={},
        scope=SKILL_SCOPE,
    )


def test_skill_stage_denies_a_caller_no_rule_could_allow(policy: PolicyFile) -> None:
    """No allow rule names this skill for this caller, whatever its resources or operation."""
    for who, skill_id in [
        (caller("bob"), "evaluate_resource_condition"),  # rules for alice, svc-*, operators
        (caller("bob"), "something_else"),  # no rule names the skill
        (caller("bob", tenant="globex"), "tenant_report"),  # the rule is for tenant acme
        (caller("bob", authenticated=False), "inspect_device"),  # rules need a login
    ]:
        decision = decide(policy, skill_stage(who, skill_id))
        assert decision is not None and not decision.allowed, (who, skill_id)
        assert "no rule" in decision.reason


def test_skill_stage_waits_for_the_details_a_rule_needs(policy: PolicyFile) -> None:
    """A rule on resources or operations could allow: no opinion until the call is known."""
    assert decide(policy, skill_stage(caller("bob"), "inspect_device")) is None
    assert decide(policy, skill_stage(caller("bob"), "device_admin")) is None


def test_skill_stage_allows_and_denies_what_needs_no_details(policy: PolicyFile) -> None:
    allowed = decide(policy, skill_stage(caller("alice"), "collect_x"))
    assert allowed is not None and allowed.allowed
    public = decide(policy, skill_stage(caller("x", authenticated=False), "public_info"))
    assert public is not None and public.allowed
    blocked = decide(policy, skill_stage(caller("mallory"), "evaluate_resource_condition"))
    assert blocked is not None and not blocked.allowed and "blocked account" in blocked.reason


def test_skill_stage_of_an_empty_policy_denies(tmp_path: Path) -> None:
    policy = make(tmp_path, "# nothing yet\n")
    decision = decide(policy, skill_stage(caller("alice"), "collect_x"))
    assert decision is not None and not decision.allowed


# --- reload and failing closed -----------------------------------------------


def test_a_changed_file_takes_effect_on_the_next_call(tmp_path: Path) -> None:
    policy = make(tmp_path, '[[rule]]\neffect = "allow"\nidentities = ["alice"]\nskills = ["x"]\n')
    assert decide(policy, request(caller("bob"), "x")) is None
    write(
        tmp_path / "policy.toml",
        '[[rule]]\neffect = "allow"\nidentities = ["bob"]\nskills = ["x"]\n',
    )
    decision = decide(policy, request(caller("bob"), "x"))
    assert decision is not None and decision.allowed
    assert decide(policy, request(caller("alice"), "x")) is None


def test_a_file_replaced_by_rename_is_reloaded(tmp_path: Path) -> None:
    policy = make(tmp_path, '[[rule]]\neffect = "allow"\nskills = ["x"]\n')
    replacement = tmp_path / "new.toml"
    write(replacement, '[[rule]]\neffect = "deny"\nskills = ["x"]\n')
    os.replace(replacement, tmp_path / "policy.toml")
    decision = decide(policy, request(caller(), "x"))
    assert decision is not None and not decision.allowed


def test_invalid_rewrite_fails_closed_until_fixed(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    policy = make(tmp_path, '[[rule]]\neffect = "allow"\nskills = ["x"]\n')
    allowed = decide(policy, request(caller(), "x"))
    assert allowed is not None and allowed.allowed

    write(tmp_path / "policy.toml", '[[rule]]\neffect = "allow"\nskils = ["x"]\n')
    with caplog.at_level(logging.ERROR, logger=policy_file.__name__):
        for skill in ("x", "anything"):
            decision = decide(policy, request(caller(), skill))
            assert decision is not None and not decision.allowed
            assert "failing closed" in decision.reason and "skils" in decision.reason
    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 1 and "rule 1" in errors[0].getMessage()  # logged once, not per call

    write(tmp_path / "policy.toml", '[[rule]]\neffect = "allow"\nskills = ["x"]\n')
    recovered = decide(policy, request(caller(), "x"))
    assert recovered is not None and recovered.allowed
    assert decide(policy, request(caller(), "anything")) is None


def test_invalid_toml_and_removed_file_fail_closed(tmp_path: Path) -> None:
    policy = make(tmp_path, '[[rule]]\neffect = "allow"\nskills = ["x"]\n')
    write(tmp_path / "policy.toml", "[[rule]\n")
    decision = decide(policy, request(caller(), "x"))
    assert decision is not None and not decision.allowed and "TOML" in decision.reason

    (tmp_path / "policy.toml").unlink()
    decision = decide(policy, request(caller(), "x"))
    assert decision is not None and not decision.allowed and "cannot read" in decision.reason

    write(tmp_path / "policy.toml", '[[rule]]\neffect = "allow"\nskills = ["x"]\n')
    decision = decide(policy, request(caller(), "x"))
    assert decision is not None and decision.allowed


# --- start-up errors ----------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (
            'effect = "allow"\nskills = ["x"]\nidentity = ["a"]',
            ("rule 2", 'unknown key "identity" (did you mean "identities"?)'),
        ),
        ('effect = "permit"\nskills = ["x"]', ("rule 2", "'effect'")),
        ('skills = ["x"]', ("rule 2", "'effect'")),
        ('effect = "allow"', ("rule 2", "'skills'")),
        ('effect = "allow"\nskills = []', ("rule 2", "'skills'")),
        ('effect = "allow"\nskills = "x"', ("rule 2", "'skills'")),
        ('effect = "allow"\nskills = ["x", 1]', ("rule 2", "'skills'")),
        ('effect = "allow"\nskills = ["x"]\nroles = "operator"', ("rule 2", "'roles'")),
        ('effect = "allow"\nskills = ["x"]\nroles = []', ("rule 2", "'roles'")),
        ('effect = "allow"\nskills = ["x"]\nauthenticated = "no"', ("rule 2", "'authenticated'")),
        ('effect = "allow"\nskills = ["x"]\ndescription = 3', ("rule 2", "'description'")),
    ],
)
def test_bad_rule_at_startup_names_rule_and_key(
    tmp_path: Path, body: str, expected: tuple[str, str]
) -> None:
    text = '[[rule]]\neffect = "allow"\nskills = ["ok"]\n\n[[rule]]\n' + body + "\n"
    with pytest.raises(ConfigError) as info:
        make(tmp_path, text)
    message = str(info.value)
    assert "\n" not in message
    for part in expected:
        assert part in message


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[[rule]\n", "not valid TOML"),
        (
            '[[rules]]\neffect = "allow"\nskills = ["x"]\n',
            'unknown key "rules" (did you mean "rule"?); known: rule',
        ),
        ('[rule]\neffect = "allow"\nskills = ["x"]\n', "'rule'"),
        ('rule = ["x"]\n', "rule 1"),
    ],
)
def test_bad_policy_file_at_startup(tmp_path: Path, text: str, expected: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(expected)) as info:
        make(tmp_path, text)
    assert "\n" not in str(info.value)


def test_missing_file_at_startup(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read policy file"):
        policy_file.create({"file": "absent.toml"}, tmp_path)


@pytest.mark.parametrize(
    ("settings", "expected"),
    [
        ({}, "'file'"),
        ({"file": 3}, "'file'"),
        ({"file": ""}, "'file'"),
        (
            {"file": "p.toml", "reload": True},
            r'^\[plugins\.policy\]: unknown key "reload"; known: file$',
        ),
    ],
)
def test_bad_settings(tmp_path: Path, settings: dict[str, Any], expected: str) -> None:
    with pytest.raises(ConfigError, match=expected) as info:
        policy_file.create(settings, tmp_path)
    assert "\n" not in str(info.value)


def test_file_is_resolved_against_base_dir(tmp_path: Path) -> None:
    (tmp_path / "conf").mkdir()
    write(tmp_path / "conf" / "p.toml", '[[rule]]\neffect = "allow"\nskills = ["x"]\n')
    policy = policy_file.create({"file": "p.toml"}, tmp_path / "conf")
    assert policy.path == tmp_path / "conf" / "p.toml"
