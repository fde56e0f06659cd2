"""The outbound address guard: every range, names that resolve inside, pinning, no connection.

Traffic goes only to loopback servers; every other address here is refused
before any connection, which the spy transport (the one that would connect)
proves by never being called.
"""

from __future__ import annotations

import contextlib
import functools
import ipaddress
import socket
import ssl
from collections.abc import Iterator, Sequence
from typing import Any

import httpx
import pytest
from helpers.agent_harness import running_agent
from helpers.agent_skills import AllowAll, TestSkills
from helpers.builders import registry_of
from starlette.types import ASGIApp, Receive, Scope, Send

from skillrack.client.address_guard import (
    MAX_TRANSPORTS,
    AddressGuard,
    AddressKind,
    AddressPolicy,
    classify,
    policy_for_url,
)
from skillrack.client.origin import Origin
from skillrack.client.skill_client import SkillClient
from skillrack.errors import ClientCode, SkillCallError


class Spy(httpx.AsyncBaseTransport):
    """Stands where the connecting transport would: records what it was asked to send."""

    def __init__(self, unreachable: int = 0) -> None:
        self.requests: list[httpx.Request] = []
        self.unreachable = unreachable

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        if len(self.requests) <= self.unreachable:
            raise httpx.ConnectError("connection refused", request=request)
        return httpx.Response(200, json={"ok": True})


class FakeDNS:
    """A resolver answering from a table, counting the questions."""

    def __init__(self, table: dict[str, Sequence[str]]) -> None:
        self.table = table
        self.asked: list[str] = []

    async def __call__(self, host: str, port: int) -> Sequence[str]:
        self.asked.append(host)
        if host not in self.table:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return self.table[host]


def guard(
    spy: Spy, dns: FakeDNS | None = None, policy: AddressPolicy | None = None, **origins: Any
) -> AddressGuard:
    return AddressGuard(
        policy,
        origins={Origin.of(url): p for url, p in origins.get("origins", {}).items()},
        transport=lambda: spy,
        resolve=dns or FakeDNS({}),
    )


async def refusal(transport: AddressGuard, url: str) -> SkillCallError:
    async with httpx.AsyncClient(transport=transport) as client:
        with pytest.raises(SkillCallError) as info:
            await client.get(url)
    assert info.value.code == ClientCode.ADDRESS_REFUSED and not info.value.remote
    return info.value


# Every range -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("address", "kind"),
    [
        ("169.254.169.254", AddressKind.METADATA),
        ("169.254.170.2", AddressKind.METADATA),
        ("fd00:ec2::254", AddressKind.METADATA),
        ("100.100.100.200", AddressKind.METADATA),
        ("169.254.1.1", AddressKind.LINK_LOCAL),
        ("fe80::1", AddressKind.LINK_LOCAL),
        ("127.0.0.1", AddressKind.LOOPBACK),
        ("127.8.9.10", AddressKind.LOOPBACK),
        ("::1", AddressKind.LOOPBACK),
        ("0.0.0.0", AddressKind.UNSPECIFIED),
        ("::", AddressKind.UNSPECIFIED),
        ("10.1.2.3", AddressKind.PRIVATE),
        ("172.16.0.1", AddressKind.PRIVATE),
        ("172.31.255.254", AddressKind.PRIVATE),
        ("192.168.1.1", AddressKind.PRIVATE),
        ("fc00::1", AddressKind.PRIVATE),
        ("fd12:3456::1", AddressKind.PRIVATE),
        ("100.64.0.1", AddressKind.SHARED),
        ("100.127.255.254", AddressKind.SHARED),
        ("224.0.0.1", AddressKind.MULTICAST),
        ("ff02::1", AddressKind.MULTICAST),
        ("240.0.0.1", AddressKind.RESERVED),
        ("255.255.255.255", AddressKind.RESERVED),
        ("192.0.2.1", AddressKind.RESERVED),  # documentation
        ("198.18.0.1", AddressKind.RESERVED),  # benchmarking
        ("2001:db8::1", AddressKind.RESERVED),  # documentation
        # IPv4 carried in IPv6 is judged as the IPv4 address it reaches
        ("::ffff:169.254.169.254", AddressKind.METADATA),
        ("::ffff:127.0.0.1", AddressKind.LOOPBACK),
        ("::ffff:10.0.0.1", AddressKind.PRIVATE),
        ("64:ff9b::a9fe:a9fe", AddressKind.METADATA),  # NAT64 of 169.254.169.254
        ("2002:7f00:1::", AddressKind.LOOPBACK),  # 6to4 of 127.0.0.1
        ("172.32.0.1", AddressKind.PUBLIC),
        ("100.128.0.1", AddressKind.PUBLIC),
        ("8.8.8.8", AddressKind.PUBLIC),
        ("2606:4700::1111", AddressKind.PUBLIC),
    ],
)
def test_every_range_is_classified(address: str, kind: AddressKind) -> None:
    assert classify(ipaddress.ip_address(address)) is kind


