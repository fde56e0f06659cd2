"""Who is one person, for separation of duties: identities compared, and the operator's mapping.

The approvals store refuses a decision by the person who asked
(:mod:`skillrack.serve.security.approvals`).  What it knows of each side is
an identity as an authentication scheme established it: ``alice`` by API key,
``00u1x9`` (an issuer's ``sub``) by OpenID Connect, ``CN=alice,O=Acme`` by
client certificate.  Schemes name people independently, so by themselves two
such identities are one person only when they are the same identity within
a tenant (or, without a tenant, the same identity from the same scheme):
:func:`same_identity`.

An operator who knows that several identities are one person says so, and
separation of duties then refuses a self-approval made under another scheme::

    [approvals.people]
    alice = ["api_key:alice", "oidc:00u1x9", "mtls:CN=alice,O=Acme"]
    bob = ["api_key:bob", "oidc:00u7k2"]

Each entry is ``SCHEME:IDENTITY``: the scheme that authenticated the caller
(``api_key``, ``jwt``, ``mtls``, ``oidc``; another plugin's card scheme
names, comma-separated) and the identity exactly as that scheme gives it
(everything after the first ``:``).  An entry matches that identity whatever
its tenant, and a side whose scheme is unknown (``skillrack approvals --by``,
an approval recorded before schemes were) matches an entry of any scheme
with its identity: the mapping only ever refuses more, never lets anyone
decide what they could not.  An identity may belong to one person only.  The
person's name is recorded with each decision they make.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from skillrack.host.settings import ConfigError, refuse_unknown_keys

#: The keys of the ``[approvals]`` table.
APPROVALS_KEYS = ("people",)
#: A scheme as :func:`skillrack.serve.security.caller.scheme_of` names it.
_SCHEME = re.compile(r"[A-Za-z0-9_.+-]+(,[A-Za-z0-9_.+-]+)*")


@dataclass(frozen=True)
class Identity:
    """One side of a decision: an identity, its tenant, and the scheme that authenticated it.

    ``scheme`` is ``""`` when unknown (the CLI's ``--by``, older records).
    """

    name: str
    tenant: str = ""
    scheme: str = ""


def same_identity(one: Identity, other: Identity) -> bool:
    """The same identity within a tenant; by scheme where no tenant separates them.

    A side without a tenant (the CLI's ``--by``) compares on the name alone,
    so that a name given on the host cannot decide any tenant's request made
    under that name; where neither has a tenant, a side whose scheme is
    unknown matches the name in every scheme.
    """
    if one.name != other.name:
        return False
    if one.tenant and other.tenant:
        return one.tenant == other.tenant
    if not one.tenant and not other.tenant and one.scheme and other.scheme:
        return one.scheme == other.scheme
    return True


@dataclass(frozen=True)
class People:
    """``[approvals.people]``: ``(scheme, identity)`` -> the person the operator says it is."""

    persons: Mapping[tuple[str, str], str] = field(default_factory=dict)

    def of(self, who: Identity) -> frozenset[str]:
        """The persons ``who`` may be: one, or (scheme unknown) any an entry names it for."""
        if who.scheme:
            found = self.persons.get((who.scheme, who.name))
            return frozenset({found}) if found else frozenset()
        return frozenset(p for (_, name), p in self.persons.items() if name == who.name)

    def shared(self, one: Identity, other: Identity) -> str | None:
        """The person both identities are (the first by name), or ``None``."""
        both = self.of(one) & self.of(other)
        return min(both) if both else None


def read_approvals(table: Any) -> People:
    """The ``[approvals]`` table (``people``); every mistake one line naming the key."""
    if not isinstance(table, Mapping):
        raise ConfigError("[approvals] must be a table (people)")
    refuse_unknown_keys("[approvals]", table, APPROVALS_KEYS)
    people = table.get("people", {})
    if not isinstance(people, Mapping):
        raise ConfigError(
            '[approvals.people] maps each person to their identities: alice = ["api_key:alice", '
            '"oidc:00u1x9"]'
        )
    persons: dict[tuple[str, str], str] = {}
    for person, entries in people.items():
        where = f"approvals.people.{person}"
        if not person.strip() or person != person.strip():
            raise ConfigError(
                f"[approvals.people]: {person!r} is not a person's name (a name without "
                "blanks around it, such as ann)"
            )
        if not isinstance(entries, list) or not entries:
            raise ConfigError(
                f'{where} must be a non-empty list of "SCHEME:IDENTITY" strings '
                '(e.g. ["api_key:alice", "oidc:00u1x9"])'
            )
        for entry in entries:
            scheme, _, name = entry.partition(":") if isinstance(entry, str) else ("", "", "")
            if not _SCHEME.fullmatch(scheme) or not name or name != name.strip():
                raise ConfigError(
                    f"{where}: {str(entry)[:80]!r} is not SCHEME:IDENTITY (the scheme that "
                    "authenticates it, such as api_key, jwt, mtls or oidc, then the identity "
                    "as that scheme gives it)"
                )
            other = persons.setdefault((scheme, name), person)
            if other != person:
                raise ConfigError(
                    f"{where}: {entry!r} is already one of {other}'s identities; an identity "
                    "belongs to one person"
                )
    return People(persons)
