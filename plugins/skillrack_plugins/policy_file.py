"""A declarative authorization policy read from a TOML file.

Enabled in the agent's configuration with ``[plugins.policy]`` and
``file = "policy.toml"`` (relative to the configuration file's directory).
The file is a list of rules::

    # Rules are evaluated on every call; deny rules win over allow rules.
    [[rule]]
    effect = "allow"                      # "allow" | "deny"; required
    identities = ["alice", "svc-*"]       # optional
    roles = ["operator"]                  # optional; the caller must have one of them
    tenants = ["acme"]                    # optional
    skills = ["evaluate_resource_condition", "collect_*"]   # required
    operations = ["get_status"]           # optional (multi-operation skills)
    resources = ["core-router-*"]         # optional
    case_sensitive = false                # optional, default false (resources only)
    authenticated = true                  # optional, default true
    description = "..."                   # optional, for operators

Every list holds :func:`fnmatch.fnmatchcase` patterns and must not be empty;
identities, tenants, roles, skills and operations are compared exactly.  A
rule matches when every condition it states matches; an absent condition
matches anything:

* ``identities``, ``tenants``: the caller's identity / tenant matches a pattern.
* ``roles``: one of the caller's ``attributes["roles"]`` matches a pattern.
* ``skills``: the skill id matches a pattern.
* ``operations``: the request names an operation and it matches a pattern;
  a request without an operation never matches a rule that lists operations.
* ``authenticated``: when true (the default) an unauthenticated caller never
  matches; ``authenticated = false`` lets the rule match any caller.
* ``resources``: the resource values taken from the arguments (strings, or
  lists whose elements are checked one by one) are compared to the patterns.
  A request with no resource values never matches.  For an **allow** rule
  every value must be a string matching a pattern, and a value that cannot be
  checked (a number, an object, a nested list) makes the rule not match.  For
  a **deny** rule one matching value is enough: a caller cannot slip past a
  deny by adding an unprotected resource next to a protected one.

Resource values and ``resources`` patterns are compared in a normal form
(:func:`normalize_resource`), because a device name has many spellings that
reach the same device: Unicode NFKC (a full-width ``U+FF43`` is ``c``, a
composed and a decomposed ``é`` are one letter), invisible format characters
(zero-width space, soft hyphen: Unicode category Cf) removed, surrounding
whitespace stripped, and case folded unless the rule says ``case_sensitive =
true``.  A value matches a pattern when it matches as written **or** in the
normal form, so normalization only ever widens a rule: ``Core-Router-1``,
a full-width ``c`` or a leading space do not pass a deny rule written for
``core-router-*``, and nothing that matches a rule as written escapes it.

Decision: if any deny rule matches, the call is denied; otherwise if any allow
rule matches, it is allowed; otherwise this plugin has no opinion (``None``)
and the host denies unless another policy allows.  Reasons name the rule
(1-based number and description); they are logged, never sent to callers.

Before the arguments are validated the host asks once more, with
``request.scope == "skill"`` (the caller and the skill, no operation or
resources yet), so that a caller refused the skill learns no field details.
The file then denies when a deny rule without ``operations`` or
``resources`` matches, and when **no allow rule could match this caller and
skill whatever the operation and resources** (no rule names the skill for
this identity, tenant or role); it allows when an allow rule without
``operations`` or ``resources`` matches, and has no opinion otherwise (the
decision needs the resources).  The host refuses at that stage only when
every opinion given is a deny, so another policy that allows the caller the
skill still lets the call go on to validation and the full decision.

Reloading and failing closed: on every call the file's identity (inode, size,
``mtime_ns``, ``ctime_ns``) is checked and the file is re-read when it
changed, so an edit takes effect on the next call, without a restart.  A
problem at start-up (missing file, bad TOML, bad rule) stops start-up with a
:class:`~skillrack.host.config.ConfigError`.  A problem found on reload (the file
became invalid, unreadable or was removed) is logged as an error once and
**every call is denied** until the file is fixed; the previous policy is never
kept in service silently.
"""

from __future__ import annotations

import logging
import os
import threading
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from skillrack import AuthorizationRequest, ConfigError, Decision, hookimpl, refuse_unknown_keys
from skillrack_plugins.rules import Effects, Rule, normalize_resource, parse_rule

__all__ = ["PolicyFile", "Rule", "create", "normalize_resource", "parse_policy"]

NAME = "policy-file"

#: ``AuthorizationRequest.scope`` of the decision taken before validation (the
#: host's ``skillrack.serve.security.authz.SKILL_SCOPE``; plugins import only ``skillrack``).
SKILL_SCOPE = "skill"

logger = logging.getLogger(__name__)

_SETTINGS_KEYS = frozenset({"file"})
_EFFECTS = Effects(permitting="allow", blocking="deny")


