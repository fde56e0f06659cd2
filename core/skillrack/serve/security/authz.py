"""Runtime authorization: every policy's opinion, reduced with a veto rule, on every call.

The draft: "At invocation time, the receiving agent or hosting platform MUST
authenticate the caller and authorize the requested skill, resources,
operation, and applicable constraints under current local policy", and the
``authority`` member "MUST NOT be interpreted as a permission grant".

pluggy's ``firstresult`` is deliberately not used: it returns the opinion of
the last-registered plugin, so an allow from one plugin would silence a deny
from another, and with async implementations it stops at the first coroutine.
Instead every implementation is called (and awaited), and the host reduces:
any deny wins; no allow means deny.

Two decisions, in this order (the draft: "Diagnostic details MUST NOT
disclose ... information that the caller is not authorized to receive"):

1. **May this caller invoke this skill at all** (:func:`authorize_skill`),
   before the arguments are validated, so that a caller refused the skill
   learns ``authorization_failed`` and never, field by field, what its
   arguments must look like.  Policies get a request with ``scope ==
   "skill"``: no operation, resources, constraints or arguments yet.  A policy
   that needs those to decide must not deny it (return ``None``).  The host
   denies at this stage only when the answer cannot change with the details:
   every policy that gave an opinion denied, or nobody gave one and the skill
   declares no operations, resources or constraints (its full request would
   be the same).  Anything else goes on to validation.
2. **The call itself** (:func:`authorize`, ``scope == "invocation"``), after
   validation, on the operation, resources and constraints taken from the
   validated arguments, with the veto rule above.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import pluggy

from skillrack.host.hooks import call_each_async
from skillrack.interface.pointers import MISSING, find
from skillrack.serve.security.caller import Caller

logger = logging.getLogger(__name__)

#: ``AuthorizationRequest.scope`` of the first decision: the skill only, before validation.
SKILL_SCOPE: Final = "skill"
#: ``AuthorizationRequest.scope`` of the decision on the validated call.
INVOCATION_SCOPE: Final = "invocation"
#: ``AuthorizationRequest.kind`` of a schema-governed skill's call.
SCHEMA_KIND: Final = "schema"
#: ``AuthorizationRequest.kind`` of a base-A2A skill's call (no arguments, no version).
BASE_KIND: Final = "base"


@dataclass(frozen=True)
class Decision:
    """One policy's opinion.  ``reason`` is logged, never sent to the caller.

    An approver (``approve_invocation``) may also answer :meth:`require`: the
    call waits until ``approvals_required`` distinct people, each holding one
    of ``approver_roles``, granted it.  Anywhere else a requirement is not an
    allow, so it counts as a deny.
    """

    allowed: bool
    reason: str = ""
    #: :meth:`require` only: how many distinct approvers must grant the call.
    approvals_required: int = 0
    #: :meth:`require` only: the roles an approver must hold one of.
    approver_roles: tuple[str, ...] = ()

    @classmethod
    def allow(cls, reason: str = "") -> Decision:
        return cls(True, reason)

    @classmethod
    def deny(cls, reason: str = "") -> Decision:
        return cls(False, reason)

    @classmethod
    def require(
        cls, approvals: int = 1, roles: tuple[str, ...] = ("operator",), reason: str = ""
    ) -> Decision:
        """An approver's answer: people must approve (``approvals`` of them, with ``roles``)."""
        if approvals < 1 or not roles:
            raise ValueError("Decision.require needs approvals >= 1 and at least one role")
        return cls(False, reason, approvals_required=approvals, approver_roles=tuple(roles))

    @classmethod
    def all_of(cls, requirements: Iterable[Decision]) -> Decision | None:
        """Several :meth:`require` answers that all apply, as one; ``None`` for none.

        Change control asks every rule that applies to be met, so neither
        rule may be weakened by the other: the combined requirement asks for
        the **largest count** and accepts only approvers holding a role
        **every** rule accepts (the intersection of their ``approver_roles``,
        in the first rule's order).  Each rule then gets at least its count
        of approvers it accepts.  A union would let one rule's approvers
        satisfy another's (two network leads standing in for the security
        sign-off a second rule asks for), which change control never accepts.
        Rules whose roles have nothing in common cannot be met by anyone: the
        answer is then a refusal naming them (fail closed, at once, rather
        than a call parked until it expires), so the deployment gives them a
        common approver role.
        """
        asked = [d for d in requirements if d.requires_people]
        if not asked:
            return None
        roles = [r for r in asked[0].approver_roles if all(r in d.approver_roles for d in asked)]
        reasons = "; ".join(d.reason for d in asked if d.reason)
        if not roles:
            sets = " and ".join(repr(list(d.approver_roles)) for d in asked)
            return cls.deny(
                f"approval rules that all apply name approver roles with none in common "
                f"({sets}): give them a common role ({reasons})"
            )
        count = max(d.approvals_required for d in asked)
        return cls.require(count, tuple(roles), reasons)

    @property
    def requires_people(self) -> bool:
        """Whether this is :meth:`require`'s answer rather than a refusal."""
        return not self.allowed and self.approvals_required > 0

    def __repr__(self) -> str:
        """The fields a log line needs: the requirement only when it is one."""
        shown = f"allowed={self.allowed!r}, reason={self.reason!r}"
        if self.approvals_required:
            shown += (
                f", approvals_required={self.approvals_required!r}, "
                f"approver_roles={self.approver_roles!r}"
            )
        return f"Decision({shown})"


