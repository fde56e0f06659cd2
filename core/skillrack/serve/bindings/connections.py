"""The connection deadline uvicorn lacks: a client must finish its request's headers in time.

uvicorn (0.54, h11) closes a connection that stays idle between requests
(``timeout_keep_alive``), but once a single byte of a request has arrived it
waits for the rest of the headers for ever, and after answering a request
whose body is still arriving it reads that body for ever too: 300 clients
sending one header byte a minute held 300 connections.  It has no setting for
either, and ``limit_concurrency`` only answers 503 to *complete* requests
over the limit, so it cannot help.

:class:`HeaderDeadlineProtocol` is uvicorn's own h11 protocol with one timer
more.  Whenever the connection waits for the client (it has just opened, or
the previous response is complete), the client has ``header_timeout`` seconds
to complete the headers of its next request; when they run out, the
connection is closed, after a ``408 Request Timeout`` when part of a request
had arrived.  An idle connection is still closed earlier by
``timeout_keep_alive``.  The body is bounded by the application
(:class:`~skillrack.serve.middleware.body_timeout.BodyTimeout`).

It also sets ``TCP_NODELAY`` on every accepted TCP connection itself.
asyncio sets it only when the listening socket's protocol number is
``IPPROTO_TCP``; a socket created with protocol 0 (uvicorn's own
``bind_socket``, or one inherited through ``--fd``) would leave Nagle's
algorithm on, and a response written in two parts would then wait about
40 ms for the client's delayed ACK.  With the ``skillrack.serve.bindings.connections``
logger at DEBUG, each accepted connection is logged with the process that
accepted it and the option as read back from the socket (the
``--workers`` tests check both).

The same protocol hands a verified client certificate to the app: on a TLS
connection whose server asks for client certificates (``--ssl-client-ca``),
it reads the peer certificate once the handshake is over and adds it to the
scope of every request of the connection, as the ASGI ``tls`` extension and
as a parsed :class:`~skillrack.serve.security.client_certificate.ClientCertificate`
(uvicorn itself puts neither in the scope).

``skillrack serve`` passes the class as uvicorn's ``http`` protocol (it
replaces ``auto``, which would pick httptools where it is installed).  The
app hands the timeout over through its lifespan state
(:data:`HEADER_TIMEOUT_KEY`), which uvicorn gives every protocol instance
and which every ``--workers`` process builds for itself.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
from typing import Any

import h11
from starlette.types import ASGIApp, Receive, Scope, Send
from uvicorn.protocols.http.h11_impl import H11Protocol

from skillrack.serve.scope import CLIENT_CERTIFICATE_KEY, HEADER_TIMEOUT_KEY
from skillrack.serve.security.client_certificate import (
    ClientCertificate,
    tls_extension,
    verified_peer,
)

#: Used when the app sets none (an app served without skillrack's lifespan).
DEFAULT_HEADER_TIMEOUT = 10.0
_REQUEST_TIMEOUT = (
    b"HTTP/1.1 408 Request Timeout\r\ncontent-type: text/plain; charset=utf-8\r\n"
    b"content-length: 34\r\nconnection: close\r\n\r\nthe request headers did not arrive"
)


logger = logging.getLogger(__name__)


def set_nodelay(transport: asyncio.BaseTransport) -> None:
    """Turn Nagle's algorithm off on ``transport``'s TCP socket (nothing for other sockets)."""
    sock = transport.get_extra_info("socket")
    if sock is None or sock.family not in (socket.AF_INET, socket.AF_INET6):
        return
    try:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    except OSError:  # the connection is already gone
        return
    if logger.isEnabledFor(logging.DEBUG):
        nodelay = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
        logger.debug(
            "connection from %s accepted by process %d (TCP_NODELAY %s)",
            transport.get_extra_info("peername"),
            os.getpid(),
            "on" if nodelay else "off",
        )


class _WithPeerCertificate:
    """The app, with one TLS connection's ``tls`` extension and verified certificate in scope."""

    def __init__(
        self, app: ASGIApp, extension: dict[str, Any], peer: ClientCertificate | None
    ) -> None:
        self.app = app
        self.extension = extension
        self.peer = peer

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        scope["extensions"] = {**(scope.get("extensions") or {}), "tls": self.extension}
        if self.peer is not None:
            scope[CLIENT_CERTIFICATE_KEY] = self.peer
        await self.app(scope, receive, send)


class HeaderDeadlineProtocol(H11Protocol):
    """uvicorn's h11 protocol, closing a connection whose request headers do not arrive in time.

    The deadline moves with every request of a kept-alive connection; rather
    than cancel a timer and start another for each, the time is kept
    (``_deadline_at``) and one timer runs: when it fires before that time (the
    deadline moved on), it waits for the rest; with no deadline set, it ends.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.header_timeout = float(self.app_state.get(HEADER_TIMEOUT_KEY, DEFAULT_HEADER_TIMEOUT))
        #: When the client's next request headers must be complete; None while none is due.
        self._deadline_at: float | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._partial = False  # bytes of a request arrived since the deadline was set

    def _waiting_for_client(self) -> bool:
        return self.cycle is None or self.cycle.response_complete

    def _arm(self) -> None:
        self._partial = False
        self._deadline_at = self.loop.time() + self.header_timeout
        if self._timer is None:
            self._timer = self.loop.call_at(self._deadline_at, self._expired)

    def _disarm(self) -> None:
        self._deadline_at = None

    def _expired(self) -> None:
        self._timer = None
        due = self._deadline_at
        if due is None:
            return
        if self.loop.time() < due:  # moved on since this timer started: wait for the rest
            self._timer = self.loop.call_at(due, self._expired)
            return
        self._deadline_at = None
        if self.transport.is_closing() or not self._waiting_for_client():
            return
        if self._partial and self.conn.our_state is h11.IDLE:
            self.transport.write(_REQUEST_TIMEOUT)
        self.transport.close()

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        set_nodelay(transport)
        ssl_object = transport.get_extra_info("ssl_object")
        if ssl_object is not None:  # asyncio calls this once the TLS handshake is over
            peer = verified_peer(ssl_object)
            self.app = _WithPeerCertificate(self.app, tls_extension(ssl_object, peer), peer)
        self._arm()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self.transport.get_protocol() is not self:  # upgraded: no longer ours to close
            self._disarm()
        elif self._waiting_for_client():
            self._partial = self._partial or bool(data)
        else:
            self._disarm()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if self.transport.is_closing():
            self._disarm()
        elif self._waiting_for_client():
            self._arm()
            self._partial = self.conn.their_state is not h11.IDLE

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        if self._timer is not None:  # the loop lets go of this connection now
            self._timer.cancel()
            self._timer = None
        super().connection_lost(exc)
