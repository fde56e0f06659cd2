"""A simulated network inventory: deterministic metrics per resource.

Real vendor code would query a controller or telemetry store; the example
derives each metric from a hash of (resource, metric) so that every run, every
replica and every test sees the same values without any external system.

The same approach gives a small catalogue of devices, each with its own list
of interfaces, and for every interface its state, its ietf-interfaces style
statistics (64-bit counters) and its configured values.
"""

from __future__ import annotations

import datetime as dt
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


# -- Devices and interfaces ---------------------------------------------------------------


class UnknownDevice(LookupError):
    """The simulated inventory has no device with this id."""


class UnknownInterface(LookupError):
    """The device has no interface with this name."""


#: The devices the simulated inventory manages.  Each device's interface list is
#: derived from its id (``eth0`` .. ``eth<n-1>``, four to eight interfaces).
DEVICES: tuple[str, ...] = ("edge-router-1", "core-router-1", "access-switch-7")

#: Line rates a simulated interface may run at, in bits per second.
_SPEEDS = (1_000_000_000, 10_000_000_000, 25_000_000_000, 100_000_000_000)

#: Counters are reckoned from this instant plus a per-interface offset.
_EPOCH = dt.datetime(2025, 1, 1, tzinfo=dt.UTC)


def _draw(*parts: str) -> int:
    """A deterministic 64-bit number for ``parts``; the whole simulation hangs off this."""
    seed = hashlib.sha256("\x00".join(parts).encode()).digest()
    return int.from_bytes(seed[:8], "big")


@dataclass(frozen=True)
class Counters:
    """ietf-interfaces ``statistics``: unsigned 64-bit counters and their discontinuity time."""

    in_octets: int
    in_unicast_pkts: int
    in_errors: int
    in_discards: int
    out_octets: int
    out_unicast_pkts: int
    out_errors: int
    out_discards: int
    discontinuity_time: dt.datetime


@dataclass(frozen=True)
class InterfaceState:
    """Operational view of one interface (ietf-interfaces ``admin-status``/``oper-status``)."""

    device_id: str
    name: str
    admin_status: str  # "up" | "down"
    oper_status: str  # an ietf-interfaces oper-status value
    speed_bps: int
    counters: Counters


@dataclass(frozen=True)
class InterfaceConfig:
    """Configured (running datastore) values of one interface; ``None`` means not configured."""

    device_id: str
    name: str
    enabled: bool
    description: str | None
    ipv4_mtu: int
    ipv6_mtu: int


def interfaces(device_id: str) -> tuple[str, ...]:
    """The names of ``device_id``'s interfaces, in inventory order."""
    if device_id not in DEVICES:
        raise UnknownDevice(device_id)
    return tuple(f"eth{i}" for i in range(4 + _draw(device_id, "interface-count") % 5))


def _check(device_id: str, name: str) -> None:
    if name not in interfaces(device_id):
        raise UnknownInterface(name)


def _counters(device_id: str, name: str) -> Counters:
    def direction(prefix: str) -> tuple[int, int, int, int]:
        # Octets up to 2**62, well beyond the 2**53 a JSON double carries exactly.
        octets = _draw(device_id, name, prefix, "octets") >> 2
        packets = octets // (64 + _draw(device_id, name, prefix, "size") % 1437)
        # One interface in four has an error rate of 200-5000 ppm, the rest 0-50 ppm.
        faulty = _draw(device_id, name, prefix, "faulty") % 4 == 0
        ppm = _draw(device_id, name, prefix, "errors") % (4801 if faulty else 51)
        ppm += 200 if faulty else 0
        discard_ppm = _draw(device_id, name, prefix, "discards") % 31
        return octets, packets, packets * ppm // 1_000_000, packets * discard_ppm // 1_000_000

    in_octets, in_pkts, in_errors, in_discards = direction("in")
    out_octets, out_pkts, out_errors, out_discards = direction("out")
    since = _EPOCH + dt.timedelta(seconds=_draw(device_id, name, "discontinuity") % 15_552_000)
    return Counters(
        in_octets=in_octets,
        in_unicast_pkts=in_pkts,
        in_errors=in_errors,
        in_discards=in_discards,
        out_octets=out_octets,
        out_unicast_pkts=out_pkts,
        out_errors=out_errors,
        out_discards=out_discards,
        discontinuity_time=since,
    )


def interface_state(device_id: str, name: str) -> InterfaceState:
    """The state and statistics the simulated device reports for one interface."""
    _check(device_id, name)
    admin_up = _draw(device_id, name, "admin") % 8 != 0
    if not admin_up:
        oper = "down"
    elif _draw(device_id, name, "oper") % 7 == 0:
        oper = "lower-layer-down"
    else:
        oper = "up"
    return InterfaceState(
        device_id=device_id,
        name=name,
        admin_status="up" if admin_up else "down",
        oper_status=oper,
        speed_bps=_SPEEDS[_draw(device_id, name, "speed") % len(_SPEEDS)],
        counters=_counters(device_id, name),
    )


def interface_config(device_id: str, name: str) -> InterfaceConfig:
    """The running configuration the simulated device reports for one interface."""
    state = interface_state(device_id, name)
    peer = _draw(device_id, name, "peer") % 64
    mtu = 9000 if _draw(device_id, name, "mtu") % 2 else 1500
    return InterfaceConfig(
        device_id=device_id,
        name=name,
        enabled=state.admin_status == "up",
        description=None if _draw(device_id, name, "description") % 3 == 0 else f"link-{peer}",
        ipv4_mtu=mtu,
        ipv6_mtu=mtu,
    )
