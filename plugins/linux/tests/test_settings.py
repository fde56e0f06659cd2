"""The devices table: every key checked, one line per problem, the entry point's hook."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from pathlib import Path

import pytest
from lab import Lab

from skillrack import ConfigError
from skillrack.testing import registry_under_test
from skillrack_linux.devices import Devices
from skillrack_linux.settings import Device, parse


def test_a_devices_table_is_read() -> None:
    settings = parse({"devices": {"r1": {"netns": "r1", "frr": True}, "edge-2": {"netns": "e2"}}})
    assert settings.devices == {
        "r1": Device("r1", "r1", True),
        "edge-2": Device("edge-2", "e2", False),
    }


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"device": {}}, '[plugins.linux]: unknown key "device" (did you mean "devices"?)'),
        (
            {"devices": {"r1": {"netns": "r1", "ffr": True}}},
            '[plugins.linux.devices.r1]: unknown key "ffr" (did you mean "frr"?)',
        ),
        ({"devices": {"r1": {}}}, "[plugins.linux] devices.r1.netns must name a network namespace"),
        ({"devices": {"r1": {"netns": "../etc"}}}, "[plugins.linux] devices.r1.netns must name"),
        (
            {"devices": {"r1": {"netns": "r1", "frr": "yes"}}},
            "[plugins.linux] devices.r1.frr must be",
        ),
        ({"devices": {"-r1": {"netns": "r1"}}}, "[plugins.linux] devices.-r1: a device id is"),
        (
            {"devices": {"a": {"netns": "x"}, "b": {"netns": "x"}}},
            "namespace 'x' is already device 'a'",
        ),
    ],
)
def test_every_key_is_checked(table: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse(table)
    assert message in str(info.value) and "\n" not in str(info.value)


def test_the_table_comes_from_the_hosts_configuration() -> None:
    registry = registry_under_test(
        ["skillrack-linux"],
        plugin_settings={"linux": {"devices": {"r1": {"netns": "sl-unused", "frr": True}}}},
    )
    assert len(registry.skills) == 7
    with pytest.raises(ConfigError) as refused:
        registry_under_test(
            ["skillrack-linux"], plugin_settings={"linux": {"devices": {"r1": {"netnss": "x"}}}}
        )
    assert str(refused.value).startswith('[plugins.linux.devices.r1]: unknown key "netnss"')
    assert '(did you mean "netns"?)' in str(refused.value)


def test_a_missing_namespace_is_one_line_naming_the_device(lab: Lab) -> None:
    devices = Devices(
        parse({"devices": {"r1": {"netns": lab.ns("r1")}, "gone": {"netns": "sl-no-such"}}})
    )
    assert devices.problems() == [
        "skillrack-linux: device gone: network namespace 'sl-no-such' does not exist "
        "(ip netns list)"
    ]
    assert not Path("/run/netns/sl-no-such").exists()  # looking never creates it


def test_the_entry_point_loads_the_devices_and_says_what_is_wrong(
    caplog: pytest.LogCaptureFixture, lab: Lab
) -> None:
    devices = {"r1": {"netns": lab.ns("r1")}, "r9": {"netns": "sl-absent"}}
    with caplog.at_level(logging.WARNING, logger="skillrack_linux"):
        registry = registry_under_test(
            ["skillrack-linux"], plugin_settings={"linux": {"devices": devices}}
        )
    assert len(registry.skills) == 7
    assert [r.getMessage() for r in caplog.records if r.name == "skillrack_linux"] == [
        "skillrack-linux: device r9: network namespace 'sl-absent' does not exist (ip netns list)"
    ]


def test_doctor_names_a_device_whose_namespace_does_not_exist(
    lab: Lab, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``skillrack doctor`` (the plugin's ``check_health``): one line naming the device."""
    config = tmp_path / "skillrack.toml"
    config.write_text(
        "[plugins.linux.devices.r1]\n"
        f'netns = "{lab.ns("r1")}"\n'
        "[plugins.linux.devices.r9]\n"
        'netns = "sl-doctor-absent"\n'
    )
    monkeypatch.setenv("SKILLRACK_LOAD_PLUGINS", "skillrack-linux")
    done = subprocess.run(
        [sys.executable, "-m", "skillrack", "doctor", "--config", str(config), "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1, done.stderr  # a device that cannot be used fails the diagnosis
    health = {f["subject"]: f for f in json.loads(done.stdout)["findings"] if f["area"] == "health"}
    assert health["r9"]["status"] == "fail"
    assert health["r9"]["message"] == (
        "plugin linux: device r9: network namespace 'sl-doctor-absent' does not exist "
        "(ip netns list)"
    )
    assert health["r1"]["status"] == "ok"
    assert not Path("/run/netns/sl-doctor-absent").exists()
