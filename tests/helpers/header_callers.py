"""An authentication plugin for tests: the caller is whoever ``X-Test-Caller`` names.

``X-Test-Caller: tenant/identity`` or ``tenant/identity/role,role``.  Only for
tests that need several authenticated identities, tenants and roles against
one served agent without minting keys or tokens.
"""

from __future__ import annotations

from skillrack import Caller, hookimpl
from skillrack.serve.security.authn import RequestCredentials

HEADER = "X-Test-Caller"


def caller_header(tenant: str, identity: str, *roles: str) -> dict[str, str]:
    """The request header naming that caller."""
    value = f"{tenant}/{identity}" + (f"/{','.join(roles)}" if roles else "")
    return {HEADER: value}


class HeaderCallers:
    @hookimpl
    def authenticate(self, request: RequestCredentials) -> Caller | None:
        value = request.headers.get(HEADER.lower())
        if not value:
            return None
        tenant, identity, *rest = value.split("/")
        roles = rest[0].split(",") if rest else []
        return Caller(
            identity=identity, tenant=tenant, authenticated=True, attributes={"roles": roles}
        )
