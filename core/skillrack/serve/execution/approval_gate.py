"""The approval step: after authorization allowed a call, before its handler runs.

The draft: "In every mode, the agent MUST perform the runtime authorization
and approval checks", and it "MUST still authorize the selected operation and
enforce its applicable approval policy for every request".  So the step does
not depend on what the skill advertises (``default_mode``,
``approval_may_be_required``, operation flags): the deployment's approval
policy is consulted on every call of every skill, and two questions are asked:

* **Approvers** (the ``approve_invocation`` hook) are asked on every call,
  whatever the skill's mode (``observe_only``, ``recommend_only``,
  ``execute``) and authority.  Their opinions are reduced: any refusal
  refuses (``authorization_failed``, the task ends ``TASK_STATE_REJECTED``);
  else a requirement (``Decision.require``: N distinct approvers with named
  roles; several combine by :meth:`Decision.all_of`: the largest count,
  approvers holding a role every requirement accepts) makes the call wait for people; else an
  approval approves; no opinion leaves it open.
* **An operator** decides an open call only before a side effect
  (:func:`needs_approval`): for a multi-operation skill that flags
  operations, the chosen operation's ``may_require_approval`` (a read beside
  a flagged delete does not wait); for any other skill, an ``execute``
  authority; and never a call the skill says changes nothing with these
  arguments (``Skill.changes_nothing``: a dry run).  An open
  ``observe_only`` or ``recommend_only`` call goes on; a deployment that
  wants people to approve one says so with a rule
  (:mod:`skillrack_plugins.approval_rules`, ``effect = "require"``).

A call that waits is written to the approvals store
(:mod:`skillrack.serve.security.approvals`: separation of duties, N
approvers, reasons, expiry and the per-caller cap are enforced there) and
parks until it is decided (``skillrack approvals grant|deny``, the console).

The step runs on every turn of the task, so a decision made while the task
waited is seen, and nothing is cached across tasks: an approval is bound to
one task.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable, Sequence
from typing import Any

import pluggy

from skillrack.errors import ConditionError, ErrorCode
from skillrack.host.registry import RegisteredBaseSkill, RegisteredSkill
from skillrack.interface.declare import Operation
from skillrack.serve.execution.invocation import Invocation
from skillrack.serve.security.approvals import (
    APPROVER_ROLE,
    DENIED,
    EXPIRED,
    GRANTED,
    PENDING,
    Approval,
    Approvals,
    TooManyPending,
)
from skillrack.serve.security.approved import Approved
from skillrack.serve.security.authz import Decision, authorize
from skillrack.serve.security.caller import auth_scheme

logger = logging.getLogger(__name__)
#: The audit log (as the executor's): who approved or refused a call, why and when.
audit = logging.getLogger("skillrack.audit")


def _operations(skill: RegisteredSkill | RegisteredBaseSkill) -> Sequence[Operation]:
    """A skill's declared operations; a base-A2A skill has none."""
    return skill.skill.operations if isinstance(skill, RegisteredSkill) else ()


def needs_approval(
    skill: RegisteredSkill | RegisteredBaseSkill, operation: str | None, arguments: Any = None
) -> bool:
    """Whether a call no approver decided waits for an operator: before a side effect.

    A multi-operation skill that flags operations says precisely which ones
    need approval; any other skill needs it when its authority is ``execute``.
    A call its skill's ``changes_nothing(arguments)`` says changes nothing
    never does.
    """
    if _changes_nothing(skill, arguments):
        return False
    if any(op.may_require_approval for op in _operations(skill)):
        return _flagged(skill, operation)
    return skill.skill.authority.default_mode == "execute"


def _changes_nothing(skill: RegisteredSkill | RegisteredBaseSkill, arguments: Any) -> bool:
    """The skill's own word that this call changes nothing; a predicate that fails says no."""
    if not isinstance(skill, RegisteredSkill) or skill.skill.changes_nothing is None:
        return False
    try:
        return skill.skill.changes_nothing(arguments) is True
    except Exception as exc:  # a plugin's bug must not skip an approval
        logger.error(
            "skill %s (plugin %s): changes_nothing raised %s; the call is treated as a change",
            skill.skill_id,
            skill.plugin,
            type(exc).__name__,
        )
        return False


def _flagged(skill: RegisteredSkill | RegisteredBaseSkill, operation: str | None) -> bool:
    chosen = next((op for op in _operations(skill) if op.name == operation), None)
    return chosen is not None and chosen.may_require_approval


