"""The observation skills (authority ``observe_only``): interfaces, health, routes, ICMP, BGP.

Every answer is read at call time from the kernel (netlink) or FRR (vtysh
JSON) and encoded as the IETF models' RFC 7951 JSON (:mod:`.encoding`).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import ipaddress
import socket
import time
from collections.abc import Mapping
from typing import Any

import icmplib

from skillrack import ConditionError, ErrorCode

from . import encoding, frr, netlink
from .devices import Devices, kernel, rejected
from .settings import Device

INTERFACE_KIND = "interface-observation"
SAMPLES_KIND = "interface-counter-samples"


def _select(links: list[netlink.Link], names: list[str] | None) -> list[netlink.Link]:
    if names is None:
        return links
    have = {link.name: link for link in links}
    for i, name in enumerate(names):
        if name not in have:
            raise rejected(f"the device has no interface {name!r}", f"/interfaces/{i}")
    return [have[name] for name in names]


async def frr_json(device: Device, command: str) -> Any:
    try:
        return await frr.show(device.pathspace, command)
    except frr.FrrUnavailable as exc:
        raise ConditionError(
            ErrorCode.CONSTRAINT_REJECTED,
            f"device {device.device_id!r}: FRR cannot be asked: {exc}",
            pointer="/device_id",
        ) from None


class Observe:
    """The observation handlers of one agent's devices."""

    def __init__(self, devices: Devices) -> None:
        self.devices = devices

    async def get_interfaces(self, arguments: Mapping[str, Any], context: Any) -> Any:
        device = self.devices.get(arguments["device_id"])
        links = await kernel(device, lambda: netlink.links(device.netns))
        observed_at = encoding.now()
        discontinuity = encoding.boot_time()
        entries = []
        refs = []
        for link in _select(links, arguments.get("interfaces")):
            entry = encoding.interface(link, discontinuity)
            entries.append(entry)
            record_id = f"interface-{device.device_id}-{link.name}"
            refs.append(
                await context.publish_record(
                    INTERFACE_KIND,
                    {
                        "record_id": record_id,
                        "device_id": device.device_id,
                        "observed_at": observed_at,
                        "producer": encoding.producer("get_interfaces"),
                        "source": {"system": "linux-netlink", "netns": device.netns},
                        "ietf-interfaces:interfaces": {"interface": [entry]},
                    },
                    artifact_id=record_id,
                )
            )
        return {
            "device_id": device.device_id,
            "observed_at": observed_at,
            "ietf-interfaces:interfaces": {"interface": entries},
            "supporting_record_refs": refs,
        }

    async def evaluate_interface_health(self, arguments: Mapping[str, Any], context: Any) -> Any:
        device = self.devices.get(arguments["device_id"])
        names = arguments.get("interfaces")
        window = float(arguments["window_seconds"])
        thresholds: Mapping[str, float] = arguments["thresholds"]
        capacity = arguments.get("capacity_bps")
        first = _select(await kernel(device, lambda: netlink.links(device.netns)), names)
        started, t0 = encoding.now(), time.monotonic()
        await asyncio.sleep(window)
        second = {
            link.name: link for link in await kernel(device, lambda: netlink.links(device.netns))
        }
        ended, elapsed = encoding.now(), time.monotonic() - t0
        discontinuity = encoding.boot_time()
        results, refs, degraded = [], [], []
        for before in first:
            after = second.get(before.name)
            if after is None:  # removed during the window
                raise rejected(f"interface {before.name!r} disappeared during the window", "")
            rates = _rates(before.stats, after.stats, elapsed, capacity)
            breaches = [
                name
                for name in ("error_rate_ppm", "discard_rate_ppm", "utilization_percent")
                if name in thresholds
                and rates.get(name) is not None
                and rates[name] > thresholds[name]
            ]
            record_id = f"samples-{device.device_id}-{before.name}-{context.task_id}"
            ref = await context.publish_record(
                SAMPLES_KIND,
                {
                    "record_id": record_id,
                    "device_id": device.device_id,
                    "interface": before.name,
                    "producer": encoding.producer("evaluate_interface_health"),
                    "samples": [
                        {
                            "observed_at": started,
                            "statistics": encoding.statistics(before.stats, discontinuity),
                        },
                        {
                            "observed_at": ended,
                            "statistics": encoding.statistics(after.stats, discontinuity),
                        },
                    ],
                },
                artifact_id=record_id,
            )
            refs.append(ref)
            if breaches:
                degraded.append(before.name)
            results.append(
                {
                    "name": before.name,
                    "healthy": not breaches,
                    "rates": rates,
                    "breaches": breaches,
                    "record_ref": ref,
                }
            )
        return {
            "device_id": device.device_id,
            "window": {"start": started, "end": ended, "seconds": round(elapsed, 3)},
            "interfaces": results,
            "degraded": degraded,
            "supporting_record_refs": refs,
        }

    async def get_routes(self, arguments: Mapping[str, Any], context: Any) -> Any:
        device = self.devices.get(arguments["device_id"])
        within = _network(arguments.get("prefix"), "/prefix")
        lookup = _address(arguments.get("lookup"), "/lookup")
        sources = set(arguments.get("sources", ("kernel", "frr")))
        if sources == {"frr"} and not device.frr:
            raise rejected(f"device {device.device_id!r} runs no FRR instance", "/sources")
        ribs: list[dict[str, Any]] = []
        if "kernel" in sources:
            found = await kernel(device, lambda: netlink.routes(device.netns))
            for version, module in (
                (4, "ietf-ipv4-unicast-routing"),
                (6, "ietf-ipv6-unicast-routing"),
            ):
                family = socket.AF_INET if version == 4 else socket.AF_INET6
                routes = [encoding.kernel_route(r) for r in found if r.family == family]
                ribs.append(encoding.rib(f"kernel-main-ipv{version}", module, routes))
        if "frr" in sources and device.frr:
            for version, module, command in (
                (4, "ietf-ipv4-unicast-routing", "show ip route json"),
                (6, "ietf-ipv6-unicast-routing", "show ipv6 route json"),
            ):
                table = await frr_json(device, command)
                routes = [
                    encoding.frr_route(prefix, entry)
                    for prefix, entries in table.items()
                    for entry in entries
                ]
                ribs.append(encoding.rib(f"frr-ipv{version}", module, routes))
        if within is not None:
            for rib in ribs:
                rib["routes"]["route"] = [
                    r
                    for r in rib["routes"]["route"]
                    if _within(ipaddress.ip_network(encoding.destination(r)), within)
                ]
        result: dict[str, Any] = {
            "device_id": device.device_id,
            "observed_at": encoding.now(),
            "ietf-routing:routing": {"ribs": {"rib": ribs}},
        }
        if lookup is not None:
            result["lookup"] = {"address": str(lookup), "matches": _longest(ribs, lookup)}
        return result

    async def check_reachability(self, arguments: Mapping[str, Any], context: Any) -> Any:
        device = self.devices.get(arguments["device_id"])
        target = _address(arguments["target"], "/target")
        assert target is not None
        owner = await self._owner(target, device)
        count = int(arguments.get("count", 3))
        timeout = float(arguments.get("timeout_seconds", 1))
        host = await ping(device, str(target), count, timeout)
        received = host.packets_received
        return {
            "device_id": device.device_id,
            "target": str(target),
            "target_device_id": owner,
            "packets_sent": host.packets_sent,
            "packets_received": received,
            "loss_percent": round(host.packet_loss * 100, 3),
            "rtt_ms": (
                {"min": host.min_rtt, "avg": host.avg_rtt, "max": host.max_rtt}
                if received
                else None
            ),
            "reachable": received > 0,
            "observed_at": encoding.now(),
        }

    async def _owner(self, target: Any, source: Device) -> str:
        """The other configured device that holds ``target``; anything else is refused."""
        for other in self.devices:
            if other.device_id == source.device_id:
                continue
            try:
                links = await asyncio.to_thread(netlink.links, other.netns)
            except (netlink.NamespaceMissing, netlink.NotPermitted):
                continue
            if any(ipaddress.ip_address(a.ip) == target for link in links for a in link.addresses):
                return other.device_id
        raise rejected(
            f"{target} is not an address of another device this agent manages; "
            "check_reachability only probes configured devices",
            "/target",
        )

    async def get_bgp_neighbors(self, arguments: Mapping[str, Any], context: Any) -> Any:
        device = self.devices.get(arguments["device_id"])
        if not device.frr:
            raise rejected(f"device {device.device_id!r} runs no FRR instance", "/device_id")
        summary = await frr_json(device, "show bgp summary json")
        neighbors = []
        local_as = router_id = None
        for family, table in sorted(summary.items()):
            if not isinstance(table, Mapping) or "peers" not in table:
                continue
            local_as = table.get("as", local_as)
            router_id = table.get("routerId", router_id)
            for address, peer in sorted(table["peers"].items()):
                neighbors.append(
                    {
                        "address": address,
                        "address_family": family,
                        "remote_as": peer.get("remoteAs", 0),
                        "state": peer.get("state", "unknown"),
                        "established": peer.get("state") == "Established",
                        "uptime_seconds": int(peer.get("peerUptimeMsec", 0)) / 1000,
                        "prefixes_received": int(peer.get("pfxRcd", 0)),
                        "prefixes_sent": int(peer.get("pfxSnt", 0)),
                    }
                )
        return {
            "device_id": device.device_id,
            "observed_at": encoding.now(),
            "local_as": local_as,
            "router_id": router_id,
            "neighbors": neighbors,
        }


