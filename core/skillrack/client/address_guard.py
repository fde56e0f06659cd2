"""The outbound address guard: where this host's own outbound calls may connect.

An agent that delegates dials out on behalf of remote callers: a peer's name,
and whatever the peer's card names, decide where this host connects.  Left
alone that is server-side request forgery: a card naming
``http://169.254.169.254/`` makes the host talk to its cloud's metadata
service, and a name that resolves to ``10.0.0.7`` reaches the private network
behind it.  :class:`AddressGuard` is an ``httpx`` transport that stands
between the host's :class:`~skillrack.client.skill_client.SkillClient` and the
network:

* it resolves the request's host name **once** (``getaddrinfo`` in a thread),
  checks **every** address the name resolved to, and refuses the request
  when one of them is forbidden: a name that answers with one public and one
  private address is refused, since the connection could take either;
* it then connects to an address it checked: the request goes to the vetted
  IP while the ``Host`` header and, for ``https``, the TLS server name (SNI)
  and certificate verification stay on the original name, so DNS rebinding
  (answering public to the check and private to the connection) cannot swap
  the address;
* a refusal is a local :class:`~skillrack.errors.SkillCallError` with code
  ``address_refused`` naming the host, the address and the setting that
  allows it, raised before any connection is attempted.

What is refused (:class:`AddressKind`): link-local (``169.254.0.0/16``,
``fe80::/10``) and the cloud metadata addresses, always; loopback and the
unspecified address unless ``allow_loopback``; private (RFC 1918,
``fc00::/7``), shared (CGNAT ``100.64.0.0/10``), multicast and the other
non-public ranges unless ``allow_private``.  An IPv4 address embedded in
IPv6 (``::ffff:a.b.c.d``, NAT64, 6to4) is judged as the IPv4 address it
carries.  :func:`policy_for_url` derives a peer's policy from its configured
URL: a peer the operator named by a loopback URL may use loopback, one named
by a private address may use the private ranges.

The guard is for the host's own outbound calls (peers, delegation, anything
later that dials out).  The command line, aimed by a person at an agent they
chose, does not use it: ``skillrack call http://127.0.0.1:8000`` keeps working.
"""

from __future__ import annotations

import asyncio
import enum
import ipaddress
import socket
import ssl
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import httpx

from skillrack.client.origin import Origin
from skillrack.client.origin_pools import MAX_TRANSPORTS, OriginPools, origin_transport
from skillrack.errors import ClientCode, SkillCallError

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

#: ``resolve(host, port) -> addresses``: the name's addresses, as strings.
Resolver = Callable[[str, int], Awaitable[Sequence[str]]]

#: Cloud metadata services (AWS, Azure, GCP, OCI, DigitalOcean, ...: 169.254.169.254; AWS
#: ECS task credentials: 169.254.170.2; AWS over IPv6: fd00:ec2::254; Alibaba Cloud:
#: 100.100.100.200).  The last two sit in ranges an operator may allow (unique local,
#: shared), so they are listed by address: allowing a range never allows them.
METADATA_ADDRESSES: frozenset[IPAddress] = frozenset(
    ipaddress.ip_address(a)
    for a in ("169.254.169.254", "169.254.170.2", "fd00:ec2::254", "100.100.100.200")
)
#: Names of metadata services, refused before they are even resolved.
METADATA_NAMES = frozenset({"metadata.google.internal"})

_SHARED = ipaddress.ip_network("100.64.0.0/10")  # RFC 6598, carrier-grade NAT
_PRIVATE: tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...] = (
    ipaddress.ip_network("10.0.0.0/8"),
    ipaddress.ip_network("172.16.0.0/12"),
    ipaddress.ip_network("192.168.0.0/16"),
    ipaddress.ip_network("fc00::/7"),
)
_NAT64 = ipaddress.ip_network("64:ff9b::/96")


class AddressKind(enum.Enum):
    """What an address is, as the guard judges it; ``setting`` allows it (None: never)."""

    PUBLIC = ("a public address", "")
    METADATA = ("a cloud metadata address", None)
    LINK_LOCAL = ("a link-local address", None)
    LOOPBACK = ("a loopback address", "allow_loopback")
    UNSPECIFIED = ("the unspecified address (this host)", "allow_loopback")
    PRIVATE = ("a private address", "allow_private")
    SHARED = ("a shared (carrier-grade NAT) address", "allow_private")
    MULTICAST = ("a multicast address", "allow_private")
    RESERVED = ("a reserved, non-public address", "allow_private")

    def __init__(self, label: str, setting: str | None) -> None:
        self.label = label
        self.setting = setting


