"""A simulated network inventory: deterministic metrics per resource.

Real vendor code would query a controller or telemetry store; the example
derives each metric from a hash of (resource, metric) so that every run, every
replica and every test sees the same values without any external system.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

#: Metrics the simulated devices report, with their unit and value range.
METRICS: dict[str, tuple[str, float, float]] = {
    "utilization": ("percent", 0.0, 100.0),
    "cpu": ("percent", 0.0, 100.0),
    "memory": ("percent", 0.0, 100.0),
    "temperature": ("celsius", 20.0, 90.0),
    "packet_loss": ("percent", 0.0, 5.0),
    "latency": ("milliseconds", 0.1, 250.0),
}


class UnknownMetric(LookupError):
    """The simulated inventory does not report this metric."""


@dataclass(frozen=True)
class Observation:
    resource_id: str
    metric: str
    value: float
    unit: str


def observe(resource_id: str, metric: str) -> Observation:
    """The value the simulated inventory reports for ``metric`` on ``resource_id``."""
    try:
        unit, low, high = METRICS[metric]
    except KeyError:
        raise UnknownMetric(metric) from None
    seed = hashlib.sha256(f"{resource_id}\x00{metric}".encode()).digest()
    fraction = int.from_bytes(seed[:4], "big") / 0xFFFFFFFF
    return Observation(resource_id, metric, round(low + fraction * (high - low)), unit)
