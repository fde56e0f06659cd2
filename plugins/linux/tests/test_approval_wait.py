"""Without an approver that grants everything: a dry run runs at once, a change waits.

The change skills are ``execute``: with nobody deciding for the operator, a
call waits for an operator's approval.  A ``dry_run`` changes nothing (the
skills say so with ``changes_nothing``), so it answers at once; the same
call without ``dry_run`` waits, and nothing changes on the device (``ip -j``).
Once an operator grants it (``skillrack approvals grant``, as the lab guide
does) the change is applied, and its ``change-approval`` record names the
approval id and the operator.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from lab import Lab

from skillrack.testing import AgentClient
from skillrack_linux import LinuxPlugin

pytestmark = pytest.mark.usefixtures("lab")


@pytest.fixture
def skillrack_plugin_objects(plugin: LinuxPlugin) -> list[tuple[str, object]]:
    """The plugin alone: no approver, so an open ``execute`` call waits for an operator."""
    return [("linux", plugin)]


def mtu(lab: Lab, router: str, name: str) -> int:
    [found] = lab.ip(router, "link", "show", "dev", name)
    return int(found["mtu"])


def skillrack_command() -> list[str]:
    found = shutil.which("skillrack", path=str(Path(sys.executable).parent))
    return [found] if found else [sys.executable, "-m", "skillrack"]


async def test_a_dry_run_does_not_wait_for_an_approval(
    skillrack_client: AgentClient, lab: Lab, tmp_path: Path
) -> None:
    arguments = {"device_id": "r2", "interface": "r2-r1", "mtu": 1400}
    dry = await skillrack_client.invoke("set_interface_state", {**arguments, "dry_run": True})
    assert dry.state == "TASK_STATE_COMPLETED"
    assert dry.result["outcome"] == "dry_run" and dry.result["after"]["mtu"] == 1400
    assert mtu(lab, "r2", "r2-r1") == 1500

    change = await skillrack_client.invoke("set_interface_state", arguments)
    assert change.state == "TASK_STATE_INPUT_REQUIRED"
    assert change.approval is not None and change.approval["approval_id"]
    assert mtu(lab, "r2", "r2-r1") == 1500  # waits: nothing applied

    # An operator grants it; the change is applied and its record names the approval.
    approval_id = change.approval["approval_id"]
    granted = subprocess.run(
        [
            *skillrack_command(),
            "approvals",
            "grant",
            approval_id,
            "--store",
            str(tmp_path / "skillrack-approvals.db"),  # the test agent's (skillrack.testing)
            "--by",
            "noc-approver",
            "--reason",
            "test window",
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert granted.returncode == 0, granted.stderr
    decided = json.loads(granted.stdout)
    try:
        done = await skillrack_client.resume(
            skillrack_client.url, "set_interface_state", change.task_id
        )
        assert done.state == "TASK_STATE_COMPLETED" and done.result["outcome"] == "applied"
        assert mtu(lab, "r2", "r2-r1") == 1400
        [record] = [
            done.records[ref]
            for ref in done.result["supporting_record_refs"]
            if done.record_kinds[ref] == "change-approval"
        ]
        assert record["approval"] == {
            "via": "operator",
            "approvers": ["noc-approver"],
            "approval_id": approval_id,
            "decided_at": decided["decided_at"],
        }
        assert record["task_id"] == change.task_id and record["interface"] == "r2-r1"
    finally:
        lab.run("r2", "ip", "link", "set", "dev", "r2-r1", "mtu", "1500")


async def test_a_route_dry_run_does_not_wait_either(
    skillrack_client: AgentClient, lab: Lab
) -> None:
    dry = await skillrack_client.invoke(
        "set_static_route",
        {
            "device_id": "r1",
            "action": "add",
            "prefix": "198.51.100.0/24",
            "next_hop": {"blackhole": True},
            "dry_run": True,
        },
    )
    assert dry.state == "TASK_STATE_COMPLETED" and dry.result["outcome"] == "dry_run"
    assert lab.ip("r1", "route", "show", "198.51.100.0/24") == []
