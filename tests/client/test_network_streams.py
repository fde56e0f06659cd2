"""The client's sockets: a request's head and body in one write, the readable check, cookies.

Unit tests drive :class:`CoalescingStream` over a recording stream; the
served ones run real exchanges on loopback against small asyncio servers
that see the bytes and connections as the kernel hands them over.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpcore
import httpx
import pytest

from skillrack.client.cache import CacheBounds
from skillrack.client.cookies import MAX_COOKIE_BYTES, MAX_COOKIES, CookielessClient, OriginCookies
from skillrack.client.network_streams import (
    HOLD_BYTES,
    JOIN_BYTES,
    CoalescingBackend,
    CoalescingStream,
    readable,
)
from skillrack.client.origin import Origin, OriginPolicy
from skillrack.client.origin_pools import origin_transport
from skillrack.client.readbounds import ReadBounds
from skillrack.client.transport import http_client, origin_scope
from skillrack.errors import SkillCallError


class Recording(httpcore.AsyncNetworkStream):
    """A stream that records what is written and read, in order."""

    def __init__(self, answer: bytes = b"HTTP/1.1 200 OK\r\n\r\n", fail_writes: bool = False):
        self.events: list[tuple[str, Any]] = []
        self.answer = answer
        self.fail_writes = fail_writes
        self.closed = False

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self.events.append(("write", (buffer, timeout)))
        if self.fail_writes:
            raise httpcore.WriteError("the peer closed")

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        self.events.append(("read", max_bytes))
        return self.answer

    async def aclose(self) -> None:
        self.closed = True

    async def start_tls(
        self, ssl_context: Any, server_hostname: str | None = None, timeout: float | None = None
    ) -> httpcore.AsyncNetworkStream:
        self.events.append(("start_tls", server_hostname))
        return Recording()

    def get_extra_info(self, info: str) -> Any:
        return None


async def test_a_head_and_body_go_out_in_one_write() -> None:
    inner = Recording()
    stream = CoalescingStream(inner)
    await stream.write(b"POST / HTTP/1.1\r\n\r\n", timeout=5)
    assert inner.events == []  # the head waits for its body
    await stream.write(b"{}", timeout=5)
    await stream.write(b"", timeout=5)  # h11's end of a sized body: nothing
    assert inner.events == [("write", (b"POST / HTTP/1.1\r\n\r\n{}", 5))]


async def test_only_a_requests_head_waits_a_streamed_bodys_chunks_go_as_they_come() -> None:
    inner = Recording()
    stream = CoalescingStream(inner)
    await stream.write(b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n")
    await stream.write(b"1\r\na\r\n")
    await stream.write(b"1\r\nb\r\n")  # not kept back for the next one
    assert [args[0] for _, args in inner.events] == [
        b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na\r\n",
        b"1\r\nb\r\n",
    ]
    await stream.read(100)
    inner.events.clear()
    await stream.write(b"GET /next HTTP/1.1\r\n\r\n")  # after an answer: the next head waits
    assert inner.events == []


async def test_a_held_head_goes_out_before_any_read() -> None:
    inner = Recording()
    stream = CoalescingStream(inner)
    await stream.write(b"GET / HTTP/1.1\r\n\r\n", timeout=3)
    assert await stream.read(100, timeout=9) == inner.answer
    assert inner.events == [("write", (b"GET / HTTP/1.1\r\n\r\n", 3)), ("read", 100)]


async def test_a_failed_write_of_the_held_head_still_reads_the_answer() -> None:
    """httpcore reads on after a failed request write (a server may answer and close): so do we."""
    inner = Recording(fail_writes=True)
    stream = CoalescingStream(inner)
    await stream.write(b"GET / HTTP/1.1\r\n\r\n")
    assert await stream.read(100) == inner.answer


async def test_large_writes_are_not_held_or_copied() -> None:
    inner = Recording()
    stream = CoalescingStream(inner)
    big = b"x" * (HOLD_BYTES + 1)
    await stream.write(big, timeout=1)
    assert inner.events == [("write", (big, 1))]  # too big to hold: sent at once
    inner.events.clear()
    huge = b"y" * (JOIN_BYTES + 1)
    await stream.write(b"head", timeout=2)
    await stream.write(huge, timeout=3)
    assert inner.events == [("write", (b"head", 2)), ("write", (huge, 3))]


async def test_a_closed_stream_drops_what_it_held() -> None:
    inner = Recording()
    stream = CoalescingStream(inner)
    await stream.write(b"GET / HTTP/1.1\r\n\r\n")
    await stream.aclose()
    assert inner.closed and inner.events == []


async def test_tls_starts_after_what_was_written_before_it() -> None:
    inner = Recording()
    stream = CoalescingStream(inner)
    await stream.write(b"CONNECT example.net:443 HTTP/1.1\r\n\r\n")
    secured = await stream.start_tls(ssl_context=None, server_hostname="example.net")  # type: ignore[arg-type]
    assert [kind for kind, _ in inner.events] == ["write", "start_tls"]
    assert isinstance(secured, CoalescingStream)


def test_readable_sees_data_and_the_peer_closing() -> None:
    ours, theirs = socket.socketpair()
    try:
        assert not readable(ours)
        theirs.sendall(b"x")
        assert readable(ours)
        ours.recv(1)
        assert not readable(ours)
        theirs.close()
        assert readable(ours)  # the end: a read returns b"" at once
    finally:
        ours.close()
    assert readable(ours)  # a closed socket counts as readable: its connection is dropped
    assert readable(None)


def test_origin_transports_use_the_coalescing_backend() -> None:
    """httpx keeps httpcore's backend at ``_pool._network_backend``: fails if that moves."""
    transport = origin_transport()
    pool = transport._pool
    assert isinstance(pool, httpcore.AsyncConnectionPool)
    assert isinstance(pool._network_backend, CoalescingBackend)