def _rates(
    before: Mapping[str, int], after: Mapping[str, int], seconds: float, capacity: int | None
) -> dict[str, Any]:
    def delta(key: str) -> int:
        return max(after.get(key, 0) - before.get(key, 0), 0)

    packets = delta("rx_packets") + delta("tx_packets")
    errors = delta("rx_errors") + delta("tx_errors")
    discards = delta("rx_dropped") + delta("tx_dropped")
    seen = packets + errors + discards
    in_bps = delta("rx_bytes") * 8 / seconds
    out_bps = delta("tx_bytes") * 8 / seconds
    return {
        "in_bps": round(in_bps, 3),
        "out_bps": round(out_bps, 3),
        "error_rate_ppm": round(errors * 1e6 / seen, 3) if seen else 0.0,
        "discard_rate_ppm": round(discards * 1e6 / seen, 3) if seen else 0.0,
        "utilization_percent": (
            round(max(in_bps, out_bps) * 100 / capacity, 6) if capacity else None
        ),
        "packets": str(packets),
    }


def _network(value: str | None, pointer: str) -> Any:
    if value is None:
        return None
    try:
        return ipaddress.ip_network(value)
    except ValueError:
        raise ConditionError(
            ErrorCode.INPUT_INVALID,
            f"{value!r} is not a prefix (address/length with no host bits set)",
            pointer=pointer,
        ) from None


