"""A test certificate authority: server and client certificates issued with ``cryptography``.

Real X.509, so that real TLS handshakes (a served agent asking for client
certificates, a client presenting one) are what the mutual-TLS tests
exercise.  EC P-256 keys: fast to generate.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import ssl
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


@dataclass(frozen=True)
class Issued:
    """A certificate and its key, written as PEM files."""

    cert: Path
    key: Path
    certificate: x509.Certificate

    @property
    def fingerprint(self) -> str:
        return self.certificate.fingerprint(hashes.SHA256()).hex()


def _name(common_name: str, organization: str | None = None) -> x509.Name:
    attributes = [x509.NameAttribute(NameOID.COMMON_NAME, common_name)]
    if organization:
        attributes.append(x509.NameAttribute(NameOID.ORGANIZATION_NAME, organization))
    return x509.Name(attributes)


def _write_key(key: ec.EllipticCurvePrivateKey, path: Path) -> None:
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )


class TestCA:
    """A self-signed CA in ``directory``; ``issue_server`` and ``issue_client`` sign leaves."""

    __test__ = False  # not a pytest test class

    def __init__(self, directory: Path, name: str = "skillrack test CA") -> None:
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)
        self.key = ec.generate_private_key(ec.SECP256R1())
        self.name = _name(name)
        now = dt.datetime.now(dt.UTC)
        self.certificate = (
            x509.CertificateBuilder()
            .subject_name(self.name)
            .issuer_name(self.name)
            .public_key(self.key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5))
            .not_valid_after(now + dt.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    key_cert_sign=True,
                    crl_sign=True,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .sign(self.key, hashes.SHA256())
        )
        slug = name.replace(" ", "-")
        self.bundle = directory / f"{slug}.pem"
        self.bundle.write_bytes(self.certificate.public_bytes(serialization.Encoding.PEM))

    def _issue(
        self,
        file_stem: str,
        subject: x509.Name,
        names: list[x509.GeneralName],
        usage: x509.ObjectIdentifier,
    ) -> Issued:
        key = ec.generate_private_key(ec.SECP256R1())
        now = dt.datetime.now(dt.UTC)
        builder = (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(self.name)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5))
            .not_valid_after(now + dt.timedelta(hours=12))
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        )
        if names:
            builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
        certificate = builder.sign(self.key, hashes.SHA256())
        cert, key_path = self.directory / f"{file_stem}.pem", self.directory / f"{file_stem}.key"
        cert.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
        _write_key(key, key_path)
        return Issued(cert, key_path, certificate)

    def issue_server(self, host: str = "127.0.0.1") -> Issued:
        """A server certificate for ``host`` (an IP address SAN, or a DNS name SAN)."""
        try:
            name: x509.GeneralName = x509.IPAddress(ipaddress.ip_address(host))
        except ValueError:
            name = x509.DNSName(host)
        return self._issue(f"server-{host}", _name(host), [name], ExtendedKeyUsageOID.SERVER_AUTH)

    def issue_client(
        self,
        common_name: str,
        *,
        organization: str | None = None,
        uris: tuple[str, ...] = (),
        dns_names: tuple[str, ...] = (),
    ) -> Issued:
        """A client certificate with that subject and those SAN URIs (SPIFFE IDs) and names."""
        names: list[x509.GeneralName] = [x509.UniformResourceIdentifier(u) for u in uris]
        names += [x509.DNSName(d) for d in dns_names]
        return self._issue(
            f"client-{common_name}",
            _name(common_name, organization),
            names,
            ExtendedKeyUsageOID.CLIENT_AUTH,
        )

    def client_context(self, client: Issued | None = None) -> ssl.SSLContext:
        """An ``ssl`` context trusting this CA, presenting ``client`` when given."""
        context = ssl.create_default_context(cafile=str(self.bundle))
        if client is not None:
            context.load_cert_chain(str(client.cert), str(client.key))
        return context
