"""The installed host finds this package through its entry point, as an operator would."""

from __future__ import annotations

import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

DRAFT_DIGEST = "sha256:4dedea3f7ddf19e94d9fd0b30886624f50afb5aadc1b407508a05dd3c40f380d"


def skillrack(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    script = shutil.which("skillrack") or str(Path(sys.executable).parent / "skillrack")
    return subprocess.run(
        [script, *args],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, **(env or {})},
    )


def test_entry_point_resolves_to_the_package() -> None:
    [ep] = [
        ep
        for ep in importlib.metadata.entry_points(group="skillrack")
        if ep.name == "example_vendor"
    ]
    assert ep.load().__name__ == "skillrack_example_vendor"
    assert ep.dist is not None and ep.dist.name == "skillrack-example-vendor"


def test_skillrack_plugins_lists_the_skill_with_the_draft_digest() -> None:
    run = skillrack("plugins", "--json")
    assert run.returncode == 0, run.stderr
    listing = json.loads(run.stdout)
    [plugin] = [p for p in listing["plugins"] if p["name"] == "skillrack-example-vendor"]
    assert {
        "skill_id": "evaluate_resource_condition",
        "skill_version": "1.0",
        "interface_digest": DRAFT_DIGEST,
    } in plugin["skills"]
    assert not [r for r in listing["refused"] if r["plugin"] == "example_vendor"]


def test_interface_digest_command() -> None:
    run = skillrack("interface", "evaluate_resource_condition", "--digest")
    assert (run.returncode, run.stdout) == (0, DRAFT_DIGEST + "\n")


def test_load_plugins_env_can_switch_the_vendor_off() -> None:
    run = skillrack("plugins", "--json", env={"SKILLRACK_LOAD_PLUGINS": ""})
    assert run.returncode == 0
    assert json.loads(run.stdout)["plugins"] == []
