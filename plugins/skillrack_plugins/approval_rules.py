"""Declarative approval rules: approve or refuse, without an operator, the calls that need one.

A call needs approval when its skill's authority is ``execute`` or its
operation is declared ``may_require_approval``; without an approver it waits
in ``TASK_STATE_INPUT_REQUIRED`` until an operator runs ``skillrack approvals
grant|deny`` (:mod:`skillrack.serve.security.approval_gate`).  Many of those
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
:func:`skillrack_plugins.policy_file.normalize_resource`).  A rule matches
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
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

from skillrack import AuthorizationRequest, ConfigError, Decision, hookimpl
from skillrack_plugins.policy_file import ResourcePatterns, resource_values

NAME = "approval-rules"
SECTION = "[plugins.approval_rules]"

_EFFECTS = ("approve", "refuse")
_PATTERN_KEYS = ("skills", "operations", "identities", "roles", "tenants", "resources")
_RULE_KEYS = frozenset({"effect", "authenticated", "case_sensitive", "description", *_PATTERN_KEYS})


@dataclass(frozen=True)
class ApprovalRule:
    """One ``[[plugins.approval_rules.rule]]``; ``None`` for a condition it does not state."""

    number: int
    effect: str
    skills: tuple[str, ...]
    operations: tuple[str, ...] | None = None
    identities: tuple[str, ...] | None = None
    roles: tuple[str, ...] | None = None
    tenants: tuple[str, ...] | None = None
    resources: ResourcePatterns | None = None
    authenticated: bool = True
    description: str = ""

    @property
    def label(self) -> str:
        return f"approval rule {self.number}" + (
            f" ({self.description})" if self.description else ""
        )

    def matches(self, request: AuthorizationRequest) -> bool:
        caller = request.caller
        if self.authenticated and not caller.authenticated:
            return False
        if not _matches([request.skill_id], self.skills):
            return False
        if self.identities is not None and not _matches([caller.identity], self.identities):
            return False
        if self.tenants is not None and not _matches([caller.tenant], self.tenants):
            return False
        if self.roles is not None and not _matches(_roles_of(caller.attributes), self.roles):
            return False
        if self.operations is not None and (
            request.operation is None or not _matches([request.operation], self.operations)
        ):
            return False
        return self.resources is None or self._resources_match(request.resources, self.resources)

    def _resources_match(self, resources: Mapping[str, Any], patterns: ResourcePatterns) -> bool:
        values = resource_values(resources)
        if not values:
            return False
        fits = [patterns.match(v) for v in values]
        return any(fits) if self.effect == "refuse" else all(fits)


def _matches(values: Iterable[str], patterns: tuple[str, ...]) -> bool:
    return any(fnmatchcase(v, p) for v in values for p in patterns)


def _roles_of(attributes: Mapping[str, Any]) -> list[str]:
    roles = attributes.get("roles")
    if isinstance(roles, list | tuple | set | frozenset):
        return [r for r in roles if isinstance(r, str)]
    return []


class ApprovalRules:
    """The plugin: the rules, asked for every call that needs approval."""

    def __init__(self, rules: Iterable[ApprovalRule]) -> None:
        self.rules = tuple(rules)

    @hookimpl
    def approve_invocation(self, request: AuthorizationRequest) -> Decision | None:
        approved: ApprovalRule | None = None
        for rule in self.rules:
            if not rule.matches(request):
                continue
            if rule.effect == "refuse":
                return Decision.deny(f"refused by {rule.label}")
            approved = approved or rule
        if approved is not None:
            return Decision.allow(f"approved by {approved.label}")
        return None  # left to an operator


def parse_rule(number: int, table: Any) -> ApprovalRule:
    """One rule, or a :class:`ConfigError` naming the rule and the key."""
    here = f"{SECTION}: rule {number}"
    if not isinstance(table, Mapping):
        raise ConfigError(f"{here} must be a table ([[plugins.approval_rules.rule]])")
    unknown = sorted(set(table) - _RULE_KEYS)
    if unknown:
        raise ConfigError(
            f"{here}: unknown key '{unknown[0]}' (known: {', '.join(sorted(_RULE_KEYS))})"
        )
    effect = table.get("effect")
    if effect not in _EFFECTS:
        shown = "missing" if effect is None else repr(effect)
        raise ConfigError(f'{here}: key \'effect\' must be "approve" or "refuse" (got {shown})')
    if "skills" not in table:
        raise ConfigError(f"{here}: key 'skills' is required (a non-empty list of patterns)")
    lists: dict[str, tuple[str, ...]] = {}
    for key in _PATTERN_KEYS:
        if key in table:
            value = table[key]
            if (
                not isinstance(value, list)
                or not value
                or not all(isinstance(v, str) for v in value)
            ):
                raise ConfigError(f"{here}: key '{key}' must be a non-empty list of strings")
            lists[key] = tuple(value)
    authenticated = table.get("authenticated", True)
    if not isinstance(authenticated, bool):
        raise ConfigError(f"{here}: key 'authenticated' must be true or false")
    case_sensitive = table.get("case_sensitive", False)
    if not isinstance(case_sensitive, bool):
        raise ConfigError(f"{here}: key 'case_sensitive' must be true or false")
    description = table.get("description", "")
    if not isinstance(description, str):
        raise ConfigError(f"{here}: key 'description' must be a string")
    resources = lists.get("resources")
    return ApprovalRule(
        number=number,
        effect=effect,
        skills=lists["skills"],
        operations=lists.get("operations"),
        identities=lists.get("identities"),
        roles=lists.get("roles"),
        tenants=lists.get("tenants"),
        resources=None if resources is None else ResourcePatterns(resources, case_sensitive),
        authenticated=authenticated,
        description=description.strip().replace("\n", " "),
    )


def create(settings: Mapping[str, Any], base_dir: Path) -> ApprovalRules:
    """The plugin for ``[plugins.approval_rules]`` (its ``rule`` array); ``base_dir`` is unused."""
    if not isinstance(settings, Mapping):
        raise ConfigError(f"{SECTION} must be a table with an array of tables 'rule'")
    unknown = sorted(set(settings) - {"rule"})
    if unknown:
        raise ConfigError(f"{SECTION}: unknown setting '{unknown[0]}' (known: rule)")
    tables = settings.get("rule", [])
    if not isinstance(tables, list):
        raise ConfigError(f"{SECTION}: 'rule' must be an array of tables ([[...rule]])")
    return ApprovalRules(parse_rule(n, t) for n, t in enumerate(tables, start=1))