def classify(address: IPAddress) -> AddressKind:
    """The kind of ``address``; an IPv4 address carried in IPv6 is judged as itself."""
    if address in METADATA_ADDRESSES:
        return AddressKind.METADATA
    if isinstance(address, ipaddress.IPv6Address):
        carried = address.ipv4_mapped
        if carried is None and address in _NAT64:
            carried = ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
        if carried is not None:  # the connection reaches this IPv4 address
            return classify(carried)
        if address.sixtofour is not None and classify(address.sixtofour) is not AddressKind.PUBLIC:
            return classify(address.sixtofour)
    if address.is_link_local:
        return AddressKind.LINK_LOCAL
    if address.is_unspecified:
        return AddressKind.UNSPECIFIED
    if address.is_loopback:
        return AddressKind.LOOPBACK
    if address.is_multicast:
        return AddressKind.MULTICAST
    if any(address in network for network in _PRIVATE):
        return AddressKind.PRIVATE
    if address in _SHARED:
        return AddressKind.SHARED
    if not address.is_global:
        return AddressKind.RESERVED
    return AddressKind.PUBLIC


@dataclass(frozen=True)
class AddressPolicy:
    """Which refusable kinds one destination may use; ``where`` names where to change it."""

    allow_loopback: bool = False
    allow_private: bool = False
    #: Where an operator sets ``allow_loopback`` / ``allow_private``, quoted in a refusal.
    where: str = "the AddressPolicy given to AddressGuard"
    #: Plain ``http`` may reach loopback addresses only (whatever a name is called:
    #: ``*.localhost`` counts as loopback only if it resolves there); ``https`` is judged
    #: by the settings above alone.  Push webhooks: a credential in clear stays on the host.
    http_loopback_only: bool = False

    def allows(self, kind: AddressKind) -> bool:
        if kind.setting is None:
            return False
        if kind.setting == "allow_loopback":
            return self.allow_loopback
        if kind.setting == "allow_private":
            return self.allow_private
        return True


