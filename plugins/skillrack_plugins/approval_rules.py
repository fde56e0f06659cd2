"""Declarative approval rules: approve or refuse, without an operator, the calls that need one.

Approvers are asked on every call of a skill whose document says
``approval_may_be_required``, whose authority is ``execute``, or whose chosen
operation is declared ``may_require_approval``, whatever the mode; when no
approver decides, a call its declarations say needs approval waits in
``TASK_STATE_INPUT_REQUIRED`` until an operator runs ``skillrack approvals
grant|deny`` (:mod:`skillrack.serve.execution.approval_gate`).  Many of those
calls are routine (a read-only operation of an execute skill, a lab device,
a service account trusted for one operation) and an operator's decision adds
only latency.  This plugin implements ``approve_invocation`` from rules in
the agent's configuration::

    [plugins.approval_rules]

    [[plugins.approval_rules.rule]]
    effect = "approve"                    # "approve" | "refuse"; required
    skills = ["manage"]                   # required
    operations = ["read"]                 # optional (multi-operation skills)
    identities = ["svc-*"]                # optional
    roles = ["operator"]                  # optional; the caller must have one of them
    tenants = ["acme"]                    # optional
    resources = ["lab-*"]                 # optional
    case_sensitive = false                # optional, default false (resources only)
    authenticated = true                  # optional, default true
    description = "reads need no operator"   # optional, logged

Every list holds :func:`fnmatch.fnmatchcase` patterns and must not be empty;
resource values are compared as written and in the policy file's normal form
(NFKC, format characters removed, whitespace stripped, case folded unless
``case_sensitive = true``;
:func:`skillrack_plugins.rules.normalize_resource`).  A rule matches
when every condition it states matches, as in the policy file: an operation
rule never matches a call without an operation, an unauthenticated caller matches
only ``authenticated = false`` rules, and for ``resources`` an approve rule
needs every resource value to match while one matching value is enough for a
refuse rule (adding an unprotected resource cannot slip past a refusal).

Decision: a matching refuse rule refuses (the task ends
``TASK_STATE_REJECTED`` with ``authorization_failed``); otherwise a matching
approve rule approves; otherwise the plugin has no opinion (``None``) and the
call waits for an operator, as it would without the plugin.  The host asks
approvers only after every authorization policy allowed the call, so a rule
here can never grant what a policy denies.  The rules are read at start-up; a
bad rule stops start-up with a one-line :class:`ConfigError`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from skillrack import AuthorizationRequest, ConfigError, Decision, hookimpl, refuse_unknown_keys
from skillrack_plugins.rules import Effects, Rule
from skillrack_plugins.rules import parse_rule as parse_rule_table

NAME = "approval-rules"
SECTION = "[plugins.approval_rules]"

_EFFECTS = Effects(permitting="approve", blocking="refuse")


class ApprovalRules:
    """The plugin: the rules, asked for every call that needs approval."""

    def __init__(self, rules: Iterable[Rule]) -> None:
        self.rules = tuple(rules)

    @hookimpl
    def approve_invocation(self, request: AuthorizationRequest) -> Decision | None:
        approved: Rule | None = None
        for rule in self.rules:
            if not rule.matches(request):
                continue
            if rule.blocking:
                return Decision.deny(f"refused by {rule.label}")
            approved = approved or rule
        if approved is not None:
            return Decision.allow(f"approved by {approved.label}")
        return None  # left to an operator


def parse_rule(number: int, table: Any) -> Rule:
    """One rule, or a :class:`ConfigError` naming the rule and the key."""
    here = f"{SECTION}: rule {number}"
    return parse_rule_table(number, table, here, _EFFECTS, kind="approval rule")


def create(settings: Mapping[str, Any], base_dir: Path) -> ApprovalRules:
    """The plugin for ``[plugins.approval_rules]`` (its ``rule`` array); ``base_dir`` is unused."""
    if not isinstance(settings, Mapping):
        raise ConfigError(f"{SECTION} must be a table with an array of tables 'rule'")
    refuse_unknown_keys("[plugins.approval_rules]", settings, {"rule"})
    tables = settings.get("rule", [])
    if not isinstance(tables, list):
        raise ConfigError(f"{SECTION}: 'rule' must be an array of tables ([[...rule]])")
    return ApprovalRules(parse_rule(n, t) for n, t in enumerate(tables, start=1))
