"""The plugin's settings: which network namespaces are devices, and where FRR runs.

The operator names each device in a ``[plugins.linux]`` table::

    [plugins.linux.devices.r1]
    netns = "r1"        # the network namespace (``ip netns`` name) that is the device
    frr = true          # an FRR instance runs there, reachable as ``vtysh -N r1``

The table lives in ``skillrack.toml`` beside the host's own; the host hands it
to the plugin's ``configure_plugin`` hook before the skills are registered.
Every key is checked: a misspelt one stops the start with one line naming it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from skillrack import ConfigError, refuse_unknown_keys

#: A device id as the schemas accept it (``device_id``'s pattern).
DEVICE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,62}")
#: What ``ip netns add`` accepts: a file name under /run/netns.
NETNS_NAME = re.compile(r"[A-Za-z0-9_.-]{1,64}")

_DEVICE_KEYS = ("netns", "frr")


@dataclass(frozen=True)
class Device:
    """One managed device: a network namespace, and whether FRR runs in it."""

    device_id: str
    netns: str
    frr: bool = False

    @property
    def pathspace(self) -> str:
        """FRR's ``-N`` pathspace for this device (the namespace's name)."""
        return self.netns


@dataclass(frozen=True)
class Settings:
    devices: Mapping[str, Device]


def parse(table: Mapping[str, Any], where: str = "[plugins.linux]") -> Settings:
    """``[plugins.linux]`` as a :class:`Settings`; ``ConfigError`` names the first bad key."""
    refuse_unknown_keys(where, table, ("devices",))
    devices_table = table.get("devices", {})
    if not isinstance(devices_table, Mapping):
        raise ConfigError(f"{where} devices must be a table of devices")
    devices: dict[str, Device] = {}
    namespaces: dict[str, str] = {}
    for device_id, entry in devices_table.items():
        here = f"{where} devices.{device_id}"
        if not DEVICE_ID.fullmatch(device_id):
            raise ConfigError(
                f"{here}: a device id is 1 to 63 letters, digits, '_', '.' or '-', "
                "starting with a letter or digit"
            )
        if not isinstance(entry, Mapping):
            raise ConfigError(f'{here} must be a table with netns = "<namespace>"')
        refuse_unknown_keys(f"{where[:-1]}.devices.{device_id}]", entry, _DEVICE_KEYS)
        netns = entry.get("netns")
        if not isinstance(netns, str) or not NETNS_NAME.fullmatch(netns):
            raise ConfigError(
                f"{here}.netns must name a network namespace (as `ip netns add` takes it)"
            )
        frr = entry.get("frr", False)
        if not isinstance(frr, bool):
            raise ConfigError(f"{here}.frr must be true or false")
        if netns in namespaces:
            raise ConfigError(
                f"{here}.netns: namespace {netns!r} is already device {namespaces[netns]!r}"
            )
        namespaces[netns] = device_id
        devices[device_id] = Device(device_id, netns, frr)
    return Settings(devices)
