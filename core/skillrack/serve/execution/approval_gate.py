"""The approval step: after authorization allowed a call, before its handler runs.

The draft: "In every mode, the agent MUST perform the runtime authorization
and approval checks", and it "MUST still authorize the selected operation and
enforce its applicable approval policy for every request".  So the step does
not depend on the advertised ``default_mode``; two questions are asked:

* **Approvers** (the ``approve_invocation`` hook) are asked on every call of a
  skill to which approval may apply (:func:`approval_applies`): its document
  says ``approval_may_be_required``, or its authority is ``execute``, or the
  chosen operation is declared ``may_require_approval``; whatever the mode
  (``observe_only``, ``recommend_only``, ``execute``).  Their opinions are
  reduced like authorization: any refusal refuses (``authorization_failed``,
  the task ends ``TASK_STATE_REJECTED``), an approval approves, no opinion
  leaves it open.
* **An operator** decides an open call only before a side effect
  (:func:`needs_approval`): for a multi-operation skill that flags
  operations, the chosen operation's ``may_require_approval`` (a read beside
  a flagged delete does not wait); for any other skill, an ``execute``
  authority.  ``approval_may_be_required`` alone says an approval requirement
  *may* apply; the draft leaves it to deployment policy, and skillrack's
  default policy asks a person only before a side effect, so an
  ``observe_only`` or ``recommend_only`` call that no approver refused goes
  on.  The call is written to the
  :class:`~skillrack.serve.security.approvals.ApprovalStore` and waits
  (``skillrack approvals grant|deny``).

The step runs on every turn of the task, so a decision made while the task
waited is seen, and nothing is cached across tasks: an approval is bound to
one task.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pluggy

from skillrack.errors import ConditionError, ErrorCode
from skillrack.host.registry import RegisteredBaseSkill, RegisteredSkill
from skillrack.interface.declare import Operation
from skillrack.serve.execution.invocation import Invocation
from skillrack.serve.security.approvals import DENIED, GRANTED, Approval, Approvals
from skillrack.serve.security.authz import authorize


def _operations(skill: RegisteredSkill | RegisteredBaseSkill) -> Sequence[Operation]:
    """A skill's declared operations; a base-A2A skill has none."""
    return skill.skill.operations if isinstance(skill, RegisteredSkill) else ()


def approval_applies(skill: RegisteredSkill | RegisteredBaseSkill, operation: str | None) -> bool:
    """Whether approvers are asked: approval may apply to this call, whatever the mode."""
    declared = skill.skill
    authority = declared.authority
    return (
        authority.approval_may_be_required
        or authority.default_mode == "execute"
        or _flagged(skill, operation)
    )


def needs_approval(skill: RegisteredSkill | RegisteredBaseSkill, operation: str | None) -> bool:
    """Whether a call no approver decided waits for an operator: before a side effect.

    A multi-operation skill that flags operations says precisely which ones
    need approval; any other skill needs it when its authority is ``execute``.
    """
    if any(op.may_require_approval for op in _operations(skill)):
        return _flagged(skill, operation)
    return skill.skill.authority.default_mode == "execute"


def _flagged(skill: RegisteredSkill | RegisteredBaseSkill, operation: str | None) -> bool:
    chosen = next((op for op in _operations(skill) if op.name == operation), None)
    return chosen is not None and chosen.may_require_approval


async def seek_approval(
    manager: pluggy.PluginManager,
    store: Approvals | None,
    invocation: Invocation,
    task_id: str,
    observe: Callable[[str, str, str | None], None] | None = None,
) -> Approval | None:
    """``None`` when the call may go on; the pending :class:`Approval` when it must wait.

    A refusal (by an approver or an operator) raises ``authorization_failed``;
    so does a call that needs an operator on an agent without an approval
    store.  ``observe(skill, outcome, requested_at)`` is told each outcome
    that concerns an approval (``waiting``, ``granted``, ``denied``) for the
    agent's metrics; ``requested_at`` (ISO 8601) when a waited call was granted.
    """
    note = observe or _ignore
    skill_id = invocation.skill.skill_id
    if not approval_applies(invocation.skill, invocation.operation):
        return None
    verdict = await authorize(manager, invocation.request, hook="approve_invocation")
    if verdict.denied:
        note(skill_id, "denied", None)
        raise ConditionError(ErrorCode.AUTHORIZATION_FAILED, "the invocation was not approved")
    if verdict.allowed:
        note(skill_id, "granted", None)
        return None
    if not needs_approval(invocation.skill, invocation.operation):
        return None
    request = invocation.request
    if store is None:
        raise ConditionError(
            ErrorCode.AUTHORIZATION_FAILED,
            f"{request.skill_id!r} requires an approval and this agent has no approval store",
        )
    approval = await store.arequest(
        task_id=task_id,
        skill_id=request.skill_id,
        skill_version=request.skill_version,
        operation=request.operation,
        caller=request.caller.identity,
        tenant=request.caller.tenant,
        resources=dict(request.resources),
    )
    if approval.state == GRANTED:
        note(skill_id, "granted", approval.created_at)
        return None
    if approval.state == DENIED:
        note(skill_id, "denied", None)
        raise ConditionError(ErrorCode.AUTHORIZATION_FAILED, "the invocation was not approved")
    note(skill_id, "waiting", None)
    return approval


def _ignore(skill_id: str, outcome: str, requested_at: str | None) -> None:
    return
