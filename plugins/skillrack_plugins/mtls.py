"""Mutual TLS: a verified client certificate mapped to an identity, roles and a tenant.

``skillrack serve`` verifies the certificate itself, in the TLS handshake,
against ``[server] ssl_client_ca`` (or ``--ssl-client-ca``); this plugin
never sees a certificate that did not verify, and does no cryptography.  It
maps what the certificate says to who the caller is, by configuration::

    [plugins.mtls]
    # scheme = "mtls"                 # the card's securitySchemes name
    # description = "..."             # the card's mtlsSecurityScheme description

    [[plugins.mtls.map]]              # the first entry that matches wins
    spiffe_id = "spiffe://acme.example/ns/noc/sa/observer"
    identity = "observer"             # default: the matched value
    tenant = "acme"                   # default ""
    roles = ["operator"]              # default []

    [[plugins.mtls.map]]
    dns = "*.agents.acme.example"     # any SAN DNS name
    tenant = "acme"

    [[plugins.mtls.map]]
    subject = "CN=inventory,O=Acme,C=FR"   # the subject, RFC 4514 (as openssl -nameopt RFC2253)

Each entry names exactly one of ``spiffe_id`` (the certificate's SPIFFE ID:
its only URI SAN, ``spiffe://...``), ``uri`` (any SAN URI), ``dns`` (any
SAN DNS name), ``subject`` (the whole subject, RFC 4514) or ``fingerprint``
(SHA-256 of the DER certificate, 64 hex digits, case-insensitive; pins one
certificate).  Values other than ``fingerprint`` are
:func:`fnmatch.fnmatchcase` patterns: ``*`` matches any characters,
``/`` and ``.`` included, so ``spiffe://acme.example/ns/noc/*`` also matches
deeper paths.  A ``subject`` pattern is RFC 4514 text parsed into its
relative distinguished names (RDNs) at start-up, and matched on the
certificate's parsed subject, never on its text: the subject must have
exactly the pattern's RDNs, in order, each with the same attribute types,
and each value must match that RDN's value pattern.  So ``CN=*,O=Acme``
matches ``CN=inventory,O=Acme`` but not a certificate whose only RDN is a
common name spelled ``evil,O=Acme`` (its text ``CN=evil\\,O=Acme`` would match
the pattern as a string), and a ``*`` never spans RDNs.  ``identity``
defaults to the value that matched (the SPIFFE ID, URI, DNS name, the
subject's RFC 4514 text, or the fingerprint).

A request without a client certificate is not this plugin's business
(``None``: with ``ssl_client_auth = "optional"`` another scheme may
authenticate it).  A verified certificate that no entry maps is refused
(``AuthenticationFailed``): the CA vouched for it, the operator did not.  The
caller's ``attributes`` hold ``roles``, ``auth = "mtls"`` and the
certificate's ``fingerprint``, so the policy file's ``roles``,
``identities`` and ``tenants`` apply as to any other caller.

The card advertises ``mtlsSecurityScheme`` under ``scheme``.  mTLS has no
HTTP challenge, so the plugin adds no ``WWW-Authenticate``.
"""

from __future__ import annotations

import fnmatch
import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography import x509

from skillrack import (
    AuthenticationFailed,
    Caller,
    ClientCertificate,
    ConfigError,
    RequestCredentials,
    hookimpl,
    refuse_unknown_keys,
)

NAME = "mtls"
AUTH = "mtls"
DEFAULT_SCHEME = "mtls"
DEFAULT_DESCRIPTION = (
    "Mutual TLS: a client certificate issued by a CA the operator trusts, mapped to an identity."
)
MESSAGE = "client certificate not accepted"

logger = logging.getLogger(__name__)

_SETTINGS = frozenset({"scheme", "description", "map"})
_MATCHERS = ("spiffe_id", "uri", "dns", "subject", "fingerprint")
_ENTRY_FIELDS = frozenset({*_MATCHERS, "identity", "tenant", "roles"})
_FINGERPRINT = re.compile(r"[0-9a-fA-F]{64}")
_SCHEME_NAME = re.compile(r"[A-Za-z0-9_.-]{1,64}")

#: A parsed distinguished name: its RDNs in order, each its (attribute OID, value) pairs
#: sorted by OID (a multi-valued RDN is a set).
Rdns = tuple[tuple[tuple[str, str], ...], ...]


def rdns_of(name: x509.Name) -> Rdns:
    """``name``'s RDNs as comparable values (each value unescaped, as the CA issued it)."""
    return tuple(
        tuple(sorted((a.oid.dotted_string, str(a.value)) for a in rdn)) for rdn in name.rdns
    )


def subject_matches(pattern: Rdns, subject: Rdns) -> bool:
    """Whether a parsed subject has the pattern's RDNs, each value matching its pattern."""
    if len(pattern) != len(subject):
        return False
    for wanted, held in zip(pattern, subject, strict=True):
        if [oid for oid, _ in wanted] != [oid for oid, _ in held]:
            return False
        if not all(
            fnmatch.fnmatchcase(value, want)
            for (_, want), (_, value) in zip(wanted, held, strict=True)
        ):
            return False
    return True


