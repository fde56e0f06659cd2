"""The client's side of mutual TLS: a certificate to present, CAs to trust, what a card asks.

:class:`ClientTls` names a client certificate and its key (PEM files) and,
optionally, the CA bundle the agent's server certificate must chain to
(default: the system's trust store).  :meth:`ClientTls.context` loads them
into an ``ssl`` context once; a file that does not load is one
``ValueError`` naming it.

:func:`certificate_scheme` reads an Agent Card (and one skill's entry): when
every alternative of its ``securityRequirements`` names a scheme whose
definition is ``mtlsSecurityScheme``, a client without a certificate cannot
be accepted, and :class:`~skillrack.client.skill_client.SkillClient` says so
locally before it sends anything (:func:`missing_certificate`).

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
from typing import Any

import httpx

from skillrack.client.origin import Origin
from skillrack.errors import ErrorCode, SkillCallError

#: The A2A ``SecurityScheme`` member naming mutual TLS (JSON form).
MTLS_SCHEME = "mtlsSecurityScheme"
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


def _mtls_names(card: Mapping[str, Any]) -> set[str]:
    schemes = card.get("securitySchemes")
    if not isinstance(schemes, Mapping):
        return set()
    return {
        name
        for name, scheme in schemes.items()
        if isinstance(scheme, Mapping) and MTLS_SCHEME in scheme
    }


def _needs(requirements: Any, mtls: set[str]) -> str | None:
    """An mTLS scheme every alternative of ``requirements`` names, if each names one."""
    if not isinstance(requirements, list) or not requirements:
        return None
    found: str | None = None
    for requirement in requirements:
        schemes = requirement.get("schemes") if isinstance(requirement, Mapping) else None
        named = sorted(mtls & set(schemes)) if isinstance(schemes, Mapping) else []
        if not named:
            return None  # this alternative needs no certificate
        found = found or named[0]
    return found


def certificate_scheme(card: Mapping[str, Any], skill_id: str | None = None) -> str | None:
    """The card's mTLS scheme a caller of ``skill_id`` cannot do without, or None.

    The agent's ``securityRequirements`` first, then the skill's own (A2A
    1.0 ``AgentSkill.securityRequirements``), which a caller must meet too.
    """
    mtls = _mtls_names(card)
    if not mtls:
        return None
    needed = _needs(card.get("securityRequirements"), mtls)
    if needed is None and skill_id is not None:
        for skill in card.get("skills") or ():
            if isinstance(skill, Mapping) and skill.get("id") == skill_id:
                needed = _needs(skill.get("securityRequirements"), mtls)
    return needed


def missing_certificate(agent: str, scheme: str, skill_id: str | None) -> SkillCallError:
    """The local error for a card that requires a client certificate the client lacks."""
    what = f"skill {skill_id} of {agent}" if skill_id else agent
    return SkillCallError.local(
        ErrorCode.AUTHORIZATION_FAILED,
        f"the Agent Card of {agent} requires a client certificate for {what} (mutual TLS, "
        f"scheme {scheme!r}) and none is configured for it; nothing was sent: give one with "
        f"{HOW}",
    )


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
    closed = isinstance(exc, httpx.RemoteProtocolError) and "disconnected" in text
    tls = any(word in text for word in ("certificate", "alert", "ssl", "handshake"))
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
            origin: httpx.AsyncHTTPTransport(verify=context) for origin, context in contexts.items()
        }
        self._default = httpx.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        inner = self._transports.get(Origin.of(request.url), self._default)
        return await inner.handle_async_request(request)

    async def aclose(self) -> None:
        for transport in (*self._transports.values(), self._default):
            await transport.aclose()
