"""What the client raises: one exception type carrying a code, local or remote.

The draft: "An error detected locally by a client before the remote agent
creates a task MUST NOT be represented as a state of a nonexistent remote
task."  So a local error has ``remote == False`` and no task id or state; a
remote error carries the remote task's own error object, its final state and
its id.  Codes are the draft's ten conditions, plus a few of the client's own
for failures that are not draft conditions (documented in :data:`CLIENT_CODES`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from skillrack.errors import ErrorCode, ErrorDetail, SkillrackError

#: The agent's card lacks the schema-interface extension or describe_skill: it
#: does not provide the procedure, and no schema-interface conformance is claimed.
NOT_SCHEMA_INTERFACE_AGENT = "not_schema_interface_agent"
#: The agent could not be reached, or the HTTP exchange failed.
TRANSPORT_ERROR = "transport_error"
#: The agent answered with an A2A/JSON-RPC protocol error (no task exists).
PROTOCOL_ERROR = "protocol_error"
#: Signing keys are pinned and the Agent Card has no signature that verifies with
#: one of them (unsigned, tampered with, or signed by another key): refused locally.
CARD_SIGNATURE_INVALID = "card_signature_invalid"
#: The remote task is waiting for input (not an error; returned, not raised).
INPUT_REQUIRED = "input_required"

CLIENT_CODES: Mapping[str, str] = {
    NOT_SCHEMA_INTERFACE_AGENT: "the agent does not advertise the schema-interface procedure",
    TRANSPORT_ERROR: "the agent could not be reached or the HTTP exchange failed",
    PROTOCOL_ERROR: "the agent answered with an A2A protocol error before any task existed",
    CARD_SIGNATURE_INVALID: "the Agent Card is not signed by a pinned key (nothing was sent)",
}


@dataclass
class SkillCallError(SkillrackError):
    """A failed client procedure.  ``remote`` tells whether a remote task reported it."""

    code: str
    message: str
    details: Sequence[Mapping[str, Any]] = field(default_factory=tuple)
    remote: bool = False
    task_id: str | None = None
    state: str | None = None

    def __post_init__(self) -> None:
        super().__init__(f"{self.code}: {self.message}")

    def to_json(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.details:
            error["details"] = list(self.details)
        if self.task_id is not None:
            error["task_id"] = self.task_id
        if self.state is not None:
            error["state"] = self.state
        return {"error": error}


def local(
    code: ErrorCode | str, message: str, details: Sequence[ErrorDetail] = ()
) -> SkillCallError:
    """A locally detected condition (nothing remote is implied)."""
    return SkillCallError(
        code=code.value if isinstance(code, ErrorCode) else code,
        message=message,
        details=tuple(d.to_dict() for d in details),
    )
