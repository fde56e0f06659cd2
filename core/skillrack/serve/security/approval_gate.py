"""The approval step: after authorization allowed a call, before its handler runs.

A call needs approval when its skill's authority is ``execute`` or, for a
multi-operation skill, when the chosen operation is declared
``may_require_approval``.  Approvers are asked first (the
``approve_invocation`` hook, reduced like authorization: any refusal
refuses, an approval approves, no opinion leaves it open); an open call is
written to the :class:`~skillrack.serve.security.approvals.ApprovalStore` and
waits for an operator (``skillrack approvals grant|deny``).  The step runs on
every turn of the task, so a decision made while the task waited is seen,
and nothing is cached across tasks: an approval is bound to one task.
"""

from __future__ import annotations

import pluggy

from skillrack.errors import ConditionError, ErrorCode
from skillrack.host.registry import RegisteredSkill
from skillrack.serve.invocation import Invocation
from skillrack.serve.security.approvals import DENIED, GRANTED, Approval, ApprovalStore
from skillrack.serve.security.authz import authorize


def needs_approval(skill: RegisteredSkill, operation: str | None) -> bool:
    """Execute-mode skills, or the operations of a multi-operation skill declared so."""
    declared = skill.skill
    if declared.operations:
        chosen = next((op for op in declared.operations if op.name == operation), None)
        return chosen is not None and chosen.may_require_approval
    return declared.authority.default_mode == "execute"


async def seek_approval(
    manager: pluggy.PluginManager,
    store: ApprovalStore | None,
    invocation: Invocation,
    task_id: str,
) -> Approval | None:
    """``None`` when the call may go on; the pending :class:`Approval` when it must wait.

    A refusal (by an approver or an operator) raises ``authorization_failed``;
    so does a call that needs an operator on an agent without an approval
    store.
    """
    if not needs_approval(invocation.skill, invocation.operation):
        return None
    verdict = await authorize(manager, invocation.request, hook="approve_invocation")
    if verdict.denied:
        raise ConditionError(ErrorCode.AUTHORIZATION_FAILED, "the invocation was not approved")
    if verdict.allowed:
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
        return None
    if approval.state == DENIED:
        raise ConditionError(ErrorCode.AUTHORIZATION_FAILED, "the invocation was not approved")
    return approval
