"""An authentication plugin for tests: scheme ``scoped``, ``X-Scopes: a b`` grants those scopes.

For tests of per-skill security requirements (``[skills.<id>] security``),
which need a caller whose credential met a scheme with given scopes.
"""

from __future__ import annotations

from typing import Any

from skillrack import Caller, RequestCredentials, hookimpl


class ScopedTokens:
    """Scheme ``scoped``: ``X-Scopes: a b`` grants those scopes, in tenant ``X-Scopes-Tenant``."""

    @hookimpl
    def authenticate(self, request: RequestCredentials) -> Caller | None:
        value = request.headers.get("x-scopes")
        if value is None:
            return None
        tenant = request.headers.get("x-scopes-tenant", "")
        scopes = tuple(value.split())
        return Caller("svc", tenant=tenant, authenticated=True, schemes={"scoped": scopes})

    @hookimpl
    def security_schemes(self) -> dict[str, Any]:
        return {"scoped": {"apiKeySecurityScheme": {"location": "header", "name": "X-Scopes"}}}
