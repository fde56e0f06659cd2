"""``collect_interface_health``: one observation record per interface, streamed as it goes."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from skillrack import JsonValue, SkillContext

from . import inventory
from .common import (
    counters_json,
    device_interfaces,
    producer,
    require_interface,
    source,
    timestamp,
    utc_now,
)

SKILL_ID = "collect_interface_health"
SKILL_VERSION = "1.0"
RECORD_KIND = "interface-health-observation"

#: Default pause between two interfaces, in milliseconds (the input schema's ``default``).
DEFAULT_INTERVAL_MS = 50

#: Error or discard ratio (per packet, either direction) above which an interface is degraded.
ERROR_RATIO_THRESHOLD = 1e-4


def record_id(device_id: str, name: str) -> str:
    """Stable per task, so that a replayed run replaces its records instead of repeating them."""
    return f"health-{device_id}-{name}"


def assess(state: inventory.InterfaceState) -> dict[str, Any]:
    """The record's ``assessment``: health, the reasons for it, and the numbers behind them."""
    c = state.counters
    in_pkts, out_pkts = max(c.in_unicast_pkts, 1), max(c.out_unicast_pkts, 1)
    error_ratio = max(c.in_errors / in_pkts, c.out_errors / out_pkts)
    discard_ratio = max(c.in_discards / in_pkts, c.out_discards / out_pkts)
    reasons: list[str] = []
    if state.admin_status == "down":
        health = "admin_down"
    else:
        if state.oper_status != "up":
            reasons.append("oper_down")
        if c.in_errors / in_pkts > ERROR_RATIO_THRESHOLD:
            reasons.append("input_errors")
        if c.out_errors / out_pkts > ERROR_RATIO_THRESHOLD:
            reasons.append("output_errors")
        if discard_ratio > ERROR_RATIO_THRESHOLD:
            reasons.append("discards")
        health = "degraded" if reasons else "healthy"
    return {
        "health": health,
        "reasons": reasons,
        "error_ratio": round(error_ratio, 9),
        "discard_ratio": round(discard_ratio, 9),
        "ratio_threshold": ERROR_RATIO_THRESHOLD,
    }


def observation(device_id: str, name: str) -> dict[str, Any]:
    observed_at = utc_now()
    state = inventory.interface_state(device_id, name)
    return {
        "record_id": record_id(device_id, name),
        "device_id": device_id,
        "interface": name,
        "source": source("counter-poll"),
        "producer": producer(SKILL_ID, SKILL_VERSION),
        "observed_at": timestamp(observed_at),
        "produced_at": timestamp(utc_now()),
        "admin_status": state.admin_status,
        "oper_status": state.oper_status,
        "speed_bps": str(state.speed_bps),
        "counters": counters_json(state.counters),
        "assessment": assess(state),
    }


async def collect_interface_health(
    arguments: Mapping[str, Any], context: SkillContext
) -> JsonValue:
    """Observe each interface, publish its record and a partial summary, pause, go on.

    Every requested name is checked before anything is published, so a bad
    name rejects the whole invocation instead of leaving half the records.
    Cancellation arrives as ``CancelledError`` at the pause between interfaces
    (the host cancels the task); ``context.cancelled`` is checked as well.
    """
    device_id: str = arguments["device_id"]
    names = device_interfaces(device_id)
    if "interfaces" in arguments:
        for name in arguments["interfaces"]:
            require_interface(device_id, name)
        names = tuple(arguments["interfaces"])
    interval = arguments.get("interval_ms", DEFAULT_INTERVAL_MS) / 1000

    degraded: list[str] = []
    refs: list[str] = []

    def summary() -> dict[str, Any]:
        return {
            "device_id": device_id,
            "interfaces_checked": len(refs),
            "degraded": list(degraded),
            "observation_refs": list(refs),
        }

    for index, name in enumerate(names):
        if index:
            await asyncio.sleep(interval)
        if context.cancelled:
            raise asyncio.CancelledError
        record = observation(device_id, name)
        refs.append(
            await context.publish_record(RECORD_KIND, record, artifact_id=record["record_id"])
        )
        if record["assessment"]["health"] == "degraded":
            degraded.append(name)
        await context.publish_progress(summary())
    return summary()
