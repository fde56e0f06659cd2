"""What the interface skills share: inventory look-ups, provenance and wire encodings."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from typing import Any

from skillrack import ConditionError, ErrorCode

from . import inventory

#: The ``producer.agent`` value of every supporting record this package publishes.
AGENT = "skillrack-example-vendor"

#: The ``source.system`` value: where the observations come from.
SOURCE_SYSTEM = "simulated-inventory"


def utc_now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def timestamp(when: dt.datetime) -> str:
    """RFC 3339 ``date-time`` in UTC, in milliseconds: ``2026-01-02T03:04:05.678Z``."""
    return when.astimezone(dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def uint64(value: int) -> str:
    """A 64-bit counter as a decimal string: A2A Data Parts carry numbers as doubles."""
    return str(value)


def producer(skill_id: str, skill_version: str) -> dict[str, str]:
    return {"agent": AGENT, "skill_id": skill_id, "skill_version": skill_version}


def source(method: str) -> dict[str, str]:
    return {"system": SOURCE_SYSTEM, "method": method}


def content_digest(value: Any) -> str:
    """``sha256:<hex>`` of ``value`` serialized with sorted keys and no insignificant whitespace.

    For the values the records carry (strings, booleans, integers, null) this
    serialization is the JCS (RFC 8785) form, so a consumer can recompute it.
    """
    encoded = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(encoded.encode()).hexdigest()


def device_interfaces(device_id: str) -> tuple[str, ...]:
    """The device's interfaces; an unknown device is a constraint this agent cannot honour."""
    try:
        return inventory.interfaces(device_id)
    except inventory.UnknownDevice:
        raise ConditionError(
            ErrorCode.CONSTRAINT_REJECTED, f"device {device_id!r} is not managed by this agent"
        ) from None


def require_interface(device_id: str, name: str) -> None:
    if name not in device_interfaces(device_id):
        raise ConditionError(
            ErrorCode.CONSTRAINT_REJECTED, f"device {device_id!r} has no interface {name!r}"
        )


def counters_json(counters: inventory.Counters) -> dict[str, str]:
    """ietf-interfaces ``statistics`` as the schemas carry them (counters as strings)."""
    return {
        "in_octets": uint64(counters.in_octets),
        "in_unicast_pkts": uint64(counters.in_unicast_pkts),
        "in_errors": uint64(counters.in_errors),
        "in_discards": uint64(counters.in_discards),
        "out_octets": uint64(counters.out_octets),
        "out_unicast_pkts": uint64(counters.out_unicast_pkts),
        "out_errors": uint64(counters.out_errors),
        "out_discards": uint64(counters.out_discards),
        "discontinuity_time": timestamp(counters.discontinuity_time),
    }
