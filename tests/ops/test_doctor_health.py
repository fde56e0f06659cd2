"""``check_health``: what a plugin says of its own health, listed by ``skillrack doctor``.

A plugin configured with a device that does not exist is reported by doctor
in one line naming the device and the plugin; a ``fail`` fails the diagnosis
(exit status 1); a hook that raises is a ``fail`` that names the plugin, never
a traceback; a plugin without the hook adds nothing.
"""

from __future__ import annotations

import json
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from skillrack import HealthFinding, hookimpl
from skillrack.cli import main as cli
from skillrack.host.health import plugin_health
from skillrack.host.plugins import load_plugins

DEVICES = """
from helpers.builders import draft_skill
from skillrack import ConfigError, HealthFinding, hookimpl, refuse_unknown_keys

DEVICES = {}

@hookimpl
def configure_plugin(settings, base_dir):
    refuse_unknown_keys("[plugins.health_devices]", settings, ("devices",))
    DEVICES.update(settings.get("devices", {}))

@hookimpl
def register_skills(register):
    register(draft_skill())

@hookimpl
def check_health():
    for device_id, path in DEVICES.items():
        if (base / path).exists():
            yield HealthFinding("ok", f"device {device_id}: {path} is there", device_id)
        else:
            yield HealthFinding(
                "fail", f"device {device_id}: {path} does not exist; create it or remove "
                f"[plugins.health_devices.devices.{device_id}]", device_id,
            )

base = __import__("pathlib").Path(__file__).parent
"""

RAISES = """
from skillrack import hookimpl

@hookimpl
def check_health():
    raise RuntimeError("secret-token-123 is wrong")
"""


def doctor(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    modules: dict[str, str],
    extra: str = "",
) -> tuple[int, list[dict[str, str]]]:
    monkeypatch.setenv("SKILLRACK_LOAD_PLUGINS", "")
    monkeypatch.syspath_prepend(str(tmp_path))
    for name, source in modules.items():
        (tmp_path / f"{name}.py").write_text(textwrap.dedent(source))
    config = tmp_path / "skillrack.toml"
    builtin = ", ".join(f'"{name}"' for name in modules)
    config.write_text(f"[plugins]\nbuiltin = [{builtin}]\n{textwrap.dedent(extra)}")
    status = cli.main(["doctor", "--config", str(config), "--json"])
    report = json.loads(capsys.readouterr().out)
    return status, [f for f in report["findings"] if f["area"] == "health"]


def test_hook_check_health(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "r1.dev").write_text("")
    status, health = doctor(
        tmp_path,
        monkeypatch,
        capsys,
        {"health_devices": DEVICES},
        """
        [plugins.health_devices.devices]
        r1 = "r1.dev"
        r9 = "r9.dev"
        """,
    )
    assert status == 1  # a fail fails the diagnosis
    by_subject = {f["subject"]: f for f in health}
    assert by_subject["r1"]["status"] == "ok"
    missing = by_subject["r9"]
    assert missing["status"] == "fail"
    assert missing["message"] == (
        "plugin health_devices: device r9: r9.dev does not exist; create it or remove "
        "[plugins.health_devices.devices.r9]"
    )
    assert "\n" not in missing["message"]


def test_a_health_check_that_raises_is_one_fail_naming_the_plugin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    status, health = doctor(tmp_path, monkeypatch, capsys, {"health_raises": RAISES})
    assert status == 1
    [finding] = health
    assert finding["status"] == "fail" and finding["subject"] == "health_raises"
    assert "check_health raised RuntimeError" in finding["message"]
    assert "secret-token" not in finding["message"]


class Returns:
    def __init__(self, result: Callable[[], Any]) -> None:
        self.result = result

    @hookimpl
    def check_health(self) -> Any:
        return self.result()


def test_what_is_not_a_finding_is_a_fail_and_none_is_nothing() -> None:
    loaded = load_plugins(
        use_entry_points=False,
        extra=[
            ("quiet", Returns(lambda: None)),
            ("one", Returns(lambda: HealthFinding("warn", "low disk", "disk"))),
            ("odd", Returns(lambda: ["not a finding"])),
        ],
    )
    found = {(h.plugin, h.finding.status, h.finding.message) for h in plugin_health(loaded.manager)}
    assert found == {
        ("one", "warn", "low disk"),
        ("odd", "fail", "check_health returned str, not a HealthFinding"),
    }
