"""The draft's machine-readable error conditions, and the one error type every layer raises.

The draft ("Machine-readable error conditions") requires an implementation to
distinguish ten conditions and to carry them as ``{"error": {"code", "message",
"details"}}``.  Keeping the codes, the error object and the detail entries in
one module means the assembler, the dispatcher, the client and the CLI can never
disagree on spelling or shape.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any


class ErrorCode(enum.StrEnum):
    """The ten conditions of interface version 1.0, spelled as on the wire."""

    SKILL_NOT_ADVERTISED = "skill_not_advertised"
    UNSUPPORTED_INTERFACE_VERSION = "unsupported_interface_version"
    INTERFACE_UNAVAILABLE = "interface_unavailable"
    INTERFACE_INVALID = "interface_invalid"
    INTERFACE_MISMATCH = "interface_mismatch"
    INPUT_INVALID = "input_invalid"
    OUTPUT_INVALID = "output_invalid"
    CONSTRAINT_REJECTED = "constraint_rejected"
    AUTHORIZATION_FAILED = "authorization_failed"
    RESOURCE_LIMIT_EXCEEDED = "resource_limit_exceeded"


#: Conditions that mean "understood but not accepted": the draft puts the task in
#: TASK_STATE_REJECTED for these (resource_limit_exceeded only when checked before
#: acceptance, which the caller decides).
REJECTING_CODES: frozenset[ErrorCode] = frozenset(
    {
        ErrorCode.SKILL_NOT_ADVERTISED,
        ErrorCode.INTERFACE_MISMATCH,
        ErrorCode.INPUT_INVALID,
        ErrorCode.CONSTRAINT_REJECTED,
        ErrorCode.AUTHORIZATION_FAILED,
    }
)


@dataclass(frozen=True)
class ErrorDetail:
    """One ``details`` entry: where an instance failed and why.

    ``instance_path`` is a JSON Pointer (RFC 6901) and is mandatory in the draft;
    the other members are optional diagnostics.  ``actual`` is left out entirely
    (not set to null) when the value is sensitive, so that a caller cannot tell a
    redacted value from a JSON ``null``.
    """

    instance_path: str
    schema_path: str | None = None
    keyword: str | None = None
    expected: Any = None
    actual: Any = None
    has_actual: bool = False

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"instance_path": self.instance_path}
        if self.schema_path is not None:
            out["schema_path"] = self.schema_path
        if self.keyword is not None:
            out["keyword"] = self.keyword
        if self.expected is not None:
            out["expected"] = self.expected
        if self.has_actual:
            out["actual"] = self.actual
        return out


class SkillrackError(Exception):
    """Base of every error skillrack raises on purpose (as opposed to bugs)."""


class StartupError(SkillrackError):
    """A composition that must not start; the message is one line an operator can act on."""


@dataclass
class ConditionError(SkillrackError):
    """An error that carries one of the draft's machine-readable conditions.

    ``message`` is safe to show to a remote caller: it never contains internal
    exception text.  ``details`` follows the draft's detail-entry shape.
    """

    code: ErrorCode
    message: str
    details: tuple[ErrorDetail, ...] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        super().__init__(f"{self.code.value}: {self.message}")

    def to_error_object(self) -> dict[str, Any]:
        """The draft's ``{"error": {...}}`` value for a final status Data Part."""
        error: dict[str, Any] = {"code": self.code.value, "message": self.message}
        if self.details:
            error["details"] = [d.to_dict() for d in self.details]
        return {"error": error}


def error_object(
    code: ErrorCode, message: str, details: Iterable[ErrorDetail] = ()
) -> dict[str, Any]:
    """Shortcut for ``ConditionError(...).to_error_object()``."""
    return ConditionError(code, message, tuple(details)).to_error_object()


def parse_error_object(value: Any) -> tuple[str, str | None, list[Mapping[str, Any]]] | None:
    """Read ``(code, message, details)`` from a received ``{"error": {...}}`` value.

    Returns ``None`` when the value does not have the draft's error shape.  Codes
    outside the ten are passed through: the draft lets future profiles add some.
    """
    if not isinstance(value, Mapping) or set(value) != {"error"}:
        return None
    error = value["error"]
    if not isinstance(error, Mapping) or not isinstance(error.get("code"), str):
        return None
    message = error.get("message")
    details = error.get("details", [])
    return (
        error["code"],
        message if isinstance(message, str) else None,
        [d for d in details if isinstance(d, Mapping)] if isinstance(details, list) else [],
    )