@dataclass(frozen=True)
class AuthorizationRequest:
    """What a policy decides on: who, which skill and version, what operation, on what."""

    caller: Caller
    skill_id: str
    skill_version: str
    plugin: str
    authority: Mapping[str, Any]
    operation: str | None = None
    resources: Mapping[str, Any] = field(default_factory=dict)
    constraints: Mapping[str, Any] = field(default_factory=dict)
    arguments: Any = None
    #: Which of the two decisions this is, not an OAuth scope (the scopes granted to
    #: the caller are in ``caller.schemes``): ``"skill"`` (may this caller invoke the
    #: skill at all; no details yet) or ``"invocation"`` (the validated call).
    scope: str = INVOCATION_SCOPE
    #: ``"schema"`` (a schema-governed skill) or ``"base"`` (a base-A2A skill: no
    #: ``skill_version``, ``arguments``, operation, resources or constraints).
    kind: str = SCHEMA_KIND


@dataclass(frozen=True)
class Verdict:
    """The combined decision, with each plugin's opinion for the log."""

    allowed: bool
    opinions: tuple[tuple[str, Decision | None], ...]
    #: At least one plugin said no (as opposed to nobody saying yes).
    denied: bool = False


def pick(arguments: Any, pointers: tuple[str, ...] | list[str]) -> dict[str, Any]:
    """``{pointer: value}`` for each pointer present in the arguments."""
    found = {p: find(arguments, p) for p in pointers}
    return {p: v for p, v in found.items() if v is not MISSING}


async def authorize(
    manager: pluggy.PluginManager,
    request: AuthorizationRequest,
    hook: str = "authorize_invocation",
) -> Verdict:
    """Ask every implementation of ``hook``, await each answer, and reduce with the veto rule.

    The opinions are listed in pluggy's call order (see :mod:`skillrack.host.hooks`).
    """
    opinions: list[tuple[str, Decision | None]] = []
    for answer in await call_each_async(manager, hook, {"request": request}):
        opinion = answer.result
        error = answer.error
        if error is None and opinion is not None and not isinstance(opinion, Decision):
            error = TypeError(f"returned {type(opinion).__name__}, not a Decision")
        if error is not None:
            logger.error(
                "authorization plugin %s failed on %s; counted as deny",
                answer.plugin,
                request.skill_id,
                exc_info=error,
            )
            opinion = Decision.deny("policy plugin failed")
        opinions.append((answer.plugin, opinion))
    decided = [d for _, d in opinions if d is not None]
    allowed = bool(decided) and all(d.allowed for d in decided)
    return Verdict(allowed, tuple(opinions), denied=any(not d.allowed for d in decided))


async def authorize_skill(
    manager: pluggy.PluginManager, request: AuthorizationRequest, *, has_details: bool
) -> Verdict:
    """The skill-level decision, before validation (see the module docstring).

    ``request`` has ``scope == "skill"``; ``has_details`` says whether the
    skill declares operations, resources or constraints that the later
    decision will see.  The verdict's ``allowed`` is False only when the call
    must be refused now: every opinion given was a deny, or no opinion was
    given and there are no details to wait for.
    """
    verdict = await authorize(manager, request)
    decided = [d for _, d in verdict.opinions if d is not None]
    refused = all(not d.allowed for d in decided) if decided else not has_details
    return Verdict(not refused, verdict.opinions, denied=verdict.denied)
