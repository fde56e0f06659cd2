"""The observation skills against the lab, each checked with ip -j or vtysh json."""

from __future__ import annotations

import ipaddress
import subprocess
from typing import Any

import pytest
from lab import Lab

from skillrack import SkillCallError
from skillrack.testing import AgentClient


def _entries(result: Any) -> dict[str, Any]:
    return {e["name"]: e for e in result["ietf-interfaces:interfaces"]["interface"]}


async def test_get_interfaces_matches_ip_link_and_addr(
    skillrack_client: AgentClient, lab: Lab
) -> None:
    # Counters only grow: the plugin's read lies between a read by ip before the call and
    # one after it (hellos and neighbour discovery keep the counters moving).
    before = {link["ifname"]: link for link in lab.ip("r2", "-s", "link", "show")}
    outcome = await skillrack_client.invoke("get_interfaces", {"device_id": "r2"})
    assert outcome.state == "TASK_STATE_COMPLETED"
    entries = _entries(outcome.result)
    links = {link["ifname"]: link for link in lab.ip("r2", "-s", "link", "show")}
    addrs = {a["ifname"]: a for a in lab.ip("r2", "addr", "show")}
    assert set(entries) == set(links) == {"lo", "r2-r1", "r2-r3"}
    for name, link in links.items():
        entry = entries[name]
        assert entry["if-index"] == link["ifindex"]
        assert entry["admin-status"] == ("up" if "UP" in link["flags"] else "down")
        assert entry["oper-status"] == link["operstate"].lower().replace(
            "lowerlayerdown", "lower-layer-down"
        )
        assert entry["skillrack-linux:mtu"] == link["mtu"]
        assert entry.get("phys-address") == link["address"]
        stats = entry["statistics"]
        assert int(stats["in-octets"]) >= 0 and isinstance(stats["in-octets"], str)
        assert int(stats["in-errors"]) == link["stats64"]["rx"]["errors"]
        v4 = {
            (a["local"], a["prefixlen"]) for a in addrs[name]["addr_info"] if a["family"] == "inet"
        }
        v6 = {
            (a["local"], a["prefixlen"]) for a in addrs[name]["addr_info"] if a["family"] == "inet6"
        }
        assert {(a["ip"], a["prefix-length"]) for a in entry["ietf-ip:ipv4"]["address"]} == v4
        assert {(a["ip"], a["prefix-length"]) for a in entry["ietf-ip:ipv6"]["address"]} == v6
    assert ("10.0.12.2", 30) in {
        (a["ip"], a["prefix-length"]) for a in entries["r2-r1"]["ietf-ip:ipv4"]["address"]
    }
    after = {link["ifname"]: link for link in lab.ip("r2", "-s", "link", "show")}
    for name, entry in entries.items():
        seen = int(entry["statistics"]["in-octets"])
        assert (
            before[name]["stats64"]["rx"]["bytes"] <= seen <= after[name]["stats64"]["rx"]["bytes"]
        )
    # One supporting record per interface, referenced by the result.
    refs = outcome.result["supporting_record_refs"]
    assert len(refs) == 3 and set(refs) == set(outcome.records)
    for ref in refs:
        assert outcome.record_kinds[ref] == "interface-observation"
        [entry] = outcome.records[ref]["ietf-interfaces:interfaces"]["interface"]
        assert entry == entries[entry["name"]]


async def test_get_interfaces_selects_and_refuses_unknown_names(
    skillrack_client: AgentClient,
) -> None:
    outcome = await skillrack_client.invoke(
        "get_interfaces", {"device_id": "r1", "interfaces": ["r1-r2"]}
    )
    assert list(_entries(outcome.result)) == ["r1-r2"]
    with pytest.raises(SkillCallError) as info:
        await skillrack_client.invoke("get_interfaces", {"device_id": "r1", "interfaces": ["eth9"]})
    assert info.value.code == "constraint_rejected"
    assert [d["instance_path"] for d in info.value.details] == ["/interfaces/0"]