class Server:
    """An HTTP/1.1 server on loopback that answers each request with ``answer(head, body)``.

    It counts connections, records the head of every request, and closes a
    connection after its first answer when ``close_after_answer`` (without
    saying so in a header, as a server whose idle timeout fired would).
    """

    def __init__(self, answer: Callable[[bytes], bytes], close_after_answer: bool = False):
        self.answer = answer
        self.close_after_answer = close_after_answer
        self.connections = 0
        self.heads: list[bytes] = []
        self.writers: list[asyncio.StreamWriter] = []

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        self.writers.append(writer)
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                self.heads.append(head)
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":")[1])
                body = await reader.readexactly(length)
                writer.write(self.answer(head + body))
                await writer.drain()
                if self.close_after_answer:
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        writer.close()

    async def __aenter__(self) -> str:
        self._server = await asyncio.start_server(self.handle, "127.0.0.1", 0)
        return f"http://127.0.0.1:{self._server.sockets[0].getsockname()[1]}"

    async def __aexit__(self, *exc: object) -> None:
        self._server.close()
        for writer in self.writers:  # kept-alive connections: the server's close leaves them
            writer.close()
        await self._server.wait_closed()


def ok(body: bytes, *headers: bytes) -> bytes:
    head = b"".join(h + b"\r\n" for h in headers)
    return b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n%s\r\n%s" % (len(body), head, body)


async def test_served_requests_keep_their_connection_and_say_what_they_said() -> None:
    server = Server(lambda request: ok(request.split(b"\r\n\r\n", 1)[1]))
    async with server as url, httpx.AsyncClient(transport=origin_transport()) as client:
        for n in range(5):
            answer = await client.post(url + "/echo", json={"n": n})
            assert answer.json() == {"n": n}
        assert (await client.get(url + "/")).status_code == 200
    assert server.connections == 1


async def test_a_connection_the_server_closed_is_not_reused() -> None:
    """The pool asks the stream whether the socket is readable before reusing it."""
    server = Server(lambda request: ok(b"done"), close_after_answer=True)
    async with server as url, httpx.AsyncClient(transport=origin_transport()) as client:
        for _ in range(3):
            assert (await client.get(url + "/")).text == "done"
            await asyncio.sleep(0.05)  # the server's close reaches the client
    assert server.connections == 3


@pytest.fixture
async def cookie_agents() -> AsyncIterator[tuple[str, str, Server, Server]]:
    """Two agents on one host: the first sets a cookie; both record what they are sent."""
    setter = Server(lambda request: ok(b"{}", b"Set-Cookie: session=agent-a-secret; Path=/"))
    listener = Server(lambda request: ok(b"{}"))
    async with setter as first, listener as second:
        yield first, second, setter, listener


async def test_a_plain_httpx_client_would_carry_one_agents_cookie_to_another(
    cookie_agents: tuple[str, str, Server, Server],
) -> None:
    """The hazard: cookies are scoped by host, not port."""
    first, second, _, listener = cookie_agents
    async with httpx.AsyncClient() as client:
        await client.get(first + "/")
        await client.get(second + "/")
    assert b"agent-a-secret" in listener.heads[-1]


