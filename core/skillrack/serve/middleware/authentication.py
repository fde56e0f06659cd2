"""Authentication in front of the A2A bindings: who is calling, established once per request.

:class:`AuthenticationGate` runs every authentication plugin
(:mod:`skillrack.serve.security.authn`) for every request except the public
paths (the Agent Card and its keys), answers a refused request with HTTP
401, a ``WWW-Authenticate`` challenge and the draft's ``authorization_failed``
code in the binding's error form, and puts the caller in the ASGI scope, where
the context builder hands it to a2a-sdk and the executor.  The caller is
never taken from message content.
"""

from __future__ import annotations

import pluggy
from starlette.types import ASGIApp, Receive, Scope, Send

from skillrack.errors import ErrorCode
from skillrack.serve.middleware.binding_errors import binding_error
from skillrack.serve.security.authn import RequestCredentials, authenticate

#: Where the authenticated :class:`~skillrack.serve.context.Caller` is put in the ASGI scope.
CALLER_SCOPE_KEY = "skillrack.caller"
#: JSON-RPC has no code for authentication; -32000 is the first implementation-defined one.
JSONRPC_UNAUTHENTICATED = -32000


class AuthenticationGate:
    """Refuses a request no authentication plugin accepts; records the caller of the others."""

    def __init__(self, app: ASGIApp, *, manager: pluggy.PluginManager, public: set[str]) -> None:
        self.app = app
        self.manager = manager
        self.public = public

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in self.public:
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        client = scope.get("client")
        outcome = await authenticate(
            self.manager,
            RequestCredentials(
                headers=headers, client_host=client[0] if client else None, path=scope["path"]
            ),
        )
        if outcome.caller is None:
            challenges = [(b"www-authenticate", c.encode("latin-1")) for c in outcome.challenges]
            await binding_error(
                scope,
                send,
                status=401,
                jsonrpc_code=JSONRPC_UNAUTHENTICATED,
                code=ErrorCode.AUTHORIZATION_FAILED,
                message=outcome.message,
                headers=challenges,
            )
            return
        scope[CALLER_SCOPE_KEY] = outcome.caller
        await self.app(scope, receive, send)