async def test_evaluate_interface_health_judges_traffic_in_the_window(
    skillrack_client: AgentClient, lab: Lab
) -> None:
    before = {link["ifname"]: link for link in lab.ip("r1", "-s", "link", "show")}
    # Traffic of our own across the link for the whole window (BGP keepalives alone, about
    # 700 bit/s, fell under the 1,000 bit/s threshold in some windows): 3 s of pings.
    pings = subprocess.Popen(
        ["ip", "netns", "exec", lab.ns("r1"), "ping", "-q", "-i", "0.05", "-c", "60", "10.0.12.2"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        outcome = await skillrack_client.invoke(
            "evaluate_interface_health",
            {
                "device_id": "r1",
                "interfaces": ["r1-r2"],
                "window_seconds": 1,
                "thresholds": {"error_rate_ppm": 10, "utilization_percent": 0.0001},
                "capacity_bps": 1_000_000_000,
            },
        )
    finally:
        pings.wait(timeout=30)
    after = {link["ifname"]: link for link in lab.ip("r1", "-s", "link", "show")}
    [one] = outcome.result["interfaces"]
    assert one["name"] == "r1-r2"
    # The pings (and BGP keepalives) cross the link within the window: traffic, no errors.
    assert one["rates"]["error_rate_ppm"] == 0
    assert one["rates"]["out_bps"] > 0 and "utilization_percent" in one["breaches"]
    assert outcome.result["degraded"] == ["r1-r2"]
    record = outcome.records[one["record_ref"]]
    first, second = (s["statistics"] for s in record["samples"])
    tx = int(second["out-octets"]) - int(first["out-octets"])
    assert tx > 0
    seen_by_ip = (
        after["r1-r2"]["stats64"]["tx"]["bytes"] - before["r1-r2"]["stats64"]["tx"]["bytes"]
    )
    assert tx <= seen_by_ip
    assert before["r1-r2"]["stats64"]["tx"]["bytes"] <= int(first["out-octets"])
    assert int(second["out-octets"]) <= after["r1-r2"]["stats64"]["tx"]["bytes"]
    seconds = outcome.result["window"]["seconds"]
    assert one["rates"]["out_bps"] == pytest.approx(tx * 8 / seconds, rel=0.01)


def _kernel_prefixes(result: Any, rib_name: str) -> set[tuple[str, str]]:
    [rib] = [r for r in result["ietf-routing:routing"]["ribs"]["rib"] if r["name"] == rib_name]
    out = set()
    for route in rib["routes"]["route"]:
        prefix = next(v for k, v in route.items() if k.endswith(":destination-prefix"))
        out.add((prefix, route["skillrack-linux:protocol"]))
    return out


def _ip_prefix(dst: str, family: int) -> str:
    if dst == "default":
        return "0.0.0.0/0" if family == 4 else "::/0"
    return str(ipaddress.ip_network(dst if "/" in dst else f"{dst}/{32 if family == 4 else 128}"))


async def test_get_routes_matches_ip_route_and_frr(skillrack_client: AgentClient, lab: Lab) -> None:
    outcome = await skillrack_client.invoke("get_routes", {"device_id": "r1"})
    result = outcome.result
    expected4 = {
        (_ip_prefix(r["dst"], 4), r.get("protocol", "boot")) for r in lab.ip("r1", "route", "show")
    }
    assert _kernel_prefixes(result, "kernel-main-ipv4") == expected4
    expected6 = {
        (_ip_prefix(r["dst"], 6), r.get("protocol", "boot"))
        for r in lab.ip("r1", "-6", "route", "show")
    }
    assert _kernel_prefixes(result, "kernel-main-ipv6") == expected6
    # BGP learnt r3's loopback through r2, and zebra installed it in the kernel.
    assert ("192.0.2.3/32", "bgp") in expected4
    frr = lab.vtysh("r1", "show ip route json")
    expected_frr = {(p, e["protocol"]) for p, entries in frr.items() for e in entries}
    assert _kernel_prefixes(result, "frr-ipv4") == expected_frr
    [rib] = [r for r in result["ietf-routing:routing"]["ribs"]["rib"] if r["name"] == "frr-ipv4"]
    [bgp] = [
        r
        for r in rib["routes"]["route"]
        if r["ietf-ipv4-unicast-routing:destination-prefix"] == "192.0.2.3/32"
    ]
    assert bgp["source-protocol"] == "skillrack-linux:bgp"
    assert bgp["route-preference"] == frr["192.0.2.3/32"][0]["distance"]
    [hop] = bgp["next-hop"]["next-hop-list"]["next-hop"]
    assert hop["ietf-ipv4-unicast-routing:address"] == "10.0.12.2"


async def test_get_routes_filters_by_prefix_and_looks_up_the_longest_match(
    skillrack_client: AgentClient, lab: Lab
) -> None:
    within = await skillrack_client.invoke(
        "get_routes", {"device_id": "r1", "prefix": "192.0.2.0/24", "sources": ["kernel"]}
    )
    assert _kernel_prefixes(within.result, "kernel-main-ipv4") == {
        ("192.0.2.2/32", "bgp"),
        ("192.0.2.3/32", "bgp"),
    }
    looked = await skillrack_client.invoke("get_routes", {"device_id": "r1", "lookup": "192.0.2.3"})
    chosen = lab.ip("r1", "route", "get", "192.0.2.3")[0]
    matches = {m["rib"]: m["route"] for m in looked.result["lookup"]["matches"]}
    kernel = matches["kernel-main-ipv4"]
    assert kernel["ietf-ipv4-unicast-routing:destination-prefix"] == "192.0.2.3/32"
    assert kernel["next-hop"]["ietf-ipv4-unicast-routing:next-hop-address"] == chosen["gateway"]
    assert kernel["next-hop"]["outgoing-interface"] == chosen["dev"]


async def test_check_reachability_pings_another_device(
    skillrack_client: AgentClient,
) -> None:
    outcome = await skillrack_client.invoke(
        "check_reachability", {"device_id": "r1", "target": "10.0.12.2", "count": 3}
    )
    result = outcome.result
    assert result["target_device_id"] == "r2"
    assert result["packets_sent"] == 3 and result["packets_received"] == 3
    assert result["loss_percent"] == 0 and result["reachable"] is True
    rtt = result["rtt_ms"]
    assert 0 <= rtt["min"] <= rtt["avg"] <= rtt["max"] < 1000
    # Through r2, by BGP: r3's loopback.
    far = await skillrack_client.invoke(
        "check_reachability", {"device_id": "r1", "target": "192.0.2.3", "count": 1}
    )
    assert far.result["target_device_id"] == "r3" and far.result["reachable"] is True


@pytest.mark.parametrize("target", ["8.8.8.8", "10.0.12.1"])
async def test_check_reachability_refuses_other_targets(
    skillrack_client: AgentClient, target: str
) -> None:
    """Only an address of *another* configured device: not the internet, not itself."""
    with pytest.raises(SkillCallError) as info:
        await skillrack_client.invoke("check_reachability", {"device_id": "r1", "target": target})
    assert info.value.code == "constraint_rejected"
    assert [d["instance_path"] for d in info.value.details] == ["/target"]


async def test_get_bgp_neighbors_matches_vtysh(skillrack_client: AgentClient, lab: Lab) -> None:
    outcome = await skillrack_client.invoke("get_bgp_neighbors", {"device_id": "r2"})
    summary = lab.vtysh("r2", "show bgp summary json")["ipv4Unicast"]
    neighbors = {n["address"]: n for n in outcome.result["neighbors"]}
    assert set(neighbors) == set(summary["peers"]) == {"10.0.12.1", "10.0.23.2"}
    assert outcome.result["local_as"] == summary["as"] == 65002
    for address, peer in summary["peers"].items():
        mine = neighbors[address]
        assert mine["remote_as"] == peer["remoteAs"]
        assert mine["state"] == peer["state"] == "Established"
        assert mine["prefixes_received"] == peer["pfxRcd"]
        assert mine["prefixes_sent"] == peer["pfxSnt"]
        assert 0 <= peer["peerUptimeMsec"] / 1000 - mine["uptime_seconds"] < 5


async def test_an_unknown_device_is_refused_with_its_pointer(
    skillrack_client: AgentClient,
) -> None:
    with pytest.raises(SkillCallError) as info:
        await skillrack_client.invoke("get_interfaces", {"device_id": "r9"})
    assert info.value.code == "constraint_rejected"
    assert [d["instance_path"] for d in info.value.details] == ["/device_id"]
