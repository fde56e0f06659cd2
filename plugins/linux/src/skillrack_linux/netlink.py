"""The kernel's view of one device, through netlink (pyroute2) inside its network namespace.

Every function here is blocking (pyroute2's sockets are synchronous); the
skills call them with ``asyncio.to_thread`` so that the event loop never
waits on the kernel.  A namespace is opened with ``flags=0``: pyroute2's
default would *create* a namespace that does not exist, and a device whose
namespace is gone must be reported, not silently replaced by an empty one.

Nothing is parsed from ``ip``'s text: links, addresses and routes come from
netlink messages, ICMP echoes from :mod:`icmplib` on a socket opened inside
the namespace.
"""

from __future__ import annotations

import errno
import ipaddress
import os
import socket
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pyroute2 import IPRoute
from pyroute2.netlink.exceptions import NetlinkError
from pyroute2.netns import setns

T = TypeVar("T")

#: Where ``ip netns add`` names its namespaces.
NETNS_DIR = "/run/netns"
#: The main routing table (``ip route`` without ``table``).
MAIN_TABLE = 254
IFF_UP = 0x1
RTN_UNICAST, RTN_BLACKHOLE, RTN_UNREACHABLE, RTN_PROHIBIT = 1, 6, 7, 8
RTPROT_STATIC = 4

#: /etc/iproute2/rt_protos: the protocol numbers ``ip -j route`` prints by name.
PROTOCOLS = {
    0: "unspec", 1: "redirect", 2: "kernel", 3: "boot", 4: "static", 8: "gated", 9: "ra",
    10: "mrt", 11: "zebra", 12: "bird", 13: "dnrouted", 14: "xorp", 15: "ntk", 16: "dhcp",
    42: "babel", 99: "keepalived", 186: "bgp", 187: "isis", 188: "ospf", 189: "rip",
    192: "eigrp",
}  # fmt: skip


class NamespaceMissing(Exception):
    """The device's namespace does not exist (``/run/netns/<name>``)."""


class NotPermitted(Exception):
    """The kernel refused: the agent lacks CAP_NET_ADMIN (or cannot enter the namespace)."""


