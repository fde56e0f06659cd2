"""The plugin's settings: which network namespaces are devices, and where FRR runs.

The operator names each device in a ``[plugins.linux]`` table::

    [plugins.linux.devices.r1]
    netns = "r1"        # the network namespace (``ip netns`` name) that is the device
    frr = true          # an FRR instance runs there, reachable as ``vtysh -N r1``

The host does not yet pass ``[plugins.<name>]`` tables to vendor plugins (it
refuses any that is not a first-party plugin), so the table is read from the
TOML file named by ``SKILLRACK_LINUX_CONFIG``; the same text moves into
``skillrack.toml`` once the host hands vendor plugins their table.  Every
key is checked: a misspelt one stops the start with one line naming it.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from skillrack import ConfigError

#: The environment variable naming the TOML file that holds ``[plugins.linux]``.
CONFIG_ENV = "SKILLRACK_LINUX_CONFIG"

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


def parse(table: Mapping[str, Any], where: str = "plugins.linux") -> Settings:
    """``[plugins.linux]`` as a :class:`Settings`; ``ConfigError`` names the first bad key."""
    unknown = sorted(set(table) - {"devices"})
    if unknown:
        raise ConfigError(f"unknown key {where}.{unknown[0]} (known: devices)")
    devices_table = table.get("devices", {})
    if not isinstance(devices_table, Mapping):
        raise ConfigError(f"{where}.devices must be a table of devices")
    devices: dict[str, Device] = {}
    namespaces: dict[str, str] = {}
    for device_id, entry in devices_table.items():
        here = f"{where}.devices.{device_id}"
        if not DEVICE_ID.fullmatch(device_id):
            raise ConfigError(
                f"{here}: a device id is 1 to 63 letters, digits, '_', '.' or '-', "
                "starting with a letter or digit"
            )
        if not isinstance(entry, Mapping):
            raise ConfigError(f'{here} must be a table with netns = "<namespace>"')
        bad = sorted(set(entry) - set(_DEVICE_KEYS))
        if bad:
            raise ConfigError(f"unknown key {here}.{bad[0]} (known: {', '.join(_DEVICE_KEYS)})")
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


def load(environ: Mapping[str, str] | None = None) -> Settings:
    """The settings from the file ``SKILLRACK_LINUX_CONFIG`` names; no devices without it."""
    path = (os.environ if environ is None else environ).get(CONFIG_ENV, "")
    if not path:
        return Settings({})
    try:
        raw = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"{CONFIG_ENV}: cannot read {path}: {exc.strerror or exc}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{CONFIG_ENV}: {path} is not valid TOML: {exc}") from None
    plugins = raw.get("plugins", {})
    table = plugins.get("linux", {}) if isinstance(plugins, Mapping) else {}
    if not isinstance(table, Mapping):
        raise ConfigError(f"{path}: [plugins.linux] must be a table")
    return parse(table)