async def seek_approval(
    manager: pluggy.PluginManager,
    store: Approvals | None,
    invocation: Invocation,
    task_id: str,
    observe: Callable[[str, str, str | None], None] | None = None,
) -> Approval | Approved | None:
    """The pending :class:`Approval` when the call must wait; else what let it through.

    :class:`Approved` when an approver plugin or a stored approval's
    operators approved it (the handler reads it as ``context.approval``);
    ``None`` when the call needed nobody's approval.

    A refusal (by an approver or an operator) or an expired approval raises
    ``authorization_failed``; so does a call that needs people on an agent
    without an approval store.  A caller with too many approvals waiting is
    refused ``resource_limit_exceeded``.  ``observe(skill, outcome,
    requested_at)`` is told each outcome that concerns an approval
    (``waiting``, ``granted``, ``denied``) for the agent's metrics;
    ``requested_at`` (ISO 8601) when a waited call was granted.
    """
    note = observe or _ignore
    skill_id = invocation.skill.skill_id
    verdict = await authorize(manager, invocation.request, hook="approve_invocation")
    opinions = [d for _, d in verdict.opinions if d is not None]
    if any(not d.allowed and not d.requires_people for d in opinions):
        note(skill_id, "denied", None)
        raise ConditionError(ErrorCode.AUTHORIZATION_FAILED, "the invocation was not approved")
    requirement = Decision.all_of(d for d in opinions if d.requires_people)
    if requirement is not None and not requirement.requires_people:
        logger.warning("%s: %s", skill_id, requirement.reason)
        note(skill_id, "denied", None)
        raise ConditionError(ErrorCode.AUTHORIZATION_FAILED, "the invocation was not approved")
    if requirement is None and any(d.allowed for d in opinions):
        note(skill_id, "granted", None)
        allowed_by = tuple(name for name, d in verdict.opinions if d is not None and d.allowed)
        return Approved("policy", allowed_by)
    if requirement is None:
        if not needs_approval(invocation.skill, invocation.operation, invocation.arguments):
            return None
        requirement = Decision.require(1, (APPROVER_ROLE,))
    request = invocation.request
    if store is None:
        raise ConditionError(
            ErrorCode.AUTHORIZATION_FAILED,
            f"{request.skill_id!r} requires an approval and this agent has no approval store",
        )
    asked_at = dt.datetime.now(dt.UTC) - dt.timedelta(milliseconds=2)  # created_at is cut to ms
    try:
        approval = await store.arequest(
            task_id=task_id,
            skill_id=request.skill_id,
            skill_version=request.skill_version,
            operation=request.operation,
            caller=request.caller.identity,
            tenant=request.caller.tenant,
            resources=dict(request.resources),
            required=requirement.approvals_required,
            approver_roles=requirement.approver_roles,
            caller_scheme=auth_scheme(request.caller),
        )
    except TooManyPending as exc:
        raise ConditionError(ErrorCode.RESOURCE_LIMIT_EXCEEDED, str(exc)) from None
    if approval.state != PENDING:
        _audit(task_id, approval)
    if approval.state == GRANTED:
        note(skill_id, "granted", approval.created_at)
        granted_by = tuple(
            str(d.get("identity") or d.get("by"))
            for d in approval.decisions
            if d.get("decision") == "grant"
        )
        return Approved("operator", granted_by, approval.id, approval.decided_at)
    if approval.state == DENIED:
        note(skill_id, "denied", None)
        raise ConditionError(ErrorCode.AUTHORIZATION_FAILED, "the invocation was not approved")
    if approval.state == EXPIRED:
        note(skill_id, "denied", None)
        raise ConditionError(
            ErrorCode.AUTHORIZATION_FAILED,
            f"approval {approval.id} expired at {approval.expires_at} before it was decided "
            "([server] approval_ttl); call the skill again to ask anew",
        )
    if _created_since(approval, asked_at):  # an approval that starts waiting, not a poll of it
        note(skill_id, "waiting", None)
    return approval


def _created_since(approval: Approval, moment: dt.datetime) -> bool:
    """Whether ``approval`` was created at or after ``moment`` (this request created it).

    Each look at a waiting task (a caller's follow-up, ``call`` polling its
    approval) asks again and gets the same pending approval back; counting
    those would make ``skillrack_approvals_total{outcome="waiting"}`` a count
    of polls instead of approvals.
    """
    try:
        created = dt.datetime.fromisoformat(approval.created_at)
    except ValueError:
        return True
    if created.tzinfo is None:
        created = created.replace(tzinfo=dt.UTC)
    return created >= moment


def _audit(task_id: str, approval: Approval) -> None:
    """One audit line naming every approver, their decision, reason and time."""
    decisions = "; ".join(
        f"{d.get('decision')} by {d.get('by')} at {d.get('at')}: {d.get('reason')!r}"
        for d in approval.decisions
    )
    audit.info(
        "task %s of %s: approval %s %s (%d of %d required granted): %s",
        task_id,
        approval.skill_id,
        approval.id,
        approval.state,
        approval.grants,
        approval.required,
        decisions or f"no decision before {approval.expires_at}",
        extra={"task_id": task_id, "skill": approval.skill_id, "code": None},
    )


def _ignore(skill_id: str, outcome: str, requested_at: str | None) -> None:
    return