class KernelRefused(Exception):
    """The kernel refused a change for another reason; ``errno`` says which."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.errno = code


@dataclass(frozen=True)
class Address:
    family: int
    ip: str
    prefix_length: int


@dataclass(frozen=True)
class Link:
    """One interface as netlink reports it."""

    index: int
    name: str
    arphrd: int
    kind: str | None
    admin_up: bool
    operstate: str
    mtu: int
    min_mtu: int | None
    max_mtu: int | None
    mac: str | None
    stats: dict[str, int]
    addresses: tuple[Address, ...] = ()


@dataclass(frozen=True)
class Route:
    """One route of the main table."""

    family: int
    prefix: str
    kind: int
    protocol: str
    metric: int | None
    gateway: str | None = None
    interface: str | None = None
    next_hops: tuple[tuple[str | None, str | None], ...] = field(default=())


def namespace_path(netns: str) -> str:
    return os.path.join(NETNS_DIR, netns)


@contextmanager
def opened(netns: str) -> Iterator[IPRoute]:
    """An IPRoute socket inside ``netns``; never creates the namespace."""
    if not os.path.exists(namespace_path(netns)):
        raise NamespaceMissing(netns)
    try:
        ipr = IPRoute(netns=netns, flags=0)
    except FileNotFoundError:
        raise NamespaceMissing(netns) from None
    except PermissionError:
        raise NotPermitted(netns) from None
    except NetlinkError as exc:
        raise _refused(exc) from None
    try:
        yield ipr
    except NetlinkError as exc:
        raise _refused(exc) from None
    finally:
        ipr.close()


def _refused(exc: NetlinkError) -> Exception:
    if exc.code in (errno.EPERM, errno.EACCES):
        return NotPermitted(str(exc))
    return KernelRefused(exc.code, os.strerror(exc.code) if exc.code > 0 else str(exc))


def namespace_problem(netns: str) -> str | None:
    """Why ``netns`` cannot be used as a device, in a few words; ``None`` when it can."""
    try:
        with opened(netns) as ipr:
            ipr.get_links()
    except NamespaceMissing:
        return f"network namespace {netns!r} does not exist (ip netns list)"
    except NotPermitted:
        return f"network namespace {netns!r} cannot be entered (the agent lacks CAP_SYS_ADMIN)"
    except (KernelRefused, OSError) as exc:
        return f"network namespace {netns!r} cannot be read ({exc})"
    return None


def _link(msg: Any, addresses: tuple[Address, ...]) -> Link:
    info = msg.get("IFLA_LINKINFO")
    kind = info.get("IFLA_INFO_KIND") if info is not None else None
    stats = msg.get("IFLA_STATS64") or {}
    return Link(
        index=msg["index"],
        name=msg.get("IFLA_IFNAME"),
        arphrd=msg["ifi_type"],
        kind=kind,
        admin_up=bool(msg["flags"] & IFF_UP),
        operstate=msg.get("IFLA_OPERSTATE") or "UNKNOWN",
        mtu=msg.get("IFLA_MTU"),
        min_mtu=msg.get("IFLA_MIN_MTU"),
        max_mtu=msg.get("IFLA_MAX_MTU"),
        mac=msg.get("IFLA_ADDRESS"),
        stats={k: int(v) for k, v in dict(stats).items() if isinstance(v, int)},
        addresses=addresses,
    )


def links(netns: str) -> list[Link]:
    """Every interface of the namespace, with its addresses, ordered by index."""
    with opened(netns) as ipr:
        by_index: dict[int, list[Address]] = {}
        for msg in ipr.get_addr():
            ip = msg.get("IFA_ADDRESS")
            if ip is None:
                continue
            by_index.setdefault(msg["index"], []).append(
                Address(msg["family"], ip, msg["prefixlen"])
            )
        found = [_link(m, tuple(by_index.get(m["index"], ()))) for m in ipr.get_links()]
    return sorted(found, key=lambda link: link.index)


def link(netns: str, name: str) -> Link | None:
    return next((each for each in links(netns) if each.name == name), None)


def set_link(netns: str, name: str, *, up: bool | None = None, mtu: int | None = None) -> None:
    """Set the admin state and/or MTU of ``name`` (the MTU first, as a router would)."""
    with opened(netns) as ipr:
        found = ipr.link_lookup(ifname=name)
        if not found:
            raise KernelRefused(errno.ENODEV, f"no interface {name!r}")
        if mtu is not None:
            ipr.link("set", index=found[0], mtu=mtu)
        if up is not None:
            ipr.link("set", index=found[0], state="up" if up else "down")


def _default(family: int) -> str:
    return "0.0.0.0/0" if family == socket.AF_INET else "::/0"


def routes(netns: str) -> list[Route]:
    """The main table's IPv4 and IPv6 routes."""
    with opened(netns) as ipr:
        names = {m["index"]: m.get("IFLA_IFNAME") for m in ipr.get_links()}
        found: list[Route] = []
        for family in (socket.AF_INET, socket.AF_INET6):
            for msg in ipr.get_routes(family=family, table=MAIN_TABLE):
                if msg.get("RTA_TABLE", msg["table"]) != MAIN_TABLE:
                    continue
                dst = msg.get("RTA_DST")
                prefix = f"{dst}/{msg['dst_len']}" if dst is not None else _default(family)
                hops: list[tuple[str | None, str | None]] = []
                for hop in msg.get("RTA_MULTIPATH") or ():
                    hops.append((hop.get("RTA_GATEWAY"), names.get(hop["oif"])))
                oif = msg.get("RTA_OIF")
                found.append(
                    Route(
                        family=family,
                        prefix=str(ipaddress.ip_network(prefix, strict=False)),
                        kind=msg["type"],
                        protocol=PROTOCOLS.get(msg["proto"], str(msg["proto"])),
                        metric=msg.get("RTA_PRIORITY"),
                        gateway=msg.get("RTA_GATEWAY"),
                        interface=names.get(oif) if oif is not None else None,
                        next_hops=tuple(hops),
                    )
                )
    return found


def change_route(
    netns: str,
    command: str,
    prefix: str,
    *,
    gateway: str | None = None,
    interface: str | None = None,
    blackhole: bool = False,
    metric: int | None = None,
) -> None:
    """``add`` or ``del`` one static route of the main table (protocol ``static``)."""
    network = ipaddress.ip_network(prefix)
    spec: dict[str, Any] = {
        "dst": str(network),
        "table": MAIN_TABLE,
        "proto": RTPROT_STATIC,
        "family": socket.AF_INET if network.version == 4 else socket.AF_INET6,
    }
    if blackhole:
        spec["type"] = RTN_BLACKHOLE
    if gateway is not None:
        spec["gateway"] = gateway
    if metric is not None:
        spec["priority"] = metric
    with opened(netns) as ipr:
        if interface is not None:
            found = ipr.link_lookup(ifname=interface)
            if not found:
                raise KernelRefused(errno.ENODEV, f"no interface {interface!r}")
            spec["oif"] = found[0]
        ipr.route(command, **spec)


def in_namespace(netns: str, work: Callable[[], T]) -> T:
    """Run ``work`` with the calling thread inside ``netns``; sockets it opens stay there.

    setns(2) moves only the calling thread, and pyroute2's ``pushns`` keeps one
    stack for the whole process, so the thread's own namespace is saved here
    (``/proc/thread-self``) and restored.  Call it on a thread of its own
    (:func:`skillrack_linux.observe.ping`), never on the event loop's.
    """
    if not os.path.exists(namespace_path(netns)):
        raise NamespaceMissing(netns)
    home = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    try:
        try:
            setns(netns, flags=0)
        except PermissionError:
            raise NotPermitted(netns) from None
        try:
            return work()
        finally:
            setns(home)
    finally:
        os.close(home)
