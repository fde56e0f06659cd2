"""Authentication: plugins turn a request into a :class:`~skillrack.serve.security.caller.Caller`.

Or refuse it.

Every ``authenticate`` implementation is asked (and awaited), as datasette
does for ``actor_from_request``: a plugin that finds a credential it owns but
cannot accept (wrong key, expired token) raises :class:`AuthenticationFailed`,
which vetoes the request even if another plugin recognised a different
credential; otherwise the first plugin, in pluggy's call order, that returns a
caller wins (``@hookimpl(tryfirst=True)`` first, ``trylast`` last, among the
others the last registered first; see :mod:`skillrack.host.hooks`).  When at
least one authentication plugin is installed, a request that none of them
recognises fails authentication: anonymous access exists only on an agent with
no authentication plugin at all.

Refused requests get HTTP 401 on both bindings with a ``WWW-Authenticate``
challenge and the draft's ``authorization_failed`` code in the binding's error
form; the Agent Card stays public.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import pluggy

from skillrack.errors import SkillrackError
from skillrack.host.hooks import call_each, call_each_async
from skillrack.serve.security.caller import ANONYMOUS, Caller
from skillrack.serve.security.client_certificate import ClientCertificate

logger = logging.getLogger(__name__)


class AuthenticationFailed(SkillrackError):
    """A credential was presented but cannot be accepted.

    ``message`` is shown to the caller, so it must not explain why in detail
    (no "signature valid but audience wrong"); ``challenge`` is the
    ``WWW-Authenticate`` value for this plugin's scheme.
    """

    def __init__(self, message: str = "authentication failed", challenge: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.challenge = challenge


@dataclass(frozen=True)
class RequestCredentials:
    """What an authentication plugin may look at: headers (lower-case names) and the peer.

    ``client_certificate`` is the certificate the client presented on a TLS
    connection and the server verified against ``[server] ssl_client_ca``
    (:mod:`skillrack.serve.security.client_certificate`); ``None`` on plain
    HTTP, when the server does not ask for certificates, or when the client
    sent none (``ssl_client_auth = "optional"``).

    ``headers`` holds one value per name; ``repeated`` names (lower-case) the
    headers the request carried more than once.  The authentication gate
    refuses a request that repeats ``Authorization`` or a header an
    authentication plugin's security scheme names, before any plugin runs; a
    plugin reading another header refuses it when that header is repeated,
    because which copy is "the" credential is exactly what an attacker
    would like to choose.
    """

    headers: Mapping[str, str]
    client_host: str | None = None
    path: str = "/"
    repeated: frozenset[str] = frozenset()
    client_certificate: ClientCertificate | None = None


@dataclass(frozen=True)
class Authentication:
    """The outcome for one request: a caller, or a refusal with challenges."""

    caller: Caller | None
    message: str = ""
    challenges: tuple[str, ...] = field(default_factory=tuple)
    #: The plugin whose refusal refused the request (``None``: no plugin accepted one).
    refused_by: str | None = None


def schemes_by_plugin(manager: pluggy.PluginManager) -> dict[str, tuple[str, ...]]:
    """The names of the card's security schemes each plugin contributes (computed once)."""
    found: dict[str, tuple[str, ...]] = {}
    for answer in call_each(manager, "security_schemes", {}):
        if isinstance(answer.result, Mapping):
            found[answer.plugin] = tuple(str(name) for name in answer.result)
    return found


async def authenticate(
    manager: pluggy.PluginManager,
    credentials: RequestCredentials,
    schemes_of: Mapping[str, tuple[str, ...]] | None = None,
) -> Authentication:
    """Ask every authentication plugin; apply the veto rule described in the module docstring.

    The caller returned is the first plugin's, with ``schemes`` holding every
    scheme some plugin accepted a credential for (a client certificate and a
    bearer token on one request meet two), each plugin's own ``schemes`` or,
    when it sets none, the names ``schemes_of`` (:func:`schemes_by_plugin`)
    gives for it.  Only credentials naming the same tenant as the first
    caller's count: a token granted in another tenant meets nothing here.
    """
    if not manager.hook.authenticate.get_hookimpls():
        return Authentication(ANONYMOUS)
    if schemes_of is None:
        schemes_of = schemes_by_plugin(manager)
    met: dict[str, set[str]] = {}
    found: Caller | None = None
    refusal: AuthenticationFailed | None = None
    refused_by: str | None = None
    challenges: list[str] = []
    for answer in await call_each_async(manager, "authenticate", {"request": credentials}):
        if isinstance(answer.error, AuthenticationFailed):
            refused_by = refused_by or answer.plugin
            refusal = refusal or answer.error
            if answer.error.challenge:
                challenges.append(answer.error.challenge)
            continue
        if answer.error is not None:
            logger.error(
                "authentication plugin %s failed; request refused",
                answer.plugin,
                exc_info=answer.error,
            )
            refused_by = refused_by or answer.plugin
            refusal = refusal or AuthenticationFailed()
            continue
        if isinstance(answer.result, Caller):
            found = found or answer.result
            if answer.result.tenant != found.tenant:
                # A credential for another tenant lends no scope here: the call
                # runs in the first caller's tenant, so only what was granted
                # in that tenant may meet a skill's requirements.
                continue
            granted = answer.result.schemes or dict.fromkeys(schemes_of.get(answer.plugin, ()), ())
            for scheme, scopes in granted.items():
                met.setdefault(scheme, set()).update(scopes)
    for scheme in manager.hook.www_authenticate():
        if scheme and scheme not in challenges:
            challenges.append(scheme)
    if refusal is not None:
        return Authentication(None, refusal.message, tuple(challenges), refused_by)
    if found is None:
        return Authentication(None, "credentials are required", tuple(challenges))
    schemes = {scheme: tuple(sorted(scopes)) for scheme, scopes in met.items()}
    return Authentication(replace(found, schemes=schemes), challenges=tuple(challenges))


def security_schemes(manager: pluggy.PluginManager) -> dict[str, Any]:
    """The card's ``securitySchemes``, merged from every authentication plugin."""
    schemes: dict[str, Any] = {}
    for contribution in reversed(manager.hook.security_schemes()):
        if isinstance(contribution, Mapping):
            schemes.update(contribution)
    return schemes
