"""``propose_interface_configuration``: an intent in, a structured change proposal out.

The proposal is data a receiving agent can check without parsing anything:
each change names one YANG leaf by its RFC 7951 instance identifier, the
NETCONF edit operation, and typed current and proposed values; preconditions
pin the values the proposal was computed from (recorded in a
``configuration-baseline`` supporting record), and the rollback is the exact
inverse.  Nothing is applied: the skill is ``recommend_only``.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping
from typing import Any

from skillrack import ConditionError, ErrorCode, JsonValue, SkillContext

from . import inventory
from .common import content_digest, producer, require_interface, source, timestamp, utc_now

SKILL_ID = "propose_interface_configuration"
SKILL_VERSION = "1.0"
BASELINE_KIND = "configuration-baseline"

#: Leaf name (as the schemas spell it) -> path below the interface list entry.
#: ``enabled`` and ``description`` are ietf-interfaces (RFC 8343) leaves; the MTU
#: lives in ietf-ip (RFC 8344), once per address family.  Listed in the order
#: changes are applied: the MTU is set before an interface is enabled.
LEAVES: dict[str, str] = {
    "description": "description",
    "ipv4-mtu": "ietf-ip:ipv4/mtu",
    "ipv6-mtu": "ietf-ip:ipv6/mtu",
    "enabled": "enabled",
}

#: What :meth:`request_input` asks for when the caller gave no maintenance window.
WINDOW_REQUEST: dict[str, Any] = {
    "needed": "maintenance_window",
    "message": (
        "No maintenance window was given. Reply with the window in which the proposed "
        "change may be applied, as an object with RFC 3339 start and end times."
    ),
    "schema": {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {
            "start": {
                "type": "string",
                "format": "date-time",
                "description": "When the window opens (RFC 3339, with an offset).",
            },
            "end": {
                "type": "string",
                "format": "date-time",
                "description": "When the window closes; after start and in the future.",
            },
        },
        "required": ["start", "end"],
        "additionalProperties": False,
    },
}


def leaf_path(interface: str, leaf: str) -> str:
    """RFC 7951 JSON-encoded instance identifier of ``leaf`` on ``interface``."""
    return f"/ietf-interfaces:interfaces/interface[name='{interface}']/{LEAVES[leaf]}"


def _reject(message: str) -> ConditionError:
    return ConditionError(ErrorCode.CONSTRAINT_REJECTED, message)


def _instant(value: Any, member: str) -> dt.datetime:
    if not isinstance(value, str):
        raise _reject(f"maintenance window {member} must be an RFC 3339 date-time string")
    try:
        parsed = dt.datetime.fromisoformat(value.upper())
    except ValueError:
        raise _reject(f"maintenance window {member} is not an RFC 3339 date-time") from None
    if parsed.tzinfo is None:
        raise _reject(f"maintenance window {member} has no UTC offset")
    return parsed


def maintenance_window(value: Any, now: dt.datetime) -> tuple[dt.datetime, dt.datetime]:
    """Check a window from the arguments or from the caller's follow-up answer.

    The follow-up is not validated by the host (the draft defines no schema for
    it), so it is checked here: an object with ``start`` and ``end`` (also
    accepted wrapped as ``{"maintenance_window": {...}}``, or as JSON text).  A
    window that ends before it starts, or has already ended, cannot be honoured.
    """
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            raise _reject("the maintenance window answer is not a JSON object") from None
    if isinstance(value, Mapping) and set(value) == {"maintenance_window"}:
        value = value["maintenance_window"]
    if not isinstance(value, Mapping) or not {"start", "end"} <= set(value):
        raise _reject("a maintenance window needs start and end date-times")
    start, end = _instant(value["start"], "start"), _instant(value["end"], "end")
    if end <= start:
        raise _reject("the maintenance window ends before it starts")
    if end <= now:
        raise _reject("the maintenance window has already ended")
    return start, end


def _current(config: inventory.InterfaceConfig) -> dict[str, Any]:
    return {
        "enabled": config.enabled,
        "description": config.description,
        "ipv4-mtu": config.ipv4_mtu,
        "ipv6-mtu": config.ipv6_mtu,
    }


def _targets(desired: Mapping[str, Any]) -> dict[str, Any]:
    targets: dict[str, Any] = {}
    if "admin_state" in desired:
        targets["enabled"] = desired["admin_state"] == "up"
    if "mtu" in desired:
        targets["ipv4-mtu"] = targets["ipv6-mtu"] = desired["mtu"]
    if "description" in desired:
        targets["description"] = desired["description"]
    return targets


def _risk(changes: list[dict[str, Any]], oper_status: str) -> tuple[str, list[str]]:
    leaves = {change["leaf"] for change in changes}
    factors: list[str] = []
    for change in changes:
        if change["leaf"] == "enabled":
            disabling_live = change["proposed_value"] is False and oper_status == "up"
            factors.append("traffic_interruption" if disabling_live else "admin_state_change")
    if leaves & {"ipv4-mtu", "ipv6-mtu"}:
        factors.append("mtu_change")
    if leaves == {"description"}:
        factors.append("documentation_only")
    if "traffic_interruption" in factors:
        return "high", factors
    if {"admin_state_change", "mtu_change"} & set(factors):
        return "medium", factors
    return "low", factors


def plan(
    device_id: str, interface: str, desired: Mapping[str, Any]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]], dict[str, Any]]:
    """``(changes, preconditions, rollback_changes, current_values)`` for the desired state."""
    current = _current(inventory.interface_config(device_id, interface))
    targets = _targets(desired)
    changes: list[dict[str, Any]] = []
    preconditions: list[dict[str, Any]] = []
    rollback: list[dict[str, Any]] = []
    for leaf in LEAVES:
        if leaf not in targets or targets[leaf] == current[leaf]:
            continue
        path = leaf_path(interface, leaf)
        changes.append(
            {
                "path": path,
                "leaf": leaf,
                "operation": "merge",
                "current_value": current[leaf],
                "proposed_value": targets[leaf],
            }
        )
        preconditions.append(
            {"kind": "leaf_value", "path": path, "leaf": leaf, "expected_value": current[leaf]}
        )
        undo: dict[str, Any] = {"path": path, "leaf": leaf, "current_value": targets[leaf]}
        if current[leaf] is None:
            undo["operation"] = "delete"
        else:
            undo.update(operation="merge", proposed_value=current[leaf])
        rollback.insert(0, undo)
    return changes, preconditions, rollback, current


def baseline_record(
    device_id: str, interface: str, current: Mapping[str, Any], observed_at: dt.datetime
) -> dict[str, Any]:
    leaves = [
        {"path": leaf_path(interface, leaf), "leaf": leaf, "value": current[leaf]}
        for leaf in LEAVES
    ]
    return {
        "record_id": f"baseline-{device_id}-{interface}",
        "device_id": device_id,
        "interface": interface,
        "datastore": "running",
        "source": source("datastore-read"),
        "producer": producer(SKILL_ID, SKILL_VERSION),
        "observed_at": timestamp(observed_at),
        "produced_at": timestamp(utc_now()),
        "leaves": leaves,
        "content_digest": content_digest(leaves),
    }


async def propose_interface_configuration(
    arguments: Mapping[str, Any], context: SkillContext
) -> JsonValue:
    """Ask for a maintenance window if there is none, then return the proposal.

    Under the host's replay model a handler that asked for input is run again
    from the start once the answer arrives, so everything before the question
    is free of side effects, and the baseline record (the only publication)
    has a stable artifact id.
    """
    device_id: str = arguments["device_id"]
    interface: str = arguments["interface"]
    require_interface(device_id, interface)
    window = arguments.get("maintenance_window")
    if window is None:
        window = await context.request_input(WINDOW_REQUEST)
    start, end = maintenance_window(window, utc_now())

    observed_at = utc_now()
    changes, preconditions, rollback, current = plan(device_id, interface, arguments["desired"])
    state = inventory.interface_state(device_id, interface)
    risk, factors = _risk(changes, state.oper_status)
    baseline = baseline_record(device_id, interface, current, observed_at)
    baseline_ref = await context.publish_record(
        BASELINE_KIND, baseline, artifact_id=baseline["record_id"]
    )
    window_json = {"start": timestamp(start), "end": timestamp(end)}
    identity = {
        "device_id": device_id,
        "interface": interface,
        "changes": changes,
        "maintenance_window": window_json,
    }
    return {
        "proposal_id": "prop-" + content_digest(identity).removeprefix("sha256:")[:16],
        "device_id": device_id,
        "interface": interface,
        "target_datastore": "candidate",
        "changes": changes,
        "preconditions": preconditions,
        "rollback": {"changes": rollback},
        "maintenance_window": window_json,
        "risk": risk,
        "risk_factors": factors,
        "requires_approval": bool(changes),
        "baseline_ref": baseline_ref,
    }
