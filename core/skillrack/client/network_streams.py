"""The client's sockets as httpcore sees them: one write per small request, a cheap readable check.

httpcore writes a request's head and its body with two calls to its
network stream, so a JSON-RPC call costs two ``send`` system calls, two
anyio timeout scopes and, on loopback, two segments the agent reads
separately.  And before reusing a kept connection its pool asks the stream
whether the socket is readable (the peer closed it), which anyio answers by
building its whole table of socket attributes on every question.  In
``benchmarks/fanout.py`` the two cost about 6% of a ``SkillClient``'s CPU
per call, in code both it and a2a-sdk's client run.

:class:`CoalescingBackend` wraps httpcore's own backend (connecting, TLS,
timeouts and the mapping of errors stay httpcore's and anyio's); its streams
keep back a request's first write (its head, when small) until the next
write or read, then send both in one call, and read the raw socket once per
connection for the readability check.  Nothing is held across a read, at
most :data:`HOLD_BYTES` is held at all, and only a head: a streamed upload's
chunks go out as they come.  For HTTP/1.1 only: an HTTP/2 connection's streams read while others
write, and a held write could wait behind another stream's read.
"""

from __future__ import annotations

import contextlib
import select
import socket
import ssl
from collections.abc import Iterable
from typing import Any

import httpcore

#: The largest write kept back to go out with the next one: a request's head fits.
HOLD_BYTES = 16 * 1024
#: Past this, a held head and the next write go out as two calls, not one copy.
JOIN_BYTES = 64 * 1024

SocketOption = (
    tuple[int, int, int] | tuple[int, int, bytes | bytearray] | tuple[int, int, None, int]
)


def readable(sock: socket.socket | None, poll: Any = None) -> bool:
    """Whether a read on ``sock`` would return at once (data, or the end: the peer closed it).

    ``poll``: a ``select.poll`` object with the socket registered (a stream
    keeps one: asked before every reuse of its connection).  A socket that is
    gone counts as readable, so a pool drops its connection.
    """
    fd = -1 if sock is None else sock.fileno()
    if fd < 0:
        return True
    if poll is None:
        poll = watching(fd)
        if poll is None:  # Windows: no poll
            ready, _, _ = select.select([fd], [], [], 0)
            return bool(ready)
    return bool(poll.poll(0))


def watching(fd: int) -> Any:
    """A ``select.poll`` object watching ``fd`` for input, or None where there is no poll."""
    make = getattr(select, "poll", None)
    if make is None or fd < 0:
        return None
    poll = make()
    poll.register(fd, select.POLLIN)
    return poll


class CoalescingStream(httpcore.AsyncNetworkStream):
    """httpcore's stream, with a request's head sent together with its body."""

    def __init__(self, inner: httpcore.AsyncNetworkStream) -> None:
        self._inner = inner
        self._socket: socket.socket | None = inner.get_extra_info("socket")
        self._poll = None if self._socket is None else watching(self._socket.fileno())
        self._held = b""
        self._held_timeout: float | None = None
        #: Only a request's first write (its head) may wait: set again by every read.
        self._may_hold = True

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        if not buffer:
            return
        held = self._held
        if not held:
            if self._may_hold and len(buffer) <= HOLD_BYTES:
                self._held, self._held_timeout, self._may_hold = buffer, timeout, False
                return
            self._may_hold = False
            await self._inner.write(buffer, timeout)
            return
        self._held = b""
        if len(buffer) <= JOIN_BYTES:
            await self._inner.write(held + buffer, timeout)
            return
        await self._inner.write(held, self._held_timeout)
        await self._inner.write(buffer, timeout)

    async def _flush(self) -> None:
        held, self._held = self._held, b""
        await self._inner.write(held, self._held_timeout)

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        self._may_hold = True  # what is written next is the next request's head
        if self._held:
            # What httpcore does when a request's write fails: read on, a server that
            # closed early may still have answered (a 413, a 503).
            with contextlib.suppress(httpcore.WriteError):
                await self._flush()
        return await self._inner.read(max_bytes, timeout)

    async def aclose(self) -> None:
        self._held = b""  # a request not sent whole is not sent at all
        await self._inner.aclose()

    async def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.AsyncNetworkStream:
        if self._held:  # whatever was written before the handshake goes before it
            await self._flush()
        secured = await self._inner.start_tls(ssl_context, server_hostname, timeout)
        return CoalescingStream(secured)

    def get_extra_info(self, info: str) -> Any:
        if info == "is_readable":
            return readable(self._socket, self._poll)
        return self._inner.get_extra_info(info)


class CoalescingBackend(httpcore.AsyncNetworkBackend):
    """httpcore's backend (``inner``), its streams made :class:`CoalescingStream`."""

    def __init__(self, inner: httpcore.AsyncNetworkBackend) -> None:
        self._inner = inner

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[SocketOption] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        stream = await self._inner.connect_tcp(host, port, timeout, local_address, socket_options)
        return CoalescingStream(stream)

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[SocketOption] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        stream = await self._inner.connect_unix_socket(path, timeout, socket_options)
        return CoalescingStream(stream)

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


def coalesce_writes(transport: Any) -> None:
    """Make an HTTP/1.1 ``httpx.AsyncHTTPTransport``'s streams :class:`CoalescingStream`.

    httpx names no public way to choose httpcore's backend: this sets the
    pool's (``_pool._network_backend``, held by
    ``tests/client/test_network_streams.py``).  Where a version of httpx or
    httpcore has moved them, the transport is left as it is: slower, not wrong.
    """
    pool = getattr(transport, "_pool", None)
    backend = getattr(pool, "_network_backend", None)
    if (
        isinstance(pool, httpcore.AsyncConnectionPool)
        and backend is not None
        and not isinstance(backend, CoalescingBackend)
    ):
        pool._network_backend = CoalescingBackend(backend)
