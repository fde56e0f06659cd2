"""State in the RFC 7951 JSON encoding of the IETF models, and record provenance.

``ietf-interfaces`` (RFC 8343) with ``ietf-ip`` (RFC 8344) for interfaces,
``ietf-routing`` (RFC 8349) with its IPv4/IPv6 unicast augments for routes.
RFC 7951: a top-level member and a member from another module than its
parent's are qualified (``ietf-ip:ipv4``); 64-bit integers are strings; an
``empty`` leaf is ``[null]``; identities are ``module:name``.  Leaves the
models lack (the kernel's protocol name, a route's metric) are qualified
with this plugin's module name, ``skillrack-linux``, as RFC 7951 does for any
augmenting module: ``schemas/yang/skillrack-linux.yang`` declares them, and
the schemas are generated from it with the IETF modules.  The state tree's
next-hop-list entries have no ``index`` (only the configuration's do).
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import socket
from typing import Any

from .netlink import (
    RTN_BLACKHOLE,
    RTN_PROHIBIT,
    RTN_UNREACHABLE,
    Link,
    Route,
)

AGENT = "skillrack-linux"
OWN = "skillrack-linux"
ARPHRD_ETHER, ARPHRD_LOOPBACK = 1, 772

#: IF_OPER_* as pyroute2 names them -> ietf-interfaces oper-status.
OPER_STATUS = {
    "UP": "up",
    "DOWN": "down",
    "LOWERLAYERDOWN": "lower-layer-down",
    "TESTING": "testing",
    "DORMANT": "dormant",
    "NOTPRESENT": "not-present",
    "UNKNOWN": "unknown",
}
SPECIAL_NEXT_HOP = {
    RTN_BLACKHOLE: "blackhole",
    RTN_UNREACHABLE: "unreachable",
    RTN_PROHIBIT: "prohibit",
}


def timestamp(when: dt.datetime) -> str:
    """RFC 3339 ``date-time`` in UTC, in milliseconds."""
    return when.astimezone(dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def now() -> str:
    return timestamp(dt.datetime.now(dt.UTC))


def boot_time() -> str:
    """When the kernel started: the counters' ``discontinuity-time`` (no reset since)."""
    with open("/proc/stat", encoding="ascii") as stat:
        for line in stat:
            if line.startswith("btime "):
                return timestamp(dt.datetime.fromtimestamp(int(line.split()[1]), dt.UTC))
    return timestamp(dt.datetime.fromtimestamp(0, dt.UTC))


def producer(skill_id: str, version: str = "1.0") -> dict[str, str]:
    return {"agent": AGENT, "skill_id": skill_id, "skill_version": version}


def interface_type(link: Link) -> str:
    if link.arphrd == ARPHRD_LOOPBACK:
        return "iana-if-type:softwareLoopback"
    if link.kind == "bridge":
        return "iana-if-type:bridge"
    if link.arphrd == ARPHRD_ETHER:
        return "iana-if-type:ethernetCsmacd"
    return "iana-if-type:other"


def statistics(stats: dict[str, int], discontinuity: str) -> dict[str, str | int]:
    """ietf-interfaces ``statistics`` from the kernel's 64-bit link statistics.

    The model's octet and packet counters are ``counter64`` (RFC 7951: decimal
    strings); its discard and error counters are ``counter32`` (JSON numbers), which
    wrap at 2^32 as a 32-bit counter does.
    """

    def get(key: str) -> int:
        return stats.get(key, 0)

    def counter32(key: str) -> int:
        return get(key) % 2**32

    in_multicast = get("multicast")
    return {
        "discontinuity-time": discontinuity,
        "in-octets": str(get("rx_bytes")),
        "in-unicast-pkts": str(max(get("rx_packets") - in_multicast, 0)),
        "in-multicast-pkts": str(in_multicast),
        "in-discards": counter32("rx_dropped"),
        "in-errors": counter32("rx_errors"),
        "out-octets": str(get("tx_bytes")),
        "out-unicast-pkts": str(get("tx_packets")),
        "out-discards": counter32("tx_dropped"),
        "out-errors": counter32("tx_errors"),
    }


def interface(link: Link, discontinuity: str) -> dict[str, Any]:
    """One ``interface`` list entry of ``ietf-interfaces:interfaces`` (config and state)."""
    entry: dict[str, Any] = {
        "name": link.name,
        "type": interface_type(link),
        "enabled": link.admin_up,
        "admin-status": "up" if link.admin_up else "down",
        "oper-status": OPER_STATUS.get(link.operstate, "unknown"),
        "if-index": link.index,
    }
    if link.mac:
        entry["phys-address"] = link.mac
    entry["statistics"] = statistics(link.stats, discontinuity)
    v4 = [a for a in link.addresses if a.family == socket.AF_INET]
    v6 = [a for a in link.addresses if a.family == socket.AF_INET6]
    ipv4: dict[str, Any] = {}
    if 68 <= link.mtu <= 65535:
        ipv4["mtu"] = link.mtu
    ipv4["address"] = [{"ip": a.ip, "prefix-length": a.prefix_length} for a in v4]
    ipv6: dict[str, Any] = {}
    if link.mtu >= 1280:
        ipv6["mtu"] = link.mtu
    ipv6["address"] = [{"ip": a.ip, "prefix-length": a.prefix_length} for a in v6]
    entry["ietf-ip:ipv4"] = ipv4
    entry["ietf-ip:ipv6"] = ipv6
    entry[f"{OWN}:mtu"] = link.mtu
    return entry