async def test_an_agents_cookie_goes_back_to_it_and_to_no_other_agent(
    cookie_agents: tuple[str, str, Server, Server],
) -> None:
    first, second, setter, listener = cookie_agents
    client = http_client(headers={}, timeout=5, bounds=ReadBounds(), transport=None)
    assert isinstance(client, CookielessClient)
    client.cookies = {"chosen": "caller"}
    policy = OriginPolicy(Origin.of(first), frozenset({Origin.of(second)}))
    async with client:
        with origin_scope(policy):
            await client.get(first + "/")
            await client.get(first + "/again")
            await client.get(second + "/")
        assert dict(client.cookies) == {"chosen": "caller"}  # httpx's own jar learned nothing
    assert b"agent-a-secret" in setter.heads[-1]  # back to the agent that set it
    assert b"agent-a-secret" not in listener.heads[-1]  # not to its neighbour
    assert b"chosen=caller" in listener.heads[-1]  # the caller's own cookie goes everywhere


async def test_a_cookie_that_is_not_ascii_is_not_kept_and_breaks_nothing() -> None:
    """Sent back, a UTF-8 value would make every later request fail to encode its header."""
    agent = Server(lambda request: ok(b"{}", "Set-Cookie: lang=français".encode()))
    async with agent as url:
        client = http_client(headers={}, timeout=5, bounds=ReadBounds(), transport=None)
        async with client:
            with origin_scope(OriginPolicy(Origin.of(url), frozenset())):
                for _ in range(3):
                    assert (await client.get(url + "/")).status_code == 200
    assert all(b"lang=" not in head for head in agent.heads)


async def test_no_cookie_is_kept_from_an_answer_the_guard_refuses() -> None:
    agent = Server(
        lambda request: (
            b"HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\nSet-Cookie: session=refused\r\n\r\n"
            if b"GET /first" in request
            else ok(b"{}")
        )
    )
    async with agent as url:
        client = http_client(headers={}, timeout=5, bounds=ReadBounds(), transport=None)
        async with client:
            with origin_scope(OriginPolicy(Origin.of(url), frozenset())):
                with pytest.raises(SkillCallError):
                    await client.get(url + "/first")
                await client.get(url + "/second")
    assert b"session=refused" not in agent.heads[-1]


def set_cookie_answer(request: httpx.Request, *cookies: str) -> httpx.Response:
    return httpx.Response(200, headers=[("Set-Cookie", c) for c in cookies], request=request)


def test_a_cookies_attributes_count_against_its_bound() -> None:
    """http.cookiejar keeps any Path and unknown attributes: they count, name and value too."""
    jars = OriginCookies()
    origin = Origin.of("http://127.0.0.1:1001")
    request = httpx.Request("GET", "http://127.0.0.1:1001/")
    padded = "x=1; Path=/" + "p" * MAX_COOKIE_BYTES + "; Flavour=" + "f" * 90_000
    jars.learn(origin, request, set_cookie_answer(request, padded, "kept=1"))
    jar = jars._jars.get(origin)
    assert jar is not None and [c.name for c in jar.jar] == ["kept"]


def test_origin_cookies_are_bounded_per_origin_and_in_origins() -> None:
    """An agent is not trusted to be modest: 50 cookies of 4 kB each at most, 2 origins here."""
    jars = OriginCookies(CacheBounds(entries=2, bytes=1_000_000))
    origins = [Origin.of(f"http://127.0.0.1:{port}") for port in (1001, 1002, 1003)]
    for origin in origins:
        request = httpx.Request("GET", f"{origin.scheme}://{origin.host}:{origin.port}/")
        many = [f"c{n}=v" for n in range(80)] + ["huge=" + "x" * (MAX_COOKIE_BYTES + 1)]
        jars.learn(origin, request, set_cookie_answer(request, *many))
    kept = {origin: jars._jars.get(origin) for origin in origins}
    assert kept[origins[0]] is None  # the least recently used origin went first
    for origin in origins[1:]:
        jar = kept[origin]
        assert jar is not None and len(jar.jar) == MAX_COOKIES
        assert "huge" not in jar
    request = httpx.Request("GET", "http://127.0.0.1:1003/")
    jars.attach(origins[2], request)
    assert request.headers["cookie"].count("=") == MAX_COOKIES


def test_an_answer_without_set_cookie_keeps_nothing() -> None:
    jars = OriginCookies()
    origin = Origin.of("http://127.0.0.1:1001")
    request = httpx.Request("GET", "http://127.0.0.1:1001/")
    jars.learn(origin, request, httpx.Response(200, request=request))
    jars.attach(origin, request)
    assert "cookie" not in request.headers and not jars._jars