@pytest.mark.parametrize(
    "address",
    ["127.0.0.1", "[::1]", "0.0.0.0", "10.0.0.1", "172.16.0.1", "192.168.0.1", "[fc00::1]",
     "100.64.0.1", "224.0.0.1", "240.0.0.1"],
)  # fmt: skip
async def test_non_public_ranges_are_refused_by_default(address: str) -> None:
    spy = Spy()
    error = await refusal(guard(spy), f"http://{address}:8080/x")
    assert address.strip("[]") in error.message and "nothing was sent" in error.message
    assert spy.requests == []


@pytest.mark.parametrize(
    ("address", "setting"),
    [("127.0.0.1", "allow_loopback"), ("0.0.0.0", "allow_loopback"),
     ("10.0.0.1", "allow_private"), ("100.64.0.1", "allow_private"),
     ("224.0.0.1", "allow_private"), ("240.0.0.1", "allow_private")],
)  # fmt: skip
async def test_refusal_names_the_setting_that_allows_it(address: str, setting: str) -> None:
    spy = Spy()
    policy = AddressPolicy(where="[peers.observer]")
    error = await refusal(guard(spy, policy=policy), f"http://{address}/")
    assert f"set {setting} = true in [peers.observer]" in error.message
    allowed = guard(spy, policy=AddressPolicy(**{setting: True}))
    async with httpx.AsyncClient(transport=allowed) as client:
        assert (await client.get(f"http://{address}/")).status_code == 200
    assert [str(r.url) for r in spy.requests] == [f"http://{address}/"]


@pytest.mark.parametrize(
    "url",
    [
        "http://169.254.169.254/latest/meta-data/",
        "http://[fd00:ec2::254]/latest/meta-data/",
        "http://100.100.100.200/latest/meta-data/",
        "http://169.254.0.1/",
        "http://[fe80::1]/",
        "http://[::ffff:169.254.169.254]/",
        "http://metadata.google.internal/computeMetadata/v1/",
    ],
)
async def test_link_local_and_metadata_are_refused_even_when_everything_is_allowed(
    url: str,
) -> None:
    spy, dns = Spy(), FakeDNS({})
    everything = AddressPolicy(allow_loopback=True, allow_private=True)
    error = await refusal(guard(spy, dns, everything), url)
    assert "no setting allows it" in error.message
    assert spy.requests == [] and dns.asked == []  # no connection, not even a DNS question


# Names -------------------------------------------------------------------------------------------


async def test_a_name_resolving_to_a_metadata_address_is_refused_without_connecting() -> None:
    spy, dns = Spy(), FakeDNS({"innocent.example": ["169.254.169.254"]})
    error = await refusal(guard(spy, dns), "http://innocent.example/card")
    assert error.message.startswith("refused to connect to http://innocent.example:")
    assert "169.254.169.254 is a cloud metadata address" in error.message
    assert spy.requests == [] and dns.asked == ["innocent.example"]


async def test_every_resolved_address_is_checked() -> None:
    spy = Spy()
    dns = FakeDNS({"mixed.example": ["93.184.216.34", "10.0.0.7"]})
    error = await refusal(guard(spy, dns), "http://mixed.example/")
    assert "10.0.0.7 is a private address" in error.message and spy.requests == []


@pytest.mark.parametrize("host", ["localhost", "2130706433", "0x7f.1"])
async def test_the_system_resolver_is_used_and_its_answer_checked(host: str) -> None:
    """Real ``getaddrinfo``: names and the legacy numeric spellings reaching 127.0.0.1."""
    spy = Spy()
    error = await refusal(AddressGuard(transport=lambda: spy), f"http://{host}:9/")
    assert "is a loopback address" in error.message and spy.requests == []


async def test_an_unresolvable_name_is_a_connect_error() -> None:
    """httpx's own error, so the client reports it as it reports any unreachable agent."""
    async with httpx.AsyncClient(transport=guard(Spy(), FakeDNS({}))) as client:
        with pytest.raises(httpx.ConnectError, match=r"cannot resolve nowhere\.example"):
            await client.get("http://nowhere.example")