def parse_policy(text: str, where: str) -> tuple[Rule, ...]:
    """The rules in ``text``; raises :class:`ConfigError` (one line) when it is not a policy."""
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{where} is not valid TOML: {exc}") from exc
    refuse_unknown_keys(where, raw, ("rule",))
    tables = raw.get("rule", [])
    if not isinstance(tables, list):
        raise ConfigError(f"{where}: key 'rule' must be an array of tables ([[rule]])")
    return tuple(
        parse_rule(n, t, f"{where}: rule {n}", _EFFECTS, kind="rule")
        for n, t in enumerate(tables, start=1)
    )


_FileKey = tuple[int, int, int, int]


def _key(st: os.stat_result) -> _FileKey:
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


class PolicyFile:
    """The plugin: holds the parsed rules and reloads them when the file changes."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._key: _FileKey | None = None
        self._rules: tuple[Rule, ...] = ()
        self._error: str | None = None
        self._load()  # at start-up a bad file raises ConfigError
        self._error = None

    def _load(self) -> None:
        """Read and parse the file; on success replace the rules, else raise ConfigError."""
        try:
            with open(self.path, "rb") as handle:
                key = _key(os.fstat(handle.fileno()))
                data = handle.read()
        except OSError as exc:
            self._key = None  # try again on the next call
            raise ConfigError(
                f"cannot read policy file {self.path}: {exc.strerror or exc}"
            ) from exc
        # Remember the version read even when it is invalid: it is reported once,
        # and the next change triggers another attempt.
        self._key = key
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ConfigError(f"policy file {self.path} is not UTF-8: {exc}") from exc
        self._rules = parse_policy(text, f"policy file {self.path}")

    def _refresh(self) -> str | None:
        """Reload when the file changed; the current error (fail closed) or None."""
        with self._lock:
            try:
                current: _FileKey | None = _key(os.stat(self.path))
            except OSError:
                current = None
            if current is not None and current == self._key:
                return self._error
            try:
                self._load()
            except ConfigError as exc:
                message = str(exc)
                if message != self._error:
                    logger.error("%s; denying every call until it is fixed", message)
                self._error = message
                self._rules = ()
            else:
                if self._error is not None:
                    logger.warning("policy file %s is valid again", self.path)
                logger.info("policy file %s loaded (%d rules)", self.path, len(self._rules))
                self._error = None
            return self._error

    @hookimpl
    def authorize_invocation(self, request: AuthorizationRequest) -> Decision | None:
        error = self._refresh()
        if error is not None:
            return Decision.deny(f"policy file invalid, failing closed: {error}")
        if request.scope == SKILL_SCOPE:
            return self._decide_skill(request)
        rules = self._rules
        allowed: Rule | None = None
        for rule in rules:
            if not rule.matches(request):
                continue
            if rule.blocking:
                return Decision.deny(f"denied by {rule.label} of {self.path}")
            if allowed is None:
                allowed = rule
        if allowed is not None:
            return Decision.allow(f"allowed by {allowed.label} of {self.path}")
        return None

    def _decide_skill(self, request: AuthorizationRequest) -> Decision | None:
        """May this caller invoke this skill at all (before its arguments are validated)?

        Deny when a deny rule that states no operation or resources matches
        (every call is denied), or when no allow rule could match this caller
        and skill whatever the operation and resources (no call is allowed by
        this file), so such a caller learns ``authorization_failed`` and no
        field details.  Allow when an allow rule without operation or resources
        matches; otherwise the answer needs the details: no opinion yet.
        """
        could_allow: list[Rule] = []
        for rule in self._rules:
            if not rule.could_match(request):
                continue
            if rule.blocking and not rule.needs_details:
                return Decision.deny(f"denied by {rule.label} of {self.path}")
            if not rule.blocking:
                could_allow.append(rule)
        if not could_allow:
            return Decision.deny(
                f"no rule of {self.path} allows {request.caller.identity!r} "
                f"to invoke {request.skill_id}"
            )
        exact = next((rule for rule in could_allow if not rule.needs_details), None)
        if exact is not None:
            return Decision.allow(f"allowed by {exact.label} of {self.path}")
        return None


def create(settings: Mapping[str, Any], base_dir: Path) -> PolicyFile:
    """The policy plugin for ``settings`` (``file``: the policy path, relative to ``base_dir``)."""
    if not isinstance(settings, Mapping):
        raise ConfigError("[plugins.policy] must be a table with setting 'file'")
    refuse_unknown_keys("[plugins.policy]", settings, _SETTINGS_KEYS)
    file = settings.get("file")
    if file is None:
        raise ConfigError("[plugins.policy]: setting 'file' is required (path of the TOML policy)")
    if not isinstance(file, str) or not file.strip():
        raise ConfigError("[plugins.policy]: setting 'file' must be a non-empty string")
    return PolicyFile(Path(base_dir) / file)
