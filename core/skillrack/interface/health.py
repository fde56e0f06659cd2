"""What a plugin's ``check_health`` hook returns: :class:`HealthFinding`, one line each.

Declared here, beside the other values a plugin hands the host (skills,
schemas), so that :mod:`skillrack.hookspecs` can name it; the host calls the
hook and ``skillrack doctor`` lists the findings (:mod:`skillrack.host.health`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

HealthStatus = Literal["ok", "warn", "fail"]
STATUSES: tuple[HealthStatus, ...] = ("ok", "warn", "fail")


@dataclass(frozen=True)
class HealthFinding:
    """One thing a plugin found about what it needs: one line an operator can act on."""

    status: HealthStatus
    #: What is wrong (or right) and what to do, naming the setting or device.
    message: str
    #: What it is about: a device id, a file; empty for the plugin as a whole.
    subject: str = ""