async def test_a_resolver_answer_that_is_no_address_is_a_connect_error() -> None:
    spy = Spy()
    async with httpx.AsyncClient(transport=guard(spy, FakeDNS({"odd.example": ["x"]}))) as client:
        with pytest.raises(httpx.ConnectError, match="not an address"):
            await client.get("http://odd.example")
    assert spy.requests == []


# Pinning: the checked address is the one connected to ---------------------------------------------


async def test_the_request_goes_to_the_vetted_address_with_the_original_name() -> None:
    spy = Spy()
    dns = FakeDNS({"agent.example": ["93.184.216.34"]})
    async with httpx.AsyncClient(transport=guard(spy, dns)) as client:
        await client.get("https://agent.example/x?y=1")
    [sent] = spy.requests
    assert str(sent.url) == "https://93.184.216.34/x?y=1"
    assert sent.headers["Host"] == "agent.example"
    assert sent.extensions["sni_hostname"] == "agent.example"  # TLS name and certificate check
    assert dns.asked == ["agent.example"]  # resolved once


async def test_dns_rebinding_cannot_swap_the_address() -> None:
    """A resolver that answers differently each time: each request uses the answer it checked."""
    answers = iter([["93.184.216.34"], ["169.254.169.254"]])

    async def rebinding(host: str, port: int) -> Sequence[str]:
        return next(answers)

    spy = Spy()
    transport = AddressGuard(transport=lambda: spy, resolve=rebinding)
    async with httpx.AsyncClient(transport=transport) as client:
        await client.get("http://rebind.example/")
        with pytest.raises(SkillCallError):
            await client.get("http://rebind.example/")
    assert [r.url.host for r in spy.requests] == ["93.184.216.34"]


async def test_the_next_vetted_address_is_tried_when_one_is_unreachable() -> None:
    spy = Spy(unreachable=1)
    dns = FakeDNS({"two.example": ["93.184.216.34", "2606:2800:220:1::1"]})
    async with httpx.AsyncClient(transport=guard(spy, dns)) as client:
        assert (await client.get("http://two.example/")).status_code == 200
    assert [r.url.host for r in spy.requests] == ["93.184.216.34", "2606:2800:220:1::1"]


# Policies from configured URLs --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "loopback", "private"),
    [
        ("http://127.0.0.1:8001", True, False),
        ("http://[::1]:8001", True, False),
        ("http://localhost:8001", True, False),
        ("http://agent.localhost:8001", True, False),
        ("http://10.0.0.5:8001", False, True),
        ("http://[fd12::5]:8001", False, True),
        ("http://0.0.0.0:8001", False, False),
        ("http://169.254.169.254", False, False),
        ("https://observer.example", False, False),
    ],
)
def test_a_configured_url_allows_its_own_kind(url: str, loopback: bool, private: bool) -> None:
    policy = policy_for_url(url, where="[peers.x]")
    assert (policy.allow_loopback, policy.allow_private, policy.where) == (
        loopback,
        private,
        "[peers.x]",
    )


def test_two_destinations_on_one_origin_allow_what_either_allows() -> None:
    transport = AddressGuard.for_destinations(
        [
            ("http://10.0.0.5:8001/a", AddressPolicy(allow_private=True)),
            ("http://10.0.0.5:8001/b", AddressPolicy(allow_loopback=True)),
        ]
    )
    [(origin, policy)] = transport.origins.items()
    assert str(origin) == "http://10.0.0.5:8001"
    assert policy.allow_private and policy.allow_loopback


# Against a real server on 127.0.0.1 --------------------------------------------------------------


class HostRecorder:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.hosts: list[str] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            self.hosts.append(dict(scope["headers"]).get(b"host", b"").decode())
        await self.app(scope, receive, send)


