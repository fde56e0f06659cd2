"""skillrack: a plugin host for schema-governed network-management agents over A2A.

The public API a vendor needs, and nothing else: ``hookimpl`` to implement
hooks, the declaration types to describe a skill, the context a handler
receives, and the error type a handler raises to report one of the draft's
conditions.
"""

from __future__ import annotations

from skillrack.errors import ConditionError, ErrorCode
from skillrack.hookspecs import hookimpl
from skillrack.interface.declare import (
    Authority,
    DomainSchema,
    Interaction,
    Operation,
    Skill,
    SupportingRecord,
)
from skillrack.serve.context import Caller, SkillContext

__all__ = [
    "Authority",
    "Caller",
    "ConditionError",
    "DomainSchema",
    "ErrorCode",
    "Interaction",
    "Operation",
    "Skill",
    "SkillContext",
    "SupportingRecord",
    "hookimpl",
]
