"""The one error every inline-schema rule raises, and its two flavours.

It lives apart from :mod:`skillrack.interface.inline` (which re-exports it) because the
walk, the reference checks and the validator raise it too, and they must not
import the orchestration that uses them.
"""

from __future__ import annotations

from dataclasses import dataclass

from skillrack.errors import ConditionError, ErrorCode


@dataclass(kw_only=True)
class InlineSchemaError(ConditionError):
    """An inline schema broke one of the draft's rules or one of our resource limits.

    ``rule`` names the rule so that callers and tests need not parse messages;
    ``pointer`` locates the problem inside the schema value (the document layer
    prefixes it with the schema's own location).  ``code`` is
    ``interface_invalid`` for rule violations and ``resource_limit_exceeded`` for
    limits, as the draft requires.
    """

    rule: str
    pointer: str = ""

    def __post_init__(self) -> None:
        # Exception text for logs and tracebacks; ``message`` stays caller-safe.
        where = f" at {self.pointer!r}" if self.pointer else ""
        Exception.__init__(self, f"{self.code.value} ({self.rule}{where}): {self.message}")


def refuse(rule: str, pointer: str, message: str) -> InlineSchemaError:
    """A violation of one of the draft's inline-schema rules (``interface_invalid``)."""
    return InlineSchemaError(ErrorCode.INTERFACE_INVALID, message, rule=rule, pointer=pointer)


def limit_exceeded(rule: str, pointer: str, message: str) -> InlineSchemaError:
    """A resource limit hit while checking the schema (``resource_limit_exceeded``)."""
    # The draft lets the error response omit the threshold, so messages never name it.
    return InlineSchemaError(ErrorCode.RESOURCE_LIMIT_EXCEEDED, message, rule=rule, pointer=pointer)