@dataclass(frozen=True)
class _Entry:
    field: str
    pattern: str
    identity: str | None
    tenant: str
    roles: tuple[str, ...]
    #: ``subject`` entries: the pattern's parsed RDNs.
    rdns: Rdns = ()

    def match(self, cert: ClientCertificate) -> str | None:
        """The certificate value this entry matches, or None."""
        if self.field == "fingerprint":
            return cert.fingerprint if cert.fingerprint == self.pattern else None
        if self.field == "subject":
            if not cert.der:
                return None
            parsed = rdns_of(x509.load_der_x509_certificate(cert.der).subject)
            return cert.subject if subject_matches(self.rdns, parsed) else None
        values: tuple[str, ...]
        if self.field == "spiffe_id":
            values = (cert.spiffe_id,) if cert.spiffe_id else ()
        elif self.field == "uri":
            values = cert.uris
        else:
            values = cert.dns_names
        for value in values:
            if fnmatch.fnmatchcase(value, self.pattern):
                return value
        return None


class MutualTls:
    """The plugin object: maps verified client certificates to callers."""

    def __init__(self, entries: list[_Entry], scheme: str, description: str) -> None:
        self._entries = tuple(entries)
        self._scheme = scheme
        self._description = description

    @hookimpl
    def authenticate(self, request: RequestCredentials) -> Caller | None:
        cert = request.client_certificate
        if cert is None:
            return None
        for entry in self._entries:
            value = entry.match(cert)
            if value is not None:
                return Caller(
                    identity=entry.identity or value,
                    tenant=entry.tenant,
                    authenticated=True,
                    attributes={
                        "roles": list(entry.roles),
                        "auth": AUTH,
                        "fingerprint": cert.fingerprint,
                    },
                )
        logger.info(
            "client certificate %s (subject %s) is mapped by no [[plugins.mtls.map]] entry "
            "(client %s)",
            cert.fingerprint[:16],
            cert.subject,
            request.client_host or "-",
        )
        raise AuthenticationFailed(MESSAGE)

    @hookimpl
    def security_schemes(self) -> dict[str, Any]:
        return {self._scheme: {"mtlsSecurityScheme": {"description": self._description}}}


def create(settings: Mapping[str, Any], base_dir: Path) -> MutualTls:
    """Validate ``settings`` and return the plugin object (``base_dir`` is unused)."""
    refuse_unknown_keys("[plugins.mtls]", settings, _SETTINGS)
    scheme = settings.get("scheme", DEFAULT_SCHEME)
    if not isinstance(scheme, str) or not _SCHEME_NAME.fullmatch(scheme):
        raise ConfigError("mtls.scheme must be a name of letters, digits, '_', '.' or '-'")
    description = settings.get("description", DEFAULT_DESCRIPTION)
    if not isinstance(description, str) or not description:
        raise ConfigError("mtls.description must be a non-empty string")
    entries = settings.get("map")
    if not isinstance(entries, list) or not entries:
        raise ConfigError(
            "mtls.map must list at least one [[plugins.mtls.map]] entry "
            "(spiffe_id, uri, dns, subject or fingerprint, and identity/tenant/roles)"
        )
    return MutualTls(
        [_entry(entry, f"mtls.map[{index}]") for index, entry in enumerate(entries)],
        scheme,
        description,
    )


def _entry(entry: Any, where: str) -> _Entry:
    if not isinstance(entry, dict):
        raise ConfigError(f"{where} must be a table")
    refuse_unknown_keys(where, entry, _ENTRY_FIELDS)
    named = [name for name in _MATCHERS if name in entry]
    if len(named) != 1:
        raise ConfigError(f"{where} must name exactly one of {', '.join(_MATCHERS)}")
    field = named[0]
    pattern = entry[field]
    if not isinstance(pattern, str) or not pattern:
        raise ConfigError(f"{where}.{field} must be a non-empty string")
    if field == "fingerprint":
        if not _FINGERPRINT.fullmatch(pattern.replace(":", "")):
            raise ConfigError(f"{where}.fingerprint must be 64 hex digits (SHA-256 of the DER)")
        pattern = pattern.replace(":", "").lower()
    if field == "spiffe_id" and not pattern.lower().startswith("spiffe://"):
        raise ConfigError(f"{where}.spiffe_id must start with spiffe://")
    rdns: Rdns = ()
    if field == "subject":
        try:
            rdns = rdns_of(x509.Name.from_rfc4514_string(pattern))
        except ValueError as exc:
            raise ConfigError(
                f"{where}.subject is not an RFC 4514 name such as 'CN=*,O=Acme' ({exc})"
            ) from None
    identity = entry.get("identity")
    if identity is not None and (not isinstance(identity, str) or not identity):
        raise ConfigError(f"{where}.identity must be a non-empty string")
    tenant = entry.get("tenant", "")
    if not isinstance(tenant, str):
        raise ConfigError(f"{where}.tenant must be a string")
    roles = entry.get("roles", [])
    if not isinstance(roles, list) or not all(isinstance(r, str) and r for r in roles):
        raise ConfigError(f"{where}.roles must be a list of non-empty strings")
    return _Entry(field, pattern, identity, tenant, tuple(roles), rdns)
