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


def owner_of(caller: Caller) -> str:
    """Whose a task (and what it leads to) is: the caller's tenant, else its own identity.

    Tasks are stored under this name, and the delegation hops a task makes are
    recorded under it, so that one tenant never sees another's.
    """
    return f"tenant:{caller.tenant}" if caller.tenant else f"identity:{caller.identity}"
