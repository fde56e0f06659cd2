"""The change skills against the lab: dry runs, applied and verified changes, confirmed
changes and their rollback, restoration after a failure mid-change, bad input.

Every state is read back with ``ip -j`` (and BGP with vtysh json), not with the plugin.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import time
from collections.abc import Iterator
from typing import Any

import pytest
from conftest import Approver
from lab import Lab

from skillrack import SkillCallError, SkillResult
from skillrack.testing import AgentClient
from skillrack_linux import netlink


def link(lab: Lab, router: str, name: str) -> dict[str, Any]:
    [found] = lab.ip(router, "link", "show", "dev", name)
    return found


def admin_up(lab: Lab, router: str, name: str) -> bool:
    return "UP" in link(lab, router, name)["flags"]


def route(lab: Lab, router: str, prefix: str) -> list[dict[str, Any]]:
    return lab.ip(router, "route", "show", prefix)  # exact match only


def session_state(lab: Lab, router: str, peer: str) -> str:
    peers = lab.vtysh(router, "show bgp summary json")["ipv4Unicast"]["peers"]
    return str(peers[peer]["state"])


async def until(check: Any, timeout: float) -> float:
    """Seconds until ``check()`` is true; fails after ``timeout``."""
    start = time.monotonic()
    while not check():
        if time.monotonic() - start > timeout:
            pytest.fail(f"not true within {timeout} s")
        await asyncio.sleep(0.05)
    return time.monotonic() - start


@pytest.fixture
def r3_link(lab: Lab) -> Iterator[str]:
    """r3's link to r2, put back as the lab had it after each test (MTU 1500, up)."""
    yield "r3-r2"
    lab.run("r3", "ip", "link", "set", "dev", "r3-r2", "mtu", "1500", "up")


async def test_dry_run_returns_the_change_and_changes_nothing(
    skillrack_client: AgentClient, lab: Lab, r3_link: str
) -> None:
    outcome = await skillrack_client.invoke(
        "set_interface_state",
        {
            "device_id": "r3",
            "interface": r3_link,
            "admin_state": "down",
            "mtu": 1400,
            "dry_run": True,
        },
    )
    result = outcome.result
    assert result["outcome"] == "dry_run" and not outcome.records
    assert result["before"]["admin_state"] == "up" and result["before"]["mtu"] == 1500
    assert result["after"]["admin_state"] == "down" and result["after"]["mtu"] == 1400
    assert admin_up(lab, "r3", r3_link) and link(lab, "r3", r3_link)["mtu"] == 1500


async def test_taking_a_link_down_drops_the_bgp_session(
    skillrack_client: AgentClient, lab: Lab, r3_link: str, approver: Approver
) -> None:
    assert session_state(lab, "r2", "10.0.23.2") == "Established"
    outcome = await skillrack_client.invoke(
        "set_interface_state", {"device_id": "r3", "interface": r3_link, "admin_state": "down"}
    )
    result = outcome.result
    assert result["outcome"] == "applied"
    assert result["after"]["admin_state"] == "down"
    assert not admin_up(lab, "r3", r3_link)
    assert approver.asked == ["set_interface_state"]
    # Before and after, as records carrying the caller and the task, and what approved it.
    refs = result["supporting_record_refs"]
    [approval] = [outcome.records[r] for r in refs if outcome.record_kinds[r] == "change-approval"]
    assert approval["approval"] == {"via": "policy", "approvers": ["approver"]}
    assert approval["task_id"] == outcome.task_id and approval["interface"] == r3_link
    phases = {
        outcome.records[ref]["phase"]: outcome.records[ref]
        for ref in refs
        if outcome.record_kinds[ref] == "interface-change"
    }
    assert set(phases) == {"before", "applied"}
    assert phases["before"]["state"]["admin_state"] == "up"
    assert phases["applied"]["state"]["admin_state"] == "down"
    assert phases["applied"]["task_id"] == outcome.task_id
    assert phases["applied"]["caller"]["identity"]
    await until(lambda: session_state(lab, "r2", "10.0.23.2") != "Established", 10)
    back = await skillrack_client.invoke(
        "set_interface_state", {"device_id": "r3", "interface": r3_link, "admin_state": "up"}
    )
    assert back.result["outcome"] == "applied" and admin_up(lab, "r3", r3_link)
    await until(lambda: session_state(lab, "r2", "10.0.23.2") == "Established", 20)


async def test_a_confirmed_change_stays(
    skillrack_client: AgentClient, lab: Lab, r3_link: str
) -> None:
    asked = await skillrack_client.invoke(
        "set_interface_state",
        {"device_id": "r3", "interface": r3_link, "mtu": 1400, "confirm_within": 30},
    )
    assert asked.state == "TASK_STATE_INPUT_REQUIRED"
    assert asked.input_request["needed"] == "confirmation"
    assert link(lab, "r3", r3_link)["mtu"] == 1400
    done = await skillrack_client.respond(
        skillrack_client.url, "set_interface_state", asked.task_id, {"confirm": True}
    )
    assert done.state == "TASK_STATE_COMPLETED"
    assert done.result["outcome"] == "confirmed"
    assert link(lab, "r3", r3_link)["mtu"] == 1400


