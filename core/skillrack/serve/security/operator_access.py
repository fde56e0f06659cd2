"""Who may read the operator endpoints (``/-/hops``, ``/metrics``, the console), and what.

They show what an agent did for its callers, so they are guarded like the
tasks they describe.  Once authentication is configured (an authentication
plugin is installed), a caller reads them only with the :data:`OPERATOR_ROLE`
among its ``attributes["roles"]`` (the first-party ``api_keys`` and ``jwt``
plugins set them from the key entry or the token), and sees only what belongs
to its own tenant (:func:`~skillrack.serve.security.caller.owner_of`): 403
otherwise, in the HTTP+JSON error form.  Without authentication there are no
tenants; the endpoints then answer loopback clients only, which is where a
development agent without authentication listens.
"""

from __future__ import annotations

from typing import Any, Protocol

import pluggy
from starlette.requests import Request
from starlette.responses import JSONResponse

from skillrack.host.startup import is_loopback
from skillrack.serve.scope import CALLER_KEY
from skillrack.serve.security.caller import ANONYMOUS, Caller, owner_of

#: The role a caller needs to read an operator endpoint once authentication is configured.
OPERATOR_ROLE = "operator"


class RecordedHop(Protocol):
    """One delegation hop as :class:`skillrack.client.composition.HopLog` keeps it."""

    @property
    def owner(self) -> str: ...

    def to_json(self) -> dict[str, Any]: ...


def roles_of(caller: Caller) -> list[str]:
    """The caller's roles, as authentication plugins put them in ``attributes["roles"]``."""
    roles = caller.attributes.get("roles")
    if isinstance(roles, list | tuple | set | frozenset):
        return [role for role in roles if isinstance(role, str)]
    return []


def _forbidden(message: str) -> JSONResponse:
    return JSONResponse(
        {"error": {"code": 403, "status": "PERMISSION_DENIED", "message": message}},
        status_code=403,
    )


class OperatorGuard:
    """Decides who reads the operator endpoints; see the module docstring."""

    def __init__(self, manager: pluggy.PluginManager) -> None:
        self._manager = manager

    @property
    def authentication_configured(self) -> bool:
        return bool(self._manager.hook.authenticate.get_hookimpls())

    def refusal_reason(self, request: Request) -> str | None:
        """``None`` when ``request`` may read an operator endpoint, else why not (one line)."""
        if not self.authentication_configured:
            client = request.client
            if client is None or not is_loopback(client.host):
                return (
                    "operator endpoints answer loopback clients only while no "
                    "authentication plugin is installed"
                )
            return None
        caller = request.scope.get(CALLER_KEY)
        if not isinstance(caller, Caller) or OPERATOR_ROLE not in roles_of(caller):
            return f"operator endpoints need the {OPERATOR_ROLE!r} role"
        return None

    def refusal(self, request: Request) -> JSONResponse | None:
        """``None`` when ``request`` may read an operator endpoint, else the 403 to send."""
        reason = self.refusal_reason(request)
        return None if reason is None else _forbidden(reason)

    def owner(self, request: Request) -> str | None:
        """Whose records the request may see; ``None`` (all of them) without authentication."""
        if not self.authentication_configured:
            return None
        caller = request.scope.get(CALLER_KEY, ANONYMOUS)
        return owner_of(caller)
