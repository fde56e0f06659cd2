"""Without an approver that grants everything: a dry run runs at once, a change waits.

The change skills are ``execute``: with nobody deciding for the operator, a
call waits for an operator's approval.  A ``dry_run`` changes nothing (the
skills say so with ``changes_nothing``), so it answers at once; the same
call without ``dry_run`` waits, and nothing changes on the device (``ip -j``).
"""

from __future__ import annotations

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


async def test_a_dry_run_does_not_wait_for_an_approval(
    skillrack_client: AgentClient, lab: Lab
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