async def ended(client: AgentClient, skill_id: str, task_id: str, timeout: float) -> SkillResult:
    """The task once it ended, looked at with GetTask only (nothing is sent to it)."""
    start = time.monotonic()
    while True:
        seen = await client.resume(client.url, skill_id, task_id)
        if seen.state != "TASK_STATE_INPUT_REQUIRED":
            return seen
        if time.monotonic() - start > timeout:
            pytest.fail(f"task {task_id} still waits after {timeout} s")
        await asyncio.sleep(0.05)


@pytest.mark.skillrack_server
async def test_an_unconfirmed_change_rolls_back_by_itself(
    skillrack_client: AgentClient, lab: Lab, r3_link: str
) -> None:
    asked = await skillrack_client.invoke(
        "set_interface_state",
        {"device_id": "r3", "interface": r3_link, "mtu": 1400, "confirm_within": 2},
    )
    assert asked.state == "TASK_STATE_INPUT_REQUIRED"
    deadline = dt.datetime.fromisoformat(asked.input_request["confirm_by"])
    assert link(lab, "r3", r3_link)["mtu"] == 1400
    # Nobody confirms, nobody sends anything: the previous MTU is back, read by ip -j,
    # within the deadline plus one second...
    await until(lambda: link(lab, "r3", r3_link)["mtu"] == 1500, 4)
    assert dt.datetime.now(dt.UTC) <= deadline + dt.timedelta(seconds=1)
    # ...and the task ended by itself, saying so: before, applied and restored.
    done = await ended(skillrack_client, "set_interface_state", asked.task_id, 1.5)
    assert dt.datetime.now(dt.UTC) <= deadline + dt.timedelta(seconds=1)
    assert done.state == "TASK_STATE_COMPLETED"
    result = done.result
    assert result["outcome"] == "rolled_back"
    assert result["before"]["mtu"] == 1500 and result["after"]["mtu"] == 1400
    assert result["restored"]["mtu"] == 1500
    assert [ref.rsplit("-", 1)[-1] for ref in result["supporting_record_refs"]] == [
        "approval",
        "before",
        "applied",
        "restored",
    ]
    [restored] = [done.records[ref] for ref in done.records if ref.endswith("-restored")]
    assert restored["state"]["mtu"] == link(lab, "r3", r3_link)["mtu"] == 1500
    # A confirmation now is too late: the task has ended.
    with pytest.raises(SkillCallError):
        await skillrack_client.respond(
            skillrack_client.url, "set_interface_state", asked.task_id, {"confirm": True}
        )
    assert link(lab, "r3", r3_link)["mtu"] == 1500


async def test_declining_rolls_back_at_once(
    skillrack_client: AgentClient, lab: Lab, r3_link: str
) -> None:
    asked = await skillrack_client.invoke(
        "set_interface_state",
        {"device_id": "r3", "interface": r3_link, "mtu": 1300, "confirm_within": 60},
    )
    assert link(lab, "r3", r3_link)["mtu"] == 1300
    done = await skillrack_client.respond(
        skillrack_client.url, "set_interface_state", asked.task_id, {"confirm": False}
    )
    assert done.result["outcome"] == "rolled_back"
    assert link(lab, "r3", r3_link)["mtu"] == 1500


