"""``manage_interface``: the draft's alternative, multi-operation design.

One skill carries a read (``get_status``) and an operation with a side effect
(``reset_counters``), selected by the required ``operation`` member.  The
draft prefers a skill per operation; this skill exists to show what the
alternative needs: an enumerated selector whose values describe their effect,
operation-specific input requirements (``reason`` for ``reset_counters``),
and ``approval_may_be_required`` true for the skill as a whole.  The host
authorizes the selected operation before the handler runs; the reset here is
simulated and changes nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from skillrack import ConditionError, ErrorCode, JsonValue, SkillContext

from . import inventory
from .common import counters_json, require_interface, timestamp, utc_now

SKILL_ID = "manage_interface"
GET_STATUS = "get_status"
RESET_COUNTERS = "reset_counters"


def get_status(device_id: str, interface: str) -> dict[str, Any]:
    observed_at = utc_now()
    state = inventory.interface_state(device_id, interface)
    config = inventory.interface_config(device_id, interface)
    return {
        "operation": GET_STATUS,
        "device_id": device_id,
        "interface": interface,
        "admin_status": state.admin_status,
        "oper_status": state.oper_status,
        "speed_bps": str(state.speed_bps),
        "mtu": config.ipv4_mtu,
        "counters": counters_json(state.counters),
        "observed_at": timestamp(observed_at),
    }


def reset_counters(device_id: str, interface: str) -> dict[str, Any]:
    # A real implementation would clear the device's counters here; the simulated
    # inventory is derived from hashes and stays as it is.
    return {
        "operation": RESET_COUNTERS,
        "device_id": device_id,
        "interface": interface,
        "counters_reset": True,
        "reset_at": timestamp(utc_now()),
    }


async def known_interface(arguments: Mapping[str, Any], caller: Any) -> None:
    """The skill's ``precheck``: an unmanaged device or unknown interface is refused at once.

    The host runs it after authorization and before the approval gate, so a
    ``reset_counters`` on a device this agent does not manage is refused
    before an operator is asked to approve it.
    """
    device_id: str = arguments["device_id"]
    interface: str = arguments["interface"]
    try:
        interfaces = inventory.interfaces(device_id)
    except inventory.UnknownDevice:
        raise ConditionError(
            ErrorCode.CONSTRAINT_REJECTED,
            f"device {device_id!r} is not managed by this agent",
            pointer="/device_id",
        ) from None
    if interface not in interfaces:
        raise ConditionError(
            ErrorCode.CONSTRAINT_REJECTED,
            f"device {device_id!r} has no interface {interface!r}",
            pointer="/interface",
        )


async def manage_interface(arguments: Mapping[str, Any], context: SkillContext) -> JsonValue:
    """Dispatch on the ``operation`` selector (the host passes it as ``context.operation`` too)."""
    device_id: str = arguments["device_id"]
    interface: str = arguments["interface"]
    require_interface(device_id, interface)
    operation = arguments["operation"]
    if operation == GET_STATUS:
        return get_status(device_id, interface)
    if operation == RESET_COUNTERS:
        return reset_counters(device_id, interface)
    # Unreachable behind the host's input validation; refuse rather than guess.
    raise ConditionError(ErrorCode.INPUT_INVALID, f"unknown operation {operation!r}")
