"""The rule both declarative plugins share: conditions on a call, read from TOML, matched.

The policy file (``allow``/``deny``) and the approval rules (``approve``/``refuse``)
state the same conditions with the same keys and must match them the same
way: a difference between the two would let an operator write one rule that
means two things.  So the parsing, the matching and the resource normal form
live here once; each plugin names its two effects and which of them is the
*blocking* one.  For ``resources`` a blocking rule matches when one value
matches (adding an unprotected resource cannot slip past it); the other rule
needs every value to match.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import Any

from skillrack import AuthorizationRequest, ConfigError, refuse_unknown_keys

PATTERN_KEYS = ("identities", "roles", "tenants", "skills", "operations", "resources")
RULE_KEYS = frozenset({"effect", "authenticated", "case_sensitive", "description", *PATTERN_KEYS})


@dataclass(frozen=True)
class Effects:
    """The two effects one plugin's rules may have; ``blocking`` is the one that stops a call."""

    permitting: str
    blocking: str


def normalize_resource(value: str, *, case_sensitive: bool = False) -> str:
    """The form resource values and patterns are compared in.

    NFKC rather than NFC: NFC leaves full-width and other compatibility
    letters as they are, and those are exactly the spellings that slip past
    a deny rule written in ASCII.  Format characters (zero-width joiners and
    the like) are removed and surrounding whitespace stripped for the same
    reason.
    """
    text = unicodedata.normalize("NFKC", value)
    if any(unicodedata.category(c) == "Cf" for c in text):
        text = "".join(c for c in text if unicodedata.category(c) != "Cf")
    text = text.strip()
    return text if case_sensitive else text.casefold()


@dataclass(frozen=True)
class ResourcePatterns:
    """A rule's ``resources`` patterns, as written and in the normal form."""

    written: tuple[str, ...]
    case_sensitive: bool = False
    normal: tuple[str, ...] = field(init=False)

    def __post_init__(self) -> None:
        normal = tuple(
            normalize_resource(p, case_sensitive=self.case_sensitive) for p in self.written
        )
        object.__setattr__(self, "normal", normal)

    def match(self, value: Any) -> bool:
        """Whether ``value`` (a string) matches a pattern as written or in the normal form.

        Either form matching is a match, so normalizing can only widen a rule.
        """
        if not isinstance(value, str):
            return False
        if _any_match([value], self.written):
            return True
        folded = normalize_resource(value, case_sensitive=self.case_sensitive)
        return _any_match([folded], self.normal)


def resource_values(resources: Mapping[str, Any]) -> list[Any]:
    """The values a rule's ``resources`` are compared to: lists are checked element by element."""
    values: list[Any] = []
    for value in resources.values():
        values.extend(value if isinstance(value, list | tuple) else [value])
    return values


@dataclass(frozen=True)
class Rule:
    """One rule; ``None`` for a condition it does not state."""

    number: int
    effect: str
    blocking: bool
    skills: tuple[str, ...]
    identities: tuple[str, ...] | None = None
    roles: tuple[str, ...] | None = None
    tenants: tuple[str, ...] | None = None
    operations: tuple[str, ...] | None = None
    resources: ResourcePatterns | None = None
    authenticated: bool = True
    description: str = ""
    #: How the rule is named in reasons and logs ("rule", "approval rule").
    kind: str = "rule"

    @property
    def label(self) -> str:
        return f"{self.kind} {self.number}" + (f" ({self.description})" if self.description else "")

    @property
    def needs_details(self) -> bool:
        """Whether the rule states conditions on the call's operation or resources."""
        return self.operations is not None or self.resources is not None

    def could_match(self, request: AuthorizationRequest) -> bool:
        """Whether the rule matches this caller and skill for some operation and resources.

        Only the conditions on the caller and the skill are checked; a rule
        that states no others (``needs_details`` false) matches exactly then.
        """
        caller = request.caller
        if self.authenticated and not caller.authenticated:
            return False
        if not _any_match([request.skill_id], self.skills):
            return False
        if self.identities is not None and not _any_match([caller.identity], self.identities):
            return False
        if self.tenants is not None and not _any_match([caller.tenant], self.tenants):
            return False
        return self.roles is None or _any_match(_roles_of(caller.attributes), self.roles)

    def matches(self, request: AuthorizationRequest) -> bool:
        if not self.could_match(request):
            return False
        if self.operations is not None and (
            request.operation is None or not _any_match([request.operation], self.operations)
        ):
            return False
        return self.resources is None or self._resources_match(request.resources, self.resources)

    def _resources_match(self, resources: Mapping[str, Any], patterns: ResourcePatterns) -> bool:
        values = resource_values(resources)
        if not values:
            return False
        fits = (patterns.match(v) for v in values)
        return any(fits) if self.blocking else all(fits)


def parse_rule(number: int, table: Any, here: str, effects: Effects, *, kind: str) -> Rule:
    """One rule from its TOML table, or a one-line :class:`ConfigError` naming rule and key."""
    if not isinstance(table, Mapping):
        raise ConfigError(f"{here} must be a table")
    refuse_unknown_keys(here, table, RULE_KEYS)
    effect = table.get("effect")
    if effect not in (effects.permitting, effects.blocking):
        shown = "missing" if effect is None else repr(effect)
        raise ConfigError(
            f'{here}: key \'effect\' must be "{effects.permitting}" or "{effects.blocking}" '
            f"(got {shown})"
        )
    if "skills" not in table:
        raise ConfigError(f"{here}: key 'skills' is required (a non-empty list of patterns)")
    lists: dict[str, tuple[str, ...]] = {}
    for key in PATTERN_KEYS:
        if key not in table:
            continue
        value = table[key]
        if (
            not isinstance(value, list)
            or not value
            or not all(isinstance(item, str) for item in value)
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
    return Rule(
        number=number,
        effect=effect,
        blocking=effect == effects.blocking,
        skills=lists["skills"],
        identities=lists.get("identities"),
        roles=lists.get("roles"),
        tenants=lists.get("tenants"),
        operations=lists.get("operations"),
        resources=None if resources is None else ResourcePatterns(resources, case_sensitive),
        authenticated=authenticated,
        description=description.strip().replace("\n", " "),
        kind=kind,
    )


def _any_match(values: Iterable[str], patterns: tuple[str, ...]) -> bool:
    return any(fnmatchcase(v, p) for v in values for p in patterns)


def _roles_of(attributes: Mapping[str, Any]) -> list[str]:
    roles = attributes.get("roles")
    if isinstance(roles, list | tuple | set | frozenset):
        return [r for r in roles if isinstance(r, str)]
    return []
