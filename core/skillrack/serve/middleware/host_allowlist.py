"""Only the host names the agent is reached by: no DNS rebinding.

A browser page on ``rebind.evil.example`` can make its own name resolve to
127.0.0.1 (or to an internal address) and then talk to a local agent as a
same-origin site: the only trace of the trick is the ``Host`` header, which
still names ``rebind.evil.example``.  :class:`HostAllowlist` runs first,
before authentication and before the Agent Card, and answers any other
``Host`` with HTTP 421 (Misdirected Request) in the binding's error form.

Allowed hosts (``[server] allowed_hosts``) are names or IP literals compared
without their port and case-insensitively (``agents.example.net``,
``127.0.0.1``, ``[::1]``), ``*.example.net`` for any name below
``example.net``, or ``*`` to accept every host (behind a proxy that checks
it).  Without the setting, :func:`default_allowed_hosts` allows the host of
the agent's public URL and the address it listens on, plus the loopback
names (``localhost``, ``127.0.0.1``, ``[::1]``) when the agent listens on
loopback or on every address.  A request without ``Host``, or with two, is refused too.  We do not
use Starlette's ``TrustedHostMiddleware``: it answers in plain text, reads
only the first of two ``Host`` headers, and redirects to ``www.`` names.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable
from urllib.parse import urlsplit

from starlette.types import ASGIApp, Receive, Scope, Send

from skillrack.errors import ErrorCode
from skillrack.host.startup import is_loopback
from skillrack.serve.middleware.binding_errors import binding_error

#: What a loopback agent is reached by: names, not ports (any port is allowed).
LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "::1")
#: Listen addresses that include loopback: every IPv4 or IPv6 address.
WILDCARD_ADDRESSES = frozenset({"0.0.0.0", "::", ""})

_NAME = re.compile(r"[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?)*")


def host_name(value: str) -> str | None:
    """The host of a ``Host`` header or an allowlist entry, normalized; None when malformed.

    Lower case, no port, no trailing dot, IPv6 literals without brackets
    (``[::1]:8000`` -> ``::1``).
    """
    value = value.strip().lower()
    if value.startswith("["):
        literal, bracket, rest = value[1:].partition("]")
        if not bracket or (rest and not re.fullmatch(r":[0-9]*", rest)):
            return None
        try:
            return str(ipaddress.IPv6Address(literal))
        except ValueError:
            return None
    if value.count(":") > 1:  # an IPv6 literal without brackets (allowlist entries only)
        try:
            return str(ipaddress.IPv6Address(value))
        except ValueError:
            return None
    name, _, port = value.partition(":")
    if port and not port.isdigit():
        return None
    name = name.rstrip(".")
    return name if _NAME.fullmatch(name) else None


def check_patterns(patterns: Iterable[str]) -> str | None:
    """The first entry that is not a host, ``*.name`` or ``*``; None when all are."""
    for pattern in patterns:
        if pattern == "*":
            continue
        if host_name(pattern.removeprefix("*.")) is None:
            return pattern
    return None


def default_allowed_hosts(base_url: str, listen_host: str | None) -> tuple[str, ...]:
    """The public URL's host and the address listened on, plus loopback names on loopback.

    ``listen_host`` is where uvicorn listens (None for an agent served in
    process: then the public URL's host decides).  The address listened on
    is allowed because a proxy in front may name it as ``Host``, and an
    address cannot be rebound: rebinding needs a name its attacker controls.
    """
    public = host_name(urlsplit(base_url).netloc.rpartition("@")[2]) or ""
    listen = public if listen_host is None else (host_name(listen_host) or "")
    hosts = [public] if public else []
    if listen in WILDCARD_ADDRESSES or listen_host in WILDCARD_ADDRESSES or is_loopback(listen):
        hosts += [h for h in LOOPBACK_HOSTS if h not in hosts]
    elif listen and listen not in hosts:
        hosts.append(listen)
    return tuple(hosts)


class HostAllowlist:
    """Refuses a request whose ``Host`` the agent does not answer to (421)."""

    def __init__(self, app: ASGIApp, *, allowed: Iterable[str]) -> None:
        self.app = app
        patterns = [p.strip().lower() for p in allowed]
        self.any = "*" in patterns
        self.exact = frozenset(h for p in patterns if (h := host_name(p)) and p[:2] != "*.")
        self.suffixes = tuple(
            "." + h for p in patterns if p.startswith("*.") and (h := host_name(p[2:]))
        )

    def allows(self, host: str) -> bool:
        """Whether a request naming ``host`` (a ``Host`` header value) is for this agent."""
        name = host_name(host)
        if name is None:
            return False
        return name in self.exact or name.endswith(self.suffixes)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.any or scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        hosts = [value for name, value in scope["headers"] if name.lower() == b"host"]
        if len(hosts) == 1 and self.allows(hosts[0].decode("latin-1")):
            await self.app(scope, receive, send)
            return
        await binding_error(
            scope,
            send,
            status=421,
            jsonrpc_code=-32600,
            code=ErrorCode.AUTHORIZATION_FAILED,
            message="misdirected request: this agent does not answer to that Host",
            headers=[(b"connection", b"close")],
        )
