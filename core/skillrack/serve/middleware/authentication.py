"""Authentication in front of the A2A bindings: who is calling, established once per request.

:class:`AuthenticationGate` runs every authentication plugin
(:mod:`skillrack.serve.security.authn`) for every request except the public
paths (the Agent Card and its keys), answers a refused request with HTTP
401, a ``WWW-Authenticate`` challenge and the draft's ``authorization_failed``
code in the binding's error form, and puts the caller in the ASGI scope, where
the context builder hands it to a2a-sdk and the executor.  The caller is
never taken from message content.

Under ``signs_in`` (the console's path) a request that carries no credential
at all is passed on without a caller: the console knows people by its signed
session cookie (:mod:`skillrack.serve.console.session`) or sends them to its
sign-in page, where a browser that cannot add headers can sign in.  A
credential that is presented and refused is answered 401 there too.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import pluggy
from starlette.types import ASGIApp, Receive, Scope, Send

from skillrack.errors import ErrorCode
from skillrack.serve.middleware.binding_errors import binding_error
from skillrack.serve.observability.metrics import Metrics
from skillrack.serve.scope import CALLER_KEY, CLIENT_CERTIFICATE_KEY
from skillrack.serve.security.authn import (
    Authentication,
    RequestCredentials,
    authenticate,
    schemes_by_plugin,
    security_schemes,
)
from skillrack.serve.security.client_certificate import ClientCertificate

#: JSON-RPC has no code for authentication; -32000 is the first implementation-defined one.
JSONRPC_UNAUTHENTICATED = -32000
#: Headers that carry credentials whatever the plugins (RFC 9110 section 11.6).
STANDARD_CREDENTIAL_HEADERS = frozenset({"authorization", "proxy-authorization"})


def credential_headers(manager: pluggy.PluginManager) -> frozenset[str]:
    """Lower-case names of the headers that carry credentials on this agent."""
    names = set(STANDARD_CREDENTIAL_HEADERS)
    for scheme in security_schemes(manager).values():
        api_key = scheme.get("apiKeySecurityScheme") if isinstance(scheme, dict) else None
        if isinstance(api_key, dict) and api_key.get("location") == "header":
            name = api_key.get("name")
            if isinstance(name, str) and name:
                names.add(name.lower())
    return frozenset(names)


class Authenticator:
    """The one authentication step of every binding (HTTP headers, gRPC metadata).

    Holds what is computed once per agent: the credential header names and
    the security schemes each plugin contributes.
    """

    def __init__(self, manager: pluggy.PluginManager, metrics: Metrics | None = None) -> None:
        self.manager = manager
        self.metrics = metrics
        self.credential_headers = credential_headers(manager)
        self.schemes_of = schemes_by_plugin(manager)

    async def admit(
        self,
        headers: Iterable[tuple[str, str]],
        *,
        client_host: str | None,
        path: str,
        client_certificate: ClientCertificate | None = None,
    ) -> Authentication:
        """Who sends ``headers``, or why not.

        ``headers`` are (name, value) pairs as received; a credential header
        that comes twice is refused before any plugin runs, and each refusal is
        counted by the plugin that refused.  ``client_certificate`` is the one
        the TLS handshake verified, if any.
        """
        values: dict[str, str] = {}
        repeated: set[str] = set()
        for raw_name, value in headers:
            name = raw_name.lower()
            if name in values:
                repeated.add(name)
            values[name] = value
        credentials = RequestCredentials(
            headers=values,
            client_host=client_host,
            path=path,
            repeated=frozenset(repeated),
            client_certificate=client_certificate,
        )
        duplicated = sorted(repeated & self.credential_headers)
        if duplicated and self.manager.hook.authenticate.get_hookimpls():
            if self.metrics is not None:
                self.metrics.authentication_failed("repeated")
            return Authentication(
                None,
                f"repeated credential header {duplicated[0]}",
                tuple(s for s in self.manager.hook.www_authenticate() if s),
                refused_by="repeated",
            )
        outcome = await authenticate(self.manager, credentials, self.schemes_of)
        if outcome.caller is None and self.metrics is not None:  # a plugin's name only
            self.metrics.authentication_failed(outcome.refused_by or "none")
        return outcome


class AuthenticationGate:
    """Refuses a request no authentication plugin accepts; records the caller of the others."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        manager: pluggy.PluginManager,
        public: set[str],
        metrics: Metrics | None = None,
        signs_in: str = "",
    ) -> None:
        self.app = app
        self.public = public
        self.signs_in = signs_in
        self.authenticator = Authenticator(manager, metrics)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in self.public:
            await self.app(scope, receive, send)
            return
        outcome = await self._admit(scope)
        if outcome.caller is None and outcome.refused_by is None and self._signs_in(scope["path"]):
            await self.app(scope, receive, send)  # no credential: the console's sign-in
            return
        if outcome.caller is None:
            await self._refuse(scope, send, outcome.message, outcome.challenges)
            return
        scope[CALLER_KEY] = outcome.caller
        await self.app(scope, receive, send)

    async def _admit(self, scope: Scope) -> Authentication:
        """The authenticators' verdict; the decoded headers go with this frame, not the
        caller's, which a stream keeps for as long as it is open."""
        raw = [(n.decode("latin-1"), v.decode("latin-1")) for n, v in scope["headers"]]
        client = scope.get("client")
        return await self.authenticator.admit(
            raw,
            client_host=client[0] if client else None,
            path=scope["path"],
            # Put there by skillrack's connection protocol only, from a verified handshake.
            client_certificate=scope.get(CLIENT_CERTIFICATE_KEY),
        )

    def _signs_in(self, path: str) -> bool:
        prefix = self.signs_in
        return bool(prefix) and (path == prefix or path.startswith(prefix + "/"))

    @staticmethod
    async def _refuse(scope: Scope, send: Send, message: str, challenges: Sequence[str]) -> None:
        await binding_error(
            scope,
            send,
            status=401,
            jsonrpc_code=JSONRPC_UNAUTHENTICATED,
            code=ErrorCode.AUTHORIZATION_FAILED,
            message=message,
            headers=[(b"www-authenticate", c.encode("latin-1")) for c in challenges],
        )
