"""Declarative approval rules: approve, refuse, or ask people, by the deployment's policy.

Approvers are asked on every call of every skill, whatever authority it
advertises (:mod:`skillrack.serve.execution.approval_gate`); when no approver
decides, a call its declarations say needs approval (an ``execute`` skill, a
flagged operation) waits in ``TASK_STATE_INPUT_REQUIRED`` until an operator
runs ``skillrack approvals grant|deny``.  Many of those calls are routine (a
read-only operation of an execute skill, a lab device, a service account
trusted for one operation) and an operator's decision adds only latency;
others need more than one person, or need people although the skill only
observes.  This plugin implements ``approve_invocation`` from rules in the
agent's configuration::

    [plugins.approval_rules]

    [[plugins.approval_rules.rule]]
    effect = "approve"                    # "approve" | "refuse" | "require"; required
    skills = ["manage"]                   # required
    operations = ["read"]                 # optional (multi-operation skills)
    identities = ["svc-*"]                # optional
    roles = ["operator"]                  # optional; the caller must have one of them
    tenants = ["acme"]                    # optional
    resources = ["lab-*"]                 # optional
    case_sensitive = false                # optional, default false (resources only)
    authenticated = true                  # optional, default true
    description = "reads need no operator"   # optional, logged
    approvals_required = 2                # "require" only: distinct approvers (default 1)
    approver_roles = ["network-lead"]     # "require" only: roles an approver must hold
                                          # one of (default ["operator"])

Every list holds :func:`fnmatch.fnmatchcase` patterns and must not be empty;
resource values are compared as written and in the policy file's normal form
(NFKC, format characters removed, whitespace stripped, case folded unless
``case_sensitive = true``;
:func:`skillrack_plugins.rules.normalize_resource`).  A rule matches
when every condition it states matches, as in the policy file: an operation
rule never matches a call without an operation, an unauthenticated caller matches
only ``authenticated = false`` rules, and for ``resources`` an approve rule
needs every resource value to match while one matching value is enough for a
refuse or require rule (adding an unprotected resource cannot slip past them).

Decision: a matching refuse rule refuses (the task ends
``TASK_STATE_REJECTED`` with ``authorization_failed``); otherwise the matching
require rules make the call wait for people (``Decision.require``), even when
an approve rule matches too.  Several matching require rules must all be met:
they combine as :meth:`skillrack.Decision.all_of` says (the largest
``approvals_required``, approvers holding a role every one of them names;
rules naming no role in common refuse the call, so a deployment that stacks
rules gives them a shared approver role);
otherwise a matching approve rule approves; otherwise the plugin has no
opinion (``None``) and the call waits for an operator when its declarations
say so, as it would without the plugin.  The host asks approvers only after
every authorization policy allowed the call, so a rule here can never grant
what a policy denies.  The rules are read at start-up; a bad rule stops
start-up with a one-line :class:`ConfigError`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from skillrack import AuthorizationRequest, ConfigError, Decision, hookimpl, refuse_unknown_keys
from skillrack_plugins.rules import Effects, Rule
from skillrack_plugins.rules import parse_rule as parse_rule_table

NAME = "approval-rules"
SECTION = "[plugins.approval_rules]"

_EFFECTS = Effects(permitting="approve", blocking="refuse")
#: The effect that asks people; matched as a blocking rule (one resource value is enough).
REQUIRE = "require"
#: Keys only a ``require`` rule has.
_REQUIRE_KEYS = ("approvals_required", "approver_roles")


@dataclass(frozen=True)
class Requirement:
    """What a ``require`` rule asks: this many distinct approvers, holding one of these roles."""

    approvals: int = 1
    roles: tuple[str, ...] = ("operator",)


@dataclass(frozen=True)
class ApprovalRule:
    """One rule: its conditions, and for a ``require`` rule what it asks."""

    rule: Rule
    requirement: Requirement | None = None

    @property
    def effect(self) -> str:
        return self.rule.effect


class ApprovalRules:
    """The plugin: the rules, asked for every call (approval applies in every mode)."""

    def __init__(self, rules: Iterable[Rule | ApprovalRule]) -> None:
        self.rules = tuple(r if isinstance(r, ApprovalRule) else ApprovalRule(r) for r in rules)

    @hookimpl
    def approve_invocation(self, request: AuthorizationRequest) -> Decision | None:
        approved: Rule | None = None
        required: list[Decision] = []
        for entry in self.rules:
            rule = entry.rule
            if not rule.matches(request):
                continue
            if entry.requirement is not None:
                asked = entry.requirement
                required.append(
                    Decision.require(
                        asked.approvals, asked.roles, f"approval required by {rule.label}"
                    )
                )
            elif rule.blocking:
                return Decision.deny(f"refused by {rule.label}")
            else:
                approved = approved or rule
        combined = Decision.all_of(required)
        if combined is not None:
            return combined
        if approved is not None:
            return Decision.allow(f"approved by {approved.label}")
        return None  # left to an operator


def parse_rule(number: int, table: Any) -> ApprovalRule:
    """One rule, or a :class:`ConfigError` naming the rule and the key."""
    here = f"{SECTION}: rule {number}"
    if not isinstance(table, Mapping):
        raise ConfigError(f"{here} must be a table")
    effect = table.get("effect")
    if effect not in ("approve", "refuse", REQUIRE):
        shown = "missing" if effect is None else repr(effect)
        raise ConfigError(
            f'{here}: key \'effect\' must be "approve", "refuse" or "require" (got {shown})'
        )
    conditions = {k: v for k, v in table.items() if k not in _REQUIRE_KEYS}
    if effect != REQUIRE:
        given = [k for k in _REQUIRE_KEYS if k in table]
        if given:
            raise ConfigError(f"{here}: key '{given[0]}' is for effect = \"require\" rules only")
        return ApprovalRule(
            parse_rule_table(number, conditions, here, _EFFECTS, kind="approval rule")
        )
    # A require rule protects like a refusal: one matching resource value is enough.
    rule = parse_rule_table(
        number, {**conditions, "effect": "refuse"}, here, _EFFECTS, kind="approval rule"
    )
    approvals = table.get("approvals_required", 1)
    if isinstance(approvals, bool) or not isinstance(approvals, int) or approvals < 1:
        raise ConfigError(f"{here}: key 'approvals_required' must be an integer of at least 1")
    roles = table.get("approver_roles", ["operator"])
    if (
        not isinstance(roles, list)
        or not roles
        or not all(isinstance(r, str) and r.strip() for r in roles)
    ):
        raise ConfigError(f"{here}: key 'approver_roles' must be a non-empty list of role names")
    return ApprovalRule(
        replace(rule, effect=REQUIRE), Requirement(approvals, tuple(r.strip() for r in roles))
    )


def create(settings: Mapping[str, Any], base_dir: Path) -> ApprovalRules:
    """The plugin for ``[plugins.approval_rules]`` (its ``rule`` array); ``base_dir`` is unused."""
    if not isinstance(settings, Mapping):
        raise ConfigError(f"{SECTION} must be a table with an array of tables 'rule'")
    refuse_unknown_keys("[plugins.approval_rules]", settings, {"rule"})
    tables = settings.get("rule", [])
    if not isinstance(tables, list):
        raise ConfigError(f"{SECTION}: 'rule' must be an array of tables ([[...rule]])")
    return ApprovalRules(parse_rule(n, t) for n, t in enumerate(tables, start=1))