def _unicast_module(prefix: str) -> str:
    version = ipaddress.ip_network(prefix).version
    return f"ietf-ipv{version}-unicast-routing"


#: The route origins ``schemas/yang/skillrack-linux.yang`` declares an identity for (the
#: kernel's rt_protos names and FRR's route types); tests/test_yang_schemas.py keeps the two
#: equal.  Any other name is ``skillrack-linux:other``: an identityref names a declared one.
PROTOCOL_IDENTITIES = frozenset({
    "unspec", "redirect", "kernel", "gated", "ra", "mrt", "zebra", "bird", "dnrouted", "xorp",
    "ntk", "dhcp", "babel", "keepalived", "bgp", "isis", "ospf", "rip", "eigrp", "local",
    "ripng", "ospf6", "pim", "nhrp", "hsls", "olsr", "table", "table-direct", "ldp", "vnc",
    "vnc-direct", "vnc-rn", "bgp-direct", "bgp-direct-to-nve-groups", "sharp", "pbr", "bfd",
    "openfabric", "vrrp", "nhg", "srte", "unknown",
})  # fmt: skip


def _own_protocol(protocol: str) -> str:
    return f"{OWN}:{protocol if protocol in PROTOCOL_IDENTITIES else 'other'}"


def kernel_source_protocol(protocol: str) -> str:
    if protocol == "kernel":
        return "ietf-routing:direct"
    if protocol in ("static", "boot"):
        return "ietf-routing:static"
    return _own_protocol(protocol)


def frr_source_protocol(protocol: str) -> str:
    if protocol == "connected":
        return "ietf-routing:direct"
    if protocol == "static":
        return "ietf-routing:static"
    return _own_protocol(protocol)


def kernel_route(route: Route) -> dict[str, Any]:
    """A kernel route as an ietf-routing ``route`` entry."""
    module = _unicast_module(route.prefix)
    next_hop: dict[str, Any]
    if route.kind in SPECIAL_NEXT_HOP:
        next_hop = {"special-next-hop": SPECIAL_NEXT_HOP[route.kind]}
    elif route.next_hops:
        next_hop = {
            "next-hop-list": {
                "next-hop": [
                    {
                        **({"outgoing-interface": dev} if dev else {}),
                        **({f"{module}:address": gw} if gw else {}),
                    }
                    for gw, dev in route.next_hops
                ]
            }
        }
    else:
        next_hop = {}
        if route.interface:
            next_hop["outgoing-interface"] = route.interface
        if route.gateway:
            next_hop[f"{module}:next-hop-address"] = route.gateway
    entry: dict[str, Any] = {
        f"{module}:destination-prefix": route.prefix,
        "source-protocol": kernel_source_protocol(route.protocol),
        "active": [None],
        "next-hop": next_hop,
        f"{OWN}:protocol": route.protocol,
    }
    if route.metric is not None:
        entry[f"{OWN}:metric"] = route.metric
    return entry


def frr_route(prefix: str, entry: dict[str, Any]) -> dict[str, Any]:
    """One route of ``show ip route json`` as an ietf-routing ``route`` entry."""
    module = _unicast_module(prefix)
    hops = []
    for hop in entry.get("nexthops", ()):
        one: dict[str, Any] = {}
        if hop.get("interfaceName"):
            one["outgoing-interface"] = hop["interfaceName"]
        if hop.get("ip"):
            one[f"{module}:address"] = hop["ip"]
        if hop.get("unreachable") or hop.get("blackhole"):
            one[f"{OWN}:special"] = "blackhole" if hop.get("blackhole") else "unreachable"
        hops.append(one)
    route: dict[str, Any] = {
        f"{module}:destination-prefix": str(ipaddress.ip_network(prefix)),
        "route-preference": int(entry.get("distance", 0)),
        "source-protocol": frr_source_protocol(str(entry.get("protocol", "unknown"))),
        "next-hop": {"next-hop-list": {"next-hop": hops}},
        f"{OWN}:protocol": str(entry.get("protocol", "unknown")),
        f"{OWN}:metric": int(entry.get("metric", 0)),
        f"{OWN}:installed": bool(entry.get("installed", False)),
    }
    if entry.get("selected"):
        route["active"] = [None]
    return route


def rib(name: str, prefix_module: str, routes: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "name": name,
        "address-family": f"{prefix_module}:{prefix_module.split('-')[1]}-unicast",
        "routes": {"route": routes},
    }


def destination(route: dict[str, Any]) -> str:
    for key, value in route.items():
        if key.endswith(":destination-prefix"):
            return str(value)
    raise KeyError("destination-prefix")