def _address(value: str | None, pointer: str) -> Any:
    if value is None:
        return None
    try:
        return ipaddress.ip_address(value)
    except ValueError:
        raise ConditionError(
            ErrorCode.INPUT_INVALID, f"{value!r} is not an IP address", pointer=pointer
        ) from None


def _within(network: Any, container: Any) -> bool:
    return bool(network.version == container.version and network.subnet_of(container))


def _longest(ribs: list[dict[str, Any]], address: Any) -> list[dict[str, Any]]:
    matches = []
    for rib in ribs:
        best: dict[str, Any] | None = None
        best_len = -1
        for route in rib["routes"]["route"]:
            if "active" not in route:
                continue
            network = ipaddress.ip_network(encoding.destination(route))
            inside = network.version == address.version and address in network
            if inside and network.prefixlen > best_len:
                best, best_len = route, network.prefixlen
        if best is not None:
            matches.append({"rib": rib["name"], "route": best})
    return matches


async def ping(device: Device, address: str, count: int, timeout: float) -> Any:
    """icmplib's echo on a thread of its own inside the device's namespace."""

    def run() -> Any:
        return netlink.in_namespace(
            device.netns,
            lambda: icmplib.ping(
                address, count=count, interval=0.2, timeout=timeout, privileged=True
            ),
        )

    loop = asyncio.get_running_loop()
    # A fresh thread: setns(2) moves the thread, which must not go back to a shared pool.
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        try:
            return await loop.run_in_executor(pool, run)
        except netlink.NamespaceMissing:
            raise rejected(
                f"device {device.device_id!r}: network namespace {device.netns!r} does not exist",
                "/device_id",
            ) from None
        except (netlink.NotPermitted, icmplib.SocketPermissionError):
            raise rejected(
                f"device {device.device_id!r}: this agent may not send ICMP in namespace "
                f"{device.netns!r} (it lacks CAP_NET_RAW or CAP_SYS_ADMIN)",
                "/device_id",
            ) from None
