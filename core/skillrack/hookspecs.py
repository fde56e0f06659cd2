"""The hooks a skillrack plugin can implement.

Plugins implement them with ``@skillrack.hookimpl`` and are found through the
``skillrack`` entry-point group.  Hooks are named by role, as in datasette and
llm: ``register_*`` hooks hand the plugin a callback so that the host checks
every registration in one place and knows which plugin made it.

Evolving a hook means adding arguments, never changing them: pluggy passes an
implementation only the arguments it names, so old plugins keep working.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    from skillrack.interface.declare import BaseSkill, Skill
    from skillrack.serve.security.authn import RequestCredentials
    from skillrack.serve.security.authz import AuthorizationRequest, Decision
    from skillrack.serve.security.caller import Caller

PROJECT = "skillrack"

hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


@hookspec
def register_skills(register: Callable[[Skill | BaseSkill], None]) -> None:
    """Declare this plugin's skills by calling ``register(Skill(...))`` once per skill.

    ``register(BaseSkill(...))`` declares a base-A2A skill beside them: no
    Skill Interface Document, its handler reads the caller's Message (see
    :class:`~skillrack.interface.declare.BaseSkill`).

    The host attributes every skill to the plugin whose implementation called
    ``register``, assembles and validates its Skill Interface Document, and
    refuses (and reports) a skill that breaks a rule while still loading the
    plugin's other skills.  Two plugins registering the same skill id stop
    start-up: a skill id is the agent's public name.  Return value is ignored.
    """


@hookspec
def authorize_invocation(request: AuthorizationRequest) -> Decision | None:
    """Give an opinion on one invocation: ``Decision.allow()``, ``Decision.deny()`` or ``None``.

    Called before every dispatch of a domain skill, every time (a decision is
    never cached).  ``request`` names the caller, the skill and its version,
    the operation (multi-operation skills), the resources and constraints
    taken from the arguments at the JSON Pointers the skill declares, and the
    skill's advertised authority.  The host combines every plugin's opinion
    with a veto rule: any deny wins, and without at least one allow the call
    is denied.  Implementations may be ``async``.  An implementation that
    raises counts as a deny.

    Each call is decided twice (:mod:`skillrack.serve.security.authz`): first
    with ``request.scope == "skill"`` (no operation, resources, constraints or
    arguments yet; before validation, so a caller refused the skill learns no
    field details), then with ``request.scope == "invocation"``.  At the skill
    scope, deny only what no call of the skill by this caller could pass;
    return ``None`` when the decision needs the details.
    """


@hookspec
def authenticate(request: RequestCredentials) -> Caller | None:
    """Turn a request into a caller, or refuse it.

    Return a :class:`~skillrack.serve.security.caller.Caller` (identity, tenant, attributes
    such as roles) for a credential this plugin owns and accepts; return
    ``None`` when the request carries no credential of this plugin's kind; raise
    :class:`~skillrack.serve.security.authn.AuthenticationFailed` when it carries one that
    cannot be accepted (unknown key, bad signature, expired).  Every plugin is
    asked; one refusal refuses the request.  May be ``async``.
    """


@hookspec
def security_schemes() -> dict[str, Any] | None:
    """A2A ``securitySchemes`` entries (JSON form) this plugin accepts, for the Agent Card.

    For example ``{"apiKey": {"apiKeySecurityScheme": {"location": "header",
    "name": "X-API-Key"}}}``.  Every scheme contributed is also listed as one
    alternative in the card's ``securityRequirements``.
    """


@hookspec
def www_authenticate() -> str | None:
    """The ``WWW-Authenticate`` challenge for this plugin's scheme (``'Bearer realm="a2a"'``)."""


@hookspec
def approve_invocation(request: AuthorizationRequest) -> Decision | None:
    """Approve, refuse, or ask people about an invocation, before it runs.

    Called, after authorization allowed the call, on every call of every
    skill, whatever its ``default_mode`` and authority (the draft's approval
    checks "in every mode").  Return ``Decision.allow()`` to approve,
    ``Decision.deny()`` to refuse (the task ends ``TASK_STATE_REJECTED``
    with ``authorization_failed``), ``Decision.require(n, roles)`` to make the
    call wait until ``n`` distinct people holding one of ``roles`` granted it
    (``skillrack approvals grant``, the console), or ``None`` to leave it
    open: an operator then decides when the skill's declarations say the
    call needs approval (the chosen operation's flag, for a skill that flags
    operations; else an ``execute`` authority), else the call goes on.  Any
    refusal wins; then the requirement asking for the most approvers; then
    an approval.  May be ``async``.
    """


@hookspec
def configure_plugin(settings: Mapping[str, Any], base_dir: Path) -> None:
    """Receive the operator's settings for this plugin, before ``register_skills`` is called.

    ``settings`` is the ``[plugins.<name>]`` table of the configuration file,
    where ``<name>`` is the plugin's entry-point name (``{}`` when the operator
    wrote none); ``base_dir`` is the directory relative paths in it resolve
    against (the configuration file's).  Check every key
    (``skillrack.refuse_unknown_keys``) and raise ``skillrack.ConfigError``
    naming the key and what to write: start-up stops with that one line.
    Called once per process, synchronously, with this plugin's own table only.
    The first-party plugins' names (``api_keys``, ``jwt``, ``mtls``, ``oidc``,
    ``policy``, ``approval_rules``) are reserved.  Return value is ignored.
    """
