"""skillrack: a plugin host for schema-governed network-management agents over A2A.

The public API a vendor needs, and nothing else: ``hookimpl`` to implement
hooks, the declaration types to describe a skill, and the error type a handler
raises to report one of the draft's conditions.
"""

from __future__ import annotations

from .declare import (
    Authority,
    DomainSchema,
    Interaction,
    Operation,
    Skill,
    SupportingRecord,
)
from .errors import ConditionError, ErrorCode
from .hookspecs import hookimpl

__all__ = [
    "Authority",
    "ConditionError",
    "DomainSchema",
    "ErrorCode",
    "Interaction",
    "Operation",
    "Skill",
    "SupportingRecord",
    "hookimpl",
]
