"""The ``change-approval`` record: on whose authority a change was applied.

A change's audit trail must name the approval that allowed it: the approval
id an operator granted (``skillrack approvals show <id>``) and who granted
it, or the approver plugin that allowed the call.  The host hands it to the
handler as ``context.approval`` (:class:`skillrack.Approved`); each applied
change publishes it as a supporting record beside its ``before`` and
``applied`` states, with the same device, subject, caller and task.

Its schema is declared here, inline: the ``schemas/`` files are the IETF-shaped
ones regenerated from YANG, and this record has no YANG model.
"""

from __future__ import annotations

from typing import Any

from skillrack import DomainSchema

from . import encoding
from .settings import Device

APPROVAL_KIND = "change-approval"

_APPROVAL = {
    "type": "object",
    "description": "What approved the call; null when nobody had to approve it.",
    "properties": {
        "via": {
            "enum": ["operator", "policy"],
            "description": "operator: people granted a stored approval; policy: an approver "
            "plugin allowed the call.",
        },
        "approvers": {
            "type": "array",
            "items": {"type": "string"},
            "description": "The granting operators' identities, or the approver plugins' names.",
        },
        "approval_id": {"type": "string"},
        "decided_at": {"type": "string", "format": "date-time"},
    },
    "required": ["via", "approvers"],
    "additionalProperties": False,
}

SCHEMA = DomainSchema.inline(
    {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "change-approval record",
        "description": "On whose authority a change was applied: the approval id and approvers.",
        "type": "object",
        "properties": {
            "record_id": {"type": "string"},
            "device_id": {"type": "string"},
            "change": {"enum": ["interface-change", "route-change"]},
            "interface": {"type": "string"},
            "prefix": {"type": "string"},
            "observed_at": {"type": "string", "format": "date-time"},
            "producer": {
                "type": "object",
                "properties": {
                    "agent": {"type": "string"},
                    "skill_id": {"type": "string"},
                    "skill_version": {"type": "string"},
                },
                "required": ["agent", "skill_id", "skill_version"],
                "additionalProperties": False,
            },
            "caller": {
                "type": "object",
                "properties": {"identity": {"type": "string"}, "tenant": {"type": "string"}},
                "required": ["identity", "tenant"],
                "additionalProperties": False,
            },
            "task_id": {"type": "string"},
            "approval": {"oneOf": [_APPROVAL, {"type": "null"}]},
        },
        "required": [
            "record_id",
            "device_id",
            "change",
            "observed_at",
            "producer",
            "caller",
            "task_id",
            "approval",
        ],
        "additionalProperties": False,
    },
    schema_uri="urn:skillrack:linux:change-approval:1.0",
    version="1.0",
)


def approval_record(
    context: Any, change: str, device: Device, subject: dict[str, str], caller: dict[str, str]
) -> dict[str, Any]:
    """The record of what approved this task's change (``context.approval``)."""
    approved = context.approval
    return {
        "record_id": f"{change}-{context.task_id}-approval",
        "device_id": device.device_id,
        "change": change,
        **subject,
        "observed_at": encoding.now(),
        "producer": encoding.producer(context.skill_id),
        "caller": caller,
        "task_id": context.task_id,
        "approval": approved.to_json() if approved is not None else None,
    }