def _literal(host: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


def policy_for_url(
    url: str, *, allow_loopback: bool = False, allow_private: bool = False, where: str = ""
) -> AddressPolicy:
    """The policy of a destination the operator configured by ``url``.

    The operator's own choice of address is the permission: a loopback URL
    (``127.0.0.1``, ``::1``, ``localhost``) allows loopback, a private
    address allows the private ranges; a host name allows neither, since
    what it resolves to is not the operator's choice.
    """
    host = httpx.URL(url).host.lower().rstrip(".")
    literal = _literal(host)
    kind = classify(literal) if literal is not None else None
    is_localhost = host == "localhost" or host.endswith(".localhost")
    return AddressPolicy(
        allow_loopback=allow_loopback or is_localhost or kind is AddressKind.LOOPBACK,
        allow_private=allow_private or (kind is not None and kind.setting == "allow_private"),
        where=where or AddressPolicy.where,
    )


async def resolve_once(host: str, port: int) -> list[str]:
    """Every address ``host`` resolves to, in the resolver's order, without duplicates."""
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    found: list[str] = []
    for info in infos:
        address = str(info[4][0])
        if address not in found:
            found.append(address)
    return found


class AddressGuard(httpx.AsyncBaseTransport):
    """An ``httpx`` transport that connects only to vetted addresses (see the module docstring).

    ``policy`` applies to every destination; ``origins`` maps an
    :class:`~skillrack.client.origin.Origin` to the policy of a destination
    the operator configured (:meth:`for_destinations` builds it from URLs).
    ``transport`` makes the transport that actually connects, one per
    origin, so that a pooled TLS connection is never reused for another
    server name on the same address; ``tls`` maps an origin to the ``ssl``
    context its connections use (a client certificate to present, the CAs to
    trust: ``[peers.NAME] client_cert``), passed as ``transport(verify=...)``;
    ``resolve`` replaces ``getaddrinfo`` (tests).
    """

    def __init__(
        self,
        policy: AddressPolicy | None = None,
        *,
        origins: Mapping[Origin, AddressPolicy] | None = None,
        transport: Callable[..., httpx.AsyncBaseTransport] = origin_transport,
        resolve: Resolver = resolve_once,
        tls: Mapping[Origin, ssl.SSLContext] | None = None,
        max_transports: int = MAX_TRANSPORTS,
    ) -> None:
        self.policy = policy or AddressPolicy()
        self.origins = dict(origins or {})
        self.tls = dict(tls or {})
        self._make_transport = transport
        self._resolve = resolve
        #: One connecting transport (a pool) per origin, bounded (:mod:`.origin_pools`).
        self._pools = OriginPools(self._transport_for, max_transports)

    def _transport_for(self, origin: Origin) -> httpx.AsyncBaseTransport:
        context = self.tls.get(origin)
        return self._make_transport() if context is None else self._make_transport(verify=context)

    @classmethod
    def for_destinations(
        cls,
        destinations: Iterable[tuple[str, AddressPolicy]],
        policy: AddressPolicy | None = None,
        **options: Any,
    ) -> AddressGuard:
        """A guard for configured ``(url, policy)`` pairs; one origin named twice allows both."""
        origins: dict[Origin, AddressPolicy] = {}
        for url, allowed in destinations:
            origin = Origin.of(url)
            known = origins.get(origin)
            if known is not None:
                allowed = replace(
                    known,
                    allow_loopback=known.allow_loopback or allowed.allow_loopback,
                    allow_private=known.allow_private or allowed.allow_private,
                )
            origins[origin] = allowed
        return cls(policy, origins=origins, **options)

    async def vet(self, url: httpx.URL, timeout: float | None = None) -> list[str]:
        """The addresses ``url``'s host resolved to, all allowed; else raise ``address_refused``.

        ``timeout`` bounds the resolution (the request's connect timeout).
        """
        origin = Origin.of(url)
        policy = self.origins.get(origin, self.policy)
        host = url.host.lower().rstrip(".")
        if host in METADATA_NAMES:
            raise _refused(origin, host, "a cloud metadata name", None, policy)
        literal = _literal(host)
        if literal is not None:
            addresses = [host]
        else:
            try:
                async with asyncio.timeout(timeout):
                    addresses = list(await self._resolve(host, origin.port))
            except TimeoutError:
                raise httpx.ConnectTimeout(f"resolving {host} took over {timeout} s") from None
            except OSError as exc:  # socket.gaierror: the name does not resolve
                raise httpx.ConnectError(f"cannot resolve {host}: {exc}") from None
            if not addresses:
                raise httpx.ConnectError(f"{host} resolved to no address")
        for address in addresses:
            try:
                kind = classify(ipaddress.ip_address(address))
            except ValueError:
                raise httpx.ConnectError(
                    f"{host} resolved to {address!r}, not an address"
                ) from None
            if not policy.allows(kind):
                raise _refused(origin, address, kind.label, kind.setting, policy)
            cleartext = policy.http_loopback_only and url.scheme == "http"
            if cleartext and kind is not AddressKind.LOOPBACK:
                raise SkillCallError.local(
                    ClientCode.ADDRESS_REFUSED,
                    f"refused to connect to {origin}: {address} is {kind.label} and plain http "
                    "may reach only loopback; nothing was sent (use https)",
                )
        return addresses

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        timeout = request.extensions.get("timeout", {}).get("connect")
        try:
            addresses = await self.vet(request.url, timeout)
        except httpx.RequestError as exc:
            exc.request = request
            raise
        return await self._pools.send(
            Origin.of(request.url), request, lambda inner: self._send(inner, request, addresses)
        )

    async def _send(
        self, inner: httpx.AsyncBaseTransport, request: httpx.Request, addresses: list[str]
    ) -> httpx.Response:
        host = request.url.host
        extensions = dict(request.extensions)
        if request.url.scheme == "https":
            extensions["sni_hostname"] = host  # TLS name and certificate check: the original
        headers = httpx.Headers(request.headers)
        headers.setdefault("Host", request.url.netloc.decode("ascii"))
        for index, address in enumerate(addresses):
            pinned = httpx.Request(
                request.method,
                request.url.copy_with(host=address.split("%")[0]),
                headers=headers,
                stream=request.stream,
                extensions=extensions,
            )
            try:
                return await inner.handle_async_request(pinned)
            except httpx.ConnectError:
                if index == len(addresses) - 1:
                    raise
        raise AssertionError("unreachable: vet() returns at least one address")

    async def aclose(self) -> None:
        await self._pools.aclose()


def _refused(
    origin: Origin, address: str, label: str, setting: str | None, policy: AddressPolicy
) -> SkillCallError:
    if setting is None:
        how = "no setting allows it"
    else:
        how = f"set {setting} = true in {policy.where} to allow it"
    return SkillCallError.local(
        ClientCode.ADDRESS_REFUSED,
        f"refused to connect to {origin}: {address} is {label}; nothing was sent ({how})",
    )
