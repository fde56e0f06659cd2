"""Who is calling, as authentication established it, and whose tasks are whose.

Every room of ``serve/`` below the bindings reads the caller (security decides on
it, execution hands it to handlers, stores file tasks under its owner), so it is
declared here, at the bottom of ``security/``, and nowhere else.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Caller:
    """Who is calling, as authentication established it."""

    identity: str
    tenant: str = ""
    authenticated: bool = False
    attributes: dict[str, Any] = field(default_factory=dict)
    #: The card's security schemes this request's credentials met, each with the scopes
    #: granted under it (``{"oidc": ("network:read",)}``).  An authentication plugin may
    #: set it; when it does not, the host fills in the names of the schemes the plugin
    #: contributes to the card, without scopes.  Per-skill security requirements
    #: (:mod:`skillrack.serve.security.requirements`) are checked against it.
    schemes: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


ANONYMOUS = Caller(identity="anonymous")


def auth_scheme(caller: Caller) -> str:
    """The scheme that authenticated ``caller``, tenant or not; ``""`` when unauthenticated.

    The first-party plugins say which they are (``attributes["auth"]``); for
    another plugin, the card schemes its credential met, comma-separated.
    """
    if not caller.authenticated:
        return ""
    auth = caller.attributes.get("auth")
    if isinstance(auth, str) and auth:
        return auth
    return ",".join(sorted(caller.schemes))


def scheme_of(caller: Caller) -> str:
    """The scheme that authenticated ``caller`` where no tenant separates identities, else ``""``.

    Two authentication schemes name people independently (a certificate's
    mapped identity, an issuer's ``sub``, an API key's ``identity``), so
    without a tenant the same string from two schemes is two callers.  The
    scheme is :func:`auth_scheme`.  Operators who want one person across
    schemes give the mappings the same tenant (for approvals, they may map
    identities to people instead: ``[approvals.people]``).
    """
    return "" if caller.tenant else auth_scheme(caller)


def qualified_identity(caller: Caller) -> str:
    """``caller``'s identity, prefixed by :func:`scheme_of` when that is not empty."""
    scheme = scheme_of(caller)
    return f"{scheme}:{caller.identity}" if scheme else caller.identity


def owner_of(caller: Caller) -> str:
    """Whose a task (and what it leads to) is: the caller's tenant, else its own identity.

    Tasks are stored under this name, and the delegation hops a task makes are
    recorded under it, so that one tenant never sees another's.  Without a
    tenant the identity is qualified by its scheme (:func:`scheme_of`): the
    tasks a tenant-less caller created before schemes were recorded stay in
    the store but are no longer its own (see docs/security.md).
    """
    if caller.tenant:
        return f"tenant:{caller.tenant}"
    return f"identity:{qualified_identity(caller)}"