async def test_a_real_loopback_agent_through_the_guard() -> None:
    recorders: list[HostRecorder] = []

    def wrap(app: ASGIApp) -> ASGIApp:
        recorders.append(HostRecorder(app))
        return recorders[0]

    registry = registry_of([("tests", TestSkills()), ("allow", AllowAll())])
    with running_agent(registry, wrap=wrap) as url:
        port = httpx.URL(url).port
        named = f"http://localhost:{port}"  # a name the agent answers to
        dns = FakeDNS({"localhost": ["127.0.0.1"]})
        allowed = AddressGuard.for_destinations(
            [(named, AddressPolicy(allow_loopback=True))], resolve=dns
        )
        async with SkillClient(transport=allowed) as client:
            card = await client.card(named)
        assert card["name"] and recorders[0].hosts == [f"localhost:{port}"]
        assert dns.asked == ["localhost"]  # resolved by the guard, connected to 127.0.0.1
        # The same server by its loopback address, which nobody allowed: no request arrives.
        async with SkillClient(transport=AddressGuard()) as client:
            with pytest.raises(SkillCallError) as info:
                await client.card(url)
        assert info.value.code == ClientCode.ADDRESS_REFUSED
        assert "set allow_loopback = true" in info.value.message
        assert len(recorders[0].hosts) == 1


@pytest.mark.parametrize("binding", ["JSONRPC", "HTTP+JSON"])
@pytest.mark.parametrize("mode", ["sync", "stream"])
async def test_a_whole_call_through_the_guard_on_both_bindings(binding: str, mode: Any) -> None:
    """Card, describe_skill and the call all pass the guard, whichever binding carries them."""
    registry = registry_of([("tests", TestSkills()), ("allow", AllowAll())])
    arguments = {
        "resource_id": "network-resource-123",
        "condition": {
            "metric": "utilization",
            "operator": "gte",
            "threshold": 80,
            "unit": "percent",
        },
    }
    with running_agent(registry) as url:
        calls: list[str] = []

        class Counting(httpx.AsyncHTTPTransport):
            async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
                calls.append(request.url.host)
                return await super().handle_async_request(request)

        guard = AddressGuard.for_destinations([(url, policy_for_url(url))], transport=Counting)
        async with SkillClient(transport=guard, binding=binding) as client:
            outcome = await client.call(url, "evaluate_resource_condition", arguments, mode=mode)
    assert outcome.state == "TASK_STATE_COMPLETED"
    assert len(calls) >= 3 and set(calls) == {"127.0.0.1"}  # card, describe, call: all vetted


# The transports a guard keeps: bounded, the idle least recently used one closed ----------------


@functools.cache
def _shared_tls() -> ssl.SSLContext:
    return ssl.create_default_context()


class Recorded(httpx.AsyncHTTPTransport):
    """The connecting transport, remembering whether the guard closed it."""

    def __init__(self, made: list[Recorded], **options: Any) -> None:
        # One TLS context for all (as origin_transport shares one): httpx would build one per
        # transport, 25 ms of CPU each, 6 s for the bound's 263.
        super().__init__(**{"verify": _shared_tls()} | options)
        self.closed = False
        made.append(self)

    async def aclose(self) -> None:
        self.closed = True
        await super().aclose()


@contextlib.contextmanager
def refusing_ports(count: int) -> Iterator[list[int]]:
    """``count`` distinct loopback ports that refuse connections while the block runs.

    Each is bound and never listened on: a connection is refused, and no other
    test (another xdist worker's server) can take the port meanwhile.
    """
    sockets = [socket.socket() for _ in range(count)]
    try:
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        yield [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


@pytest.mark.slow
async def test_kept_transports_are_bounded_and_a_busy_one_is_not_closed() -> None:
    """More origins than the bound: the idle least recently used are closed, never a busy one."""
    made: list[Recorded] = []
    bound = MAX_TRANSPORTS
    guard = AddressGuard(
        AddressPolicy(allow_loopback=True), transport=lambda **tls: Recorded(made, **tls)
    )
    registry = registry_of([("tests", TestSkills()), ("allow", AllowAll())])
    with refusing_ports(bound + 7) as refusing, running_agent(registry) as url:
        *ports, last = refusing
        async with httpx.AsyncClient(transport=guard) as client:
            async with client.stream("GET", url + "/.well-known/agent-card.json") as held:
                assert held.status_code == 200  # its body is still unread: the transport is busy
                for port in ports:
                    with pytest.raises(httpx.ConnectError):
                        await client.get(f"http://127.0.0.1:{port}/")
                    assert sum(not t.closed for t in made) <= bound
                assert len(made) == bound + 7 and sum(not t.closed for t in made) == bound
                assert not made[0].closed  # least recently used, but in use
                assert (await held.aread()).startswith(b"{")
            # Idle again and least recently used: the next new origin closes it.
            assert not made[0].closed
            with pytest.raises(httpx.ConnectError):
                await client.get(f"http://127.0.0.1:{last}/")
            assert made[0].closed and sum(not t.closed for t in made) == bound
    assert all(t.closed for t in made)  # closing the client closed the guard and every pool
