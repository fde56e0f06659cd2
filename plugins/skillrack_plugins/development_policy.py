"""DEVELOPMENT ONLY: an authorization policy that allows every invocation.

It exists so that ``skillrack serve`` on a laptop works before any policy is
configured.  It never belongs on a network others can reach: it grants every
caller every skill.  ``skillrack serve`` enables it only when no other policy
is configured and says so at start-up.
"""

from __future__ import annotations

from skillrack import AuthorizationRequest, Decision, hookimpl

NAME = "development-allow-all"


@hookimpl
def authorize_invocation(request: AuthorizationRequest) -> Decision:
    return Decision.allow("development policy allows everything")
