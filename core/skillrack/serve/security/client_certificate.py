"""The client certificate a TLS connection presented and the server verified, as plain data.

``skillrack serve --ssl-client-ca`` ([server] ``ssl_client_ca``) asks every
TLS client for a certificate and has OpenSSL verify it against that bundle
during the handshake: a certificate that does not chain to it (another CA,
expired, not for client use) ends the handshake, so no request from it ever
reaches the app.  What reaches the app is a certificate that verified.

uvicorn does not put the peer certificate in the ASGI scope (it implements
no ``tls`` extension), so skillrack's own connection protocol
(:class:`~skillrack.serve.bindings.connections.HeaderDeadlineProtocol`) reads it from
the connection's ``ssl_object`` once per connection, when the handshake is
over, parses it here once, and puts it in every request's scope: the
standard ASGI ``tls`` extension (``scope["extensions"]["tls"]``, its
``client_cert_chain`` holding the peer's PEM) for any ASGI code, and the
parsed :class:`ClientCertificate` under :data:`CLIENT_CERTIFICATE_KEY`,
which the authentication gate hands to plugins in
:attr:`~skillrack.serve.security.authn.RequestCredentials.client_certificate`.
A certificate is exposed only when the server's TLS context verifies client
certificates: with ``CERT_NONE`` OpenSSL does not ask for one, and one it
did not verify must never look like an identity.

Parsed with ``cryptography`` (already a dependency through PyJWT's crypto
extra, and the library skillrack signs cards with), once per connection: the
fields plugins map to identities (subject, SAN URIs, DNS names, the SPIFFE
ID) are read here, so that a plugin needs nothing but ``skillrack``.
"""

from __future__ import annotations

import hashlib
import logging
import ssl
from dataclasses import dataclass
from typing import Any

logger = logging.getLogger(__name__)

#: The URI scheme of a SPIFFE ID (SPIFFE X.509-SVID: exactly one URI SAN, ``spiffe://``).
SPIFFE_SCHEME = "spiffe://"
#: ``ssl_object.version()`` -> the ASGI ``tls`` extension's ``tls_version`` number.
_TLS_VERSIONS = {"TLSv1": 0x0301, "TLSv1.1": 0x0302, "TLSv1.2": 0x0303, "TLSv1.3": 0x0304}


@dataclass(frozen=True)
class ClientCertificate:
    """A client certificate that the TLS handshake verified against the configured CA bundle.

    ``subject`` and ``issuer`` are RFC 4514 strings (``CN=agent-a,O=Acme``);
    ``common_name`` is the subject's first CN (``""`` without one);
    ``uris``, ``dns_names`` and ``emails`` are the subjectAltName entries of
    those kinds, in certificate order; ``spiffe_id`` is the SPIFFE ID when
    the certificate carries exactly one URI SAN and it is a ``spiffe://``
    URI (the X.509-SVID rule), else ``None``; ``fingerprint`` is the
    lowercase hex SHA-256 of ``der``, the DER bytes.
    """

    subject: str
    issuer: str
    common_name: str
    serial_number: int
    fingerprint: str
    uris: tuple[str, ...] = ()
    dns_names: tuple[str, ...] = ()
    emails: tuple[str, ...] = ()
    spiffe_id: str | None = None
    der: bytes = b""

    @classmethod
    def from_der(cls, der: bytes) -> ClientCertificate:
        """Parse a DER certificate (raises ``ValueError`` when it is not one)."""
        from cryptography import x509  # at the first certificate: slow to import, at start
        from cryptography.x509.oid import NameOID

        cert = x509.load_der_x509_certificate(der)
        names = cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
        try:
            san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        except x509.ExtensionNotFound:
            san = x509.SubjectAlternativeName([])
        uris = tuple(san.get_values_for_type(x509.UniformResourceIdentifier))
        spiffe = [u for u in uris if u.lower().startswith(SPIFFE_SCHEME)]
        return cls(
            subject=cert.subject.rfc4514_string(),
            issuer=cert.issuer.rfc4514_string(),
            common_name=str(names[0].value) if names else "",
            serial_number=cert.serial_number,
            fingerprint=hashlib.sha256(der).hexdigest(),
            uris=uris,
            dns_names=tuple(san.get_values_for_type(x509.DNSName)),
            emails=tuple(san.get_values_for_type(x509.RFC822Name)),
            spiffe_id=spiffe[0] if len(uris) == 1 and spiffe else None,
            der=der,
        )

    @classmethod
    def from_pem(cls, pem: bytes | str) -> ClientCertificate:
        """Parse a PEM certificate (gRPC's ``x509_pem_cert``); ``ValueError`` when it is not one."""
        from cryptography import x509
        from cryptography.hazmat.primitives.serialization import Encoding

        data = pem.encode("ascii") if isinstance(pem, str) else pem
        return cls.from_der(x509.load_pem_x509_certificate(data).public_bytes(Encoding.DER))

    def pem(self) -> str:
        """The certificate in PEM form (what the ASGI ``tls`` extension carries)."""
        from cryptography import x509
        from cryptography.hazmat.primitives.serialization import Encoding

        return x509.load_der_x509_certificate(self.der).public_bytes(Encoding.PEM).decode("ascii")


def verified_peer(ssl_object: ssl.SSLObject | ssl.SSLSocket | None) -> ClientCertificate | None:
    """The peer certificate of a finished handshake, if the server verified one; else None.

    A certificate OpenSSL verified but ``cryptography`` cannot parse (it is
    stricter about encodings) is logged and treated as absent: no identity
    is derived from it, so a plugin never maps it.
    """
    if ssl_object is None or ssl_object.context.verify_mode == ssl.CERT_NONE:
        return None
    der = ssl_object.getpeercert(binary_form=True)
    if not der:
        return None
    try:
        return ClientCertificate.from_der(der)
    except ValueError as exc:
        logger.warning(
            "a verified client certificate (SHA-256 %s) could not be parsed: %s; "
            "the connection is treated as carrying none",
            hashlib.sha256(der).hexdigest()[:16],
            exc,
        )
        return None


def tls_extension(
    ssl_object: ssl.SSLObject | ssl.SSLSocket, peer: ClientCertificate | None
) -> dict[str, Any]:
    """The ASGI ``tls`` extension for one connection (asgiref's TLS extension, version 0.2)."""
    version = ssl_object.version()
    return {
        "server_cert": None,
        "client_cert_chain": [peer.pem()] if peer is not None else [],
        "client_cert_name": peer.subject if peer is not None else None,
        "client_cert_error": None,  # a certificate that failed verification never gets here
        "tls_version": _TLS_VERSIONS.get(version or ""),
        "cipher_suite": None,  # Python's ssl names the suite; the extension wants its number
    }
