"""The configured devices: look-ups, the skills' precheck, and kernel errors as the draft's.

Each skill names its device in ``device_id``.  A device this agent does not
manage is refused by the skill's ``precheck`` (run by the host after
authorization and before any approval is asked), with ``constraint_rejected``
and the pointer ``/device_id``.  A namespace that is missing or cannot be
entered, and missing privileges, are one line to the caller (and to the
operator's log), never a traceback.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterator, Mapping
from typing import Any, TypeVar

from skillrack import ConditionError, ErrorCode, HealthFinding

from . import netlink
from .settings import Device, Settings

T = TypeVar("T")
logger = logging.getLogger("skillrack_linux")

PLUGIN = "skillrack-linux"


def rejected(message: str, pointer: str) -> ConditionError:
    return ConditionError(ErrorCode.CONSTRAINT_REJECTED, message, pointer=pointer)


def invalid(message: str, pointer: str) -> ConditionError:
    return ConditionError(ErrorCode.INPUT_INVALID, message, pointer=pointer)


class Devices:
    """The devices of one agent, from the settings."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def __iter__(self) -> Iterator[Device]:
        return iter(self.settings.devices.values())

    def get(self, device_id: str, pointer: str = "/device_id") -> Device:
        device = self.settings.devices.get(device_id)
        if device is None:
            known = ", ".join(sorted(self.settings.devices)) or "none are configured"
            raise rejected(
                f"device {device_id!r} is not managed by this agent (devices: {known})", pointer
            )
        return device

    async def precheck(self, arguments: Mapping[str, Any], caller: Any) -> None:
        """``Skill.precheck``: the device is one of ours (never approve a call for another)."""
        self.get(arguments["device_id"])

    async def precheck_frr(self, arguments: Mapping[str, Any], caller: Any) -> None:
        """The device is ours and runs FRR."""
        device = self.get(arguments["device_id"])
        if not device.frr:
            raise rejected(
                f"device {device.device_id!r} runs no FRR instance (frr = true is not set)",
                "/device_id",
            )

    def problems(self) -> list[str]:
        """One line per device whose namespace cannot be used (the start-up warning)."""
        return [
            f"skillrack-linux: {finding.message}"
            for finding in self.health()
            if finding.status == "fail"
        ]

    def health(self) -> list[HealthFinding]:
        """One finding per device for ``skillrack doctor`` (``check_health``), naming it."""
        found: list[HealthFinding] = []
        for device in self:
            problem = netlink.namespace_problem(device.netns)
            if problem is not None:
                found.append(
                    HealthFinding("fail", f"device {device.device_id}: {problem}", device.device_id)
                )
            else:
                found.append(
                    HealthFinding(
                        "ok",
                        f"device {device.device_id}: network namespace {device.netns!r}",
                        device.device_id,
                    )
                )
        if not found:
            found.append(
                HealthFinding(
                    "warn", "no device is configured: add [plugins.linux.devices.<device_id>]"
                )
            )
        return found

    def log_problems(self) -> None:
        for line in self.problems():
            logger.warning("%s", line)


async def kernel(device: Device, work: Callable[[], T], *, changing: bool = False) -> T:
    """Run blocking netlink ``work`` for ``device`` on a worker thread, errors as the draft's."""
    try:
        return await asyncio.to_thread(work)
    except netlink.NamespaceMissing:
        raise ConditionError(
            ErrorCode.CONSTRAINT_REJECTED,
            f"device {device.device_id!r}: network namespace {device.netns!r} does not exist",
            pointer="/device_id",
        ) from None
    except netlink.NotPermitted:
        logger.error(
            "skillrack-linux: device %s: the kernel refused (the agent needs CAP_NET_ADMIN "
            "in namespace %s)",
            device.device_id,
            device.netns,
        )
        what = "change" if changing else "read"
        raise ConditionError(
            ErrorCode.CONSTRAINT_REJECTED,
            f"device {device.device_id!r}: this agent may not {what} namespace "
            f"{device.netns!r} (it lacks CAP_NET_ADMIN)",
            pointer="/device_id",
        ) from None
