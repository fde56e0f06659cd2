"""What let a call through the approval step, as its handler may cite it.

A change skill records who changed what, and on whose authority: the audit
trail of a network change names the approval that allowed it.  The approval
step (:mod:`skillrack.serve.execution.approval_gate`) knows it; the handler
reads it as ``context.approval``: an :class:`Approved`, or ``None`` when the
call needed nobody's approval (an ``observe_only`` call, a dry run).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

#: ``operator``: people granted the stored approval (``skillrack approvals grant``, the
#: console); ``policy``: an approver plugin (``approve_invocation``) allowed the call.
ApprovedVia = Literal["operator", "policy"]


@dataclass(frozen=True)
class Approved:
    """How the call came to run past the approval step."""

    via: ApprovedVia
    #: Who approved: the granting operators' identities, or the approver plugins' names.
    approvers: tuple[str, ...]
    #: The stored approval's id (``skillrack approvals show <id>``); ``None`` for a policy.
    approval_id: str | None = None
    #: When the approval was decided (RFC 3339), for a stored approval.
    decided_at: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The JSON a handler puts in its records: ``via``, ``approvers``, and the id and time."""
        out: dict[str, Any] = {"via": self.via, "approvers": list(self.approvers)}
        if self.approval_id is not None:
            out["approval_id"] = self.approval_id
        if self.decided_at is not None:
            out["decided_at"] = self.decided_at
        return out
