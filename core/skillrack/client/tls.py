"""The client's side of mutual TLS: a certificate to present, CAs to trust, what a card asks.

:class:`ClientTls` names a client certificate and its key (PEM files) and,
optionally, the CA bundle the agent's server certificate must chain to
(default: the system's trust store).  :meth:`ClientTls.context` loads them
into an ``ssl`` context once; a file that does not load is one
``ValueError`` naming it.

Whether a card's ``securityRequirements`` can be met without a certificate
is :mod:`skillrack.client.card_security`'s question, with the other schemes.

:class:`TlsByOrigin` is the transport of a client given certificates per
agent (``[peers]``-style), when no transport of its own is given: each
origin gets the context named for it, other origins httpx's default.
:func:`refused_hint` adds what to do to a transport error that looks like
a TLS refusal: under TLS 1.3 a server that refuses the client's certificate
(or its absence) does so after the client's handshake is over, and asyncio
servers close without flushing the alert, so the client sees a connection
closed before any answer, not a certificate error.
"""

from __future__ import annotations

import ssl
from collections.abc import Mapping
from dataclasses import dataclass

import httpx

from skillrack.client.origin import Origin
from skillrack.client.origin_pools import PerOrigin, origin_transport

#: Where a client certificate is given: the command line, a host's ``[peers]``, Python.
HOW = (
    "--client-cert and --client-key (CLI), client_cert and client_key in the peer's "
    "[peers] table, or SkillClient(tls=ClientTls(...))"
)


@dataclass(frozen=True)
class ClientTls:
    """A client certificate and key to present, and a CA bundle to verify the agent with.

    ``certfile`` may hold the key too (``keyfile`` then stays ``None``);
    ``cafile`` replaces the system's trust store for the agent's server
    certificate.  Without ``certfile`` only ``cafile`` applies.
    """

    certfile: str | None = None
    keyfile: str | None = None
    cafile: str | None = None

    @property
    def presents_certificate(self) -> bool:
        return self.certfile is not None

    def context(self) -> ssl.SSLContext:
        """An ``ssl`` context verifying the agent and presenting the certificate, if any."""
        if self.keyfile and not self.certfile:
            raise ValueError(f"the client key {self.keyfile} needs its certificate (--client-cert)")
        try:
            context = ssl.create_default_context(cafile=self.cafile)
        except (OSError, ssl.SSLError) as exc:
            raise ValueError(
                f"cannot load the CA bundle {self.cafile}: {getattr(exc, 'strerror', None) or exc}"
            ) from None
        if self.certfile:
            try:
                context.load_cert_chain(self.certfile, self.keyfile)
            except (OSError, ssl.SSLError) as exc:
                key = f" or its key {self.keyfile}" if self.keyfile else ""
                raise ValueError(
                    f"cannot load the client certificate {self.certfile}{key}: "
                    f"{getattr(exc, 'strerror', None) or exc}"
                ) from None
        return context


def refused_hint(exc: Exception, url: str, presents_certificate: bool) -> str:
    """What to add to a transport error on ``url`` that may be a TLS refusal ('' if none)."""
    if not url.startswith("https://"):
        return ""
    text = str(exc).lower()
    if "certificate verify failed" in text or "certificate_verify_failed" in text:
        return (
            " (the agent's own TLS certificate did not verify: if a private CA issued it, "
            "give that CA with --ca-bundle (CLI), ca_bundle in the peer's [peers] table, or "
            "ClientTls(cafile=...))"
        )
    # Closed without an answer, or reset (the server's close can reach the client as a reset).
    closed = isinstance(exc, httpx.ReadError) or (
        isinstance(exc, httpx.RemoteProtocolError) and "disconnected" in text
    )
    tls = any(word in text for word in ("certificate", "alert", "ssl", "handshake", "eof", "reset"))
    if not (closed or tls):
        return ""
    if presents_certificate:
        return (
            " (the agent may have refused this client certificate in the TLS handshake: "
            "not issued by a CA it trusts, expired, or not for client use)"
        )
    return (
        " (an agent that requires a client certificate closes the connection of a client "
        f"without one: if it uses mutual TLS, give one with {HOW})"
    )


class TlsByOrigin(httpx.AsyncBaseTransport):
    """Connects with the ``ssl`` context named for the request's origin, else httpx's default."""

    def __init__(self, contexts: Mapping[Origin, ssl.SSLContext]) -> None:
        self._transports: dict[Origin | None, httpx.AsyncBaseTransport] = {
            origin: origin_transport(verify=context) for origin, context in contexts.items()
        }
        self._default = PerOrigin()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        inner = self._transports.get(Origin.of(request.url), self._default)
        return await inner.handle_async_request(request)

    async def aclose(self) -> None:
        for transport in (*self._transports.values(), self._default):
            await transport.aclose()