async def test_a_failure_mid_change_restores_the_previous_state(
    skillrack_client: AgentClient, lab: Lab, r3_link: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The MTU is set for real, then the admin-state step fails: the MTU is put back."""
    real = netlink.set_link
    calls: list[dict[str, Any]] = []

    def failing(netns: str, name: str, *, up: bool | None = None, mtu: int | None = None) -> None:
        calls.append({"up": up, "mtu": mtu})
        if len(calls) == 1:
            real(netns, name, mtu=mtu)  # the first step happens...
            raise netlink.KernelRefused(22, "injected")  # ...the second fails
        real(netns, name, up=up, mtu=mtu)

    monkeypatch.setattr(netlink, "set_link", failing)
    with pytest.raises(SkillCallError) as info:
        await skillrack_client.invoke(
            "set_interface_state",
            {"device_id": "r3", "interface": r3_link, "admin_state": "down", "mtu": 1400},
        )
    assert info.value.code == "constraint_rejected"
    assert "restored" in info.value.message
    assert calls[1] == {"up": True, "mtu": 1500}
    assert link(lab, "r3", r3_link)["mtu"] == 1500 and admin_up(lab, "r3", r3_link)


@pytest.mark.parametrize(
    ("arguments", "pointer"),
    [
        ({"interface": "r3-r2", "mtu": 70000}, "/mtu"),  # beyond the veth's 65535
        ({"interface": "eth7", "admin_state": "down"}, "/interface"),
    ],
)
async def test_values_the_link_cannot_take_are_refused_with_a_pointer(
    skillrack_client: AgentClient, lab: Lab, arguments: dict[str, Any], pointer: str
) -> None:
    before = lab.ip("r3", "link", "show")
    with pytest.raises(SkillCallError) as info:
        await skillrack_client.invoke("set_interface_state", {"device_id": "r3", **arguments})
    assert info.value.code == "constraint_rejected"
    assert [d["instance_path"] for d in info.value.details] == [pointer]
    assert lab.ip("r3", "link", "show") == before


async def test_static_route_add_and_remove(skillrack_client: AgentClient, lab: Lab) -> None:
    prefix = "198.51.100.0/24"
    add = {
        "device_id": "r1",
        "action": "add",
        "prefix": prefix,
        "next_hop": {"address": "10.0.12.2"},
    }
    dry = await skillrack_client.invoke("set_static_route", {**add, "dry_run": True})
    assert dry.result["before"] == {"present": False} and dry.result["after"]["present"]
    assert route(lab, "r1", prefix) == []
    added = await skillrack_client.invoke("set_static_route", add)
    assert added.result["outcome"] == "applied"
    [seen] = route(lab, "r1", prefix)
    assert seen["gateway"] == "10.0.12.2" and seen["protocol"] == "static"
    assert added.result["after"]["route"]["next-hop"] == {
        "outgoing-interface": seen["dev"],
        "ietf-ipv4-unicast-routing:next-hop-address": "10.0.12.2",
    }
    with pytest.raises(SkillCallError) as info:
        await skillrack_client.invoke("set_static_route", add)
    assert info.value.code == "constraint_rejected"
    assert [d["instance_path"] for d in info.value.details] == ["/prefix"]
    removed = await skillrack_client.invoke(
        "set_static_route", {"device_id": "r1", "action": "remove", "prefix": prefix}
    )
    assert removed.result["outcome"] == "applied" and removed.result["after"] == {"present": False}
    assert route(lab, "r1", prefix) == []
    with pytest.raises(SkillCallError) as info:
        await skillrack_client.invoke(
            "set_static_route", {"device_id": "r1", "action": "remove", "prefix": prefix}
        )
    assert info.value.code == "constraint_rejected"
    assert [d["instance_path"] for d in info.value.details] == ["/prefix"]


async def test_an_unconfirmed_route_is_removed_again(
    skillrack_client: AgentClient, lab: Lab
) -> None:
    prefix = "203.0.113.0/24"
    asked = await skillrack_client.invoke(
        "set_static_route",
        {
            "device_id": "r1",
            "action": "add",
            "prefix": prefix,
            "next_hop": {"blackhole": True},
            "confirm_within": 1,
        },
    )
    assert asked.state == "TASK_STATE_INPUT_REQUIRED"
    [seen] = route(lab, "r1", prefix)
    assert seen["type"] == "blackhole"
    await until(lambda: route(lab, "r1", prefix) == [], 2.5)
    done = await ended(skillrack_client, "set_static_route", asked.task_id, 1.5)
    assert done.result["outcome"] == "rolled_back"
    assert done.result["restored"] == {"present": False}


@pytest.mark.parametrize(
    ("arguments", "code", "pointer"),
    [
        ({"prefix": "10.0.0.1/24"}, "input_invalid", "/prefix"),  # host bits set
        (
            {"prefix": "2001:db8::/32", "next_hop": {"address": "10.0.12.2"}},
            "input_invalid",
            "/next_hop/address",
        ),
        (
            {"prefix": "10.0.0.0/24", "next_hop": {"interface": "nope0"}},
            "constraint_rejected",
            "/next_hop/interface",
        ),
    ],
)
async def test_bad_routes_are_refused_with_a_pointer(
    skillrack_client: AgentClient, lab: Lab, arguments: dict[str, Any], code: str, pointer: str
) -> None:
    before = lab.ip("r1", "route", "show")
    request = {"device_id": "r1", "action": "add", "next_hop": {"address": "10.0.12.2"}}
    with pytest.raises(SkillCallError) as info:
        await skillrack_client.invoke("set_static_route", {**request, **arguments})
    assert info.value.code == code
    assert [d["instance_path"] for d in info.value.details] == [pointer]
    assert lab.ip("r1", "route", "show") == before


async def test_an_unknown_device_is_refused_before_any_approval(
    skillrack_client: AgentClient, approver: Approver
) -> None:
    """The issue's 24 s lost: nobody is asked to approve a change on a device not managed here."""
    with pytest.raises(SkillCallError) as info:
        await skillrack_client.invoke(
            "set_interface_state", {"device_id": "r9", "interface": "r9-r1", "admin_state": "down"}
        )
    assert info.value.code == "constraint_rejected"
    assert [d["instance_path"] for d in info.value.details] == ["/device_id"]
    assert approver.asked == []
