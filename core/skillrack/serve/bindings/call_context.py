"""What a2a-sdk's call context carries for skillrack, whatever the binding.

The JSON-RPC and HTTP+JSON context builder
(:class:`skillrack.serve.bindings.request_handler.ContextBuilder`) and the gRPC binding
(:mod:`skillrack.serve.bindings.grpc_server`) hand the executor the same things through
here: the authenticated caller (as a2a-sdk's ``User`` and under
:data:`~skillrack.serve.scope.CALLER_KEY`), the client's address, and the set in which
the executor records that the request activated the schema-interface extension, so that
the binding can echo it.
"""

from __future__ import annotations

from a2a.auth.user import User
from a2a.server.context import ServerCallContext

from skillrack.serve.scope import ACTIVATED_EXTENSIONS_KEY, CALLER_KEY, CLIENT_HOST_KEY
from skillrack.serve.security.caller import Caller


class CallerUser(User):
    """The authenticated caller as a2a-sdk's ``User``."""

    def __init__(self, caller: Caller) -> None:
        self.caller = caller

    @property
    def is_authenticated(self) -> bool:
        return self.caller.authenticated

    @property
    def user_name(self) -> str:
        return self.caller.identity


def bind_call(
    context: ServerCallContext, caller: Caller, client_host: str | None, activated: set[str]
) -> ServerCallContext:
    """``context`` carrying ``caller``, the client's address and the activation set."""
    context.user = CallerUser(caller)
    context.state[CALLER_KEY] = caller
    context.state[CLIENT_HOST_KEY] = client_host
    context.state[ACTIVATED_EXTENSIONS_KEY] = activated
    return context


__all__ = ["CallerUser", "bind_call"]
