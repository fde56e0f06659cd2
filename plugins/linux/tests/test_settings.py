"""The devices table: every key checked, one line per problem, the entry point's hook."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from lab import Lab

from skillrack import ConfigError
from skillrack.testing import registry_under_test
from skillrack_linux.devices import Devices
from skillrack_linux.settings import CONFIG_ENV, Device, load, parse


def test_a_devices_table_is_read() -> None:
    settings = parse({"devices": {"r1": {"netns": "r1", "frr": True}, "edge-2": {"netns": "e2"}}})
    assert settings.devices == {
        "r1": Device("r1", "r1", True),
        "edge-2": Device("edge-2", "e2", False),
    }


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"device": {}}, "unknown key plugins.linux.device (known: devices)"),
        (
            {"devices": {"r1": {"netns": "r1", "ffr": True}}},
            "unknown key plugins.linux.devices.r1.ffr",
        ),
        ({"devices": {"r1": {}}}, "plugins.linux.devices.r1.netns must name a network namespace"),
        ({"devices": {"r1": {"netns": "../etc"}}}, "plugins.linux.devices.r1.netns must name"),
        (
            {"devices": {"r1": {"netns": "r1", "frr": "yes"}}},
            "plugins.linux.devices.r1.frr must be",
        ),
        ({"devices": {"-r1": {"netns": "r1"}}}, "plugins.linux.devices.-r1: a device id is"),
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


def test_the_file_is_named_by_the_environment(tmp_path: Path) -> None:
    file = tmp_path / "linux.toml"
    file.write_text('[plugins.linux.devices.r1]\nnetns = "r1"\nfrr = true\n')
    assert load({CONFIG_ENV: str(file)}).devices["r1"].frr is True
    assert load({}).devices == {}
    with pytest.raises(ConfigError, match=f"{CONFIG_ENV}: cannot read"):
        load({CONFIG_ENV: str(tmp_path / "missing.toml")})


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
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, lab: Lab
) -> None:
    file = tmp_path / "linux.toml"
    file.write_text(
        f'[plugins.linux.devices.r1]\nnetns = "{lab.ns("r1")}"\n\n'
        '[plugins.linux.devices.r9]\nnetns = "sl-absent"\n'
    )
    monkeypatch.setenv(CONFIG_ENV, str(file))
    with caplog.at_level(logging.WARNING, logger="skillrack_linux"):
        registry = registry_under_test(["skillrack-linux"])
    assert len(registry.skills) == 7
    assert [r.getMessage() for r in caplog.records if r.name == "skillrack_linux"] == [
        "skillrack-linux: device r9: network namespace 'sl-absent' does not exist (ip netns list)"
    ]
