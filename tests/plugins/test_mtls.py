"""The first-party mtls plugin and ClientCertificate: mapping rules, refusals, settings."""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.serialization import Encoding
from helpers.certificates import Issued, TestCA

from skillrack import ClientCertificate
from skillrack.host.config import ConfigError
from skillrack.serve.security.authn import AuthenticationFailed, RequestCredentials
from skillrack_plugins import mtls

SPIFFE = "spiffe://acme.example/ns/noc/sa/observer"


@pytest.fixture(scope="module")
def ca(tmp_path_factory: pytest.TempPathFactory) -> TestCA:
    return TestCA(tmp_path_factory.mktemp("ca"))


def parsed(issued: Issued) -> ClientCertificate:
    return ClientCertificate.from_der(issued.certificate.public_bytes(Encoding.DER))


def creds(cert: ClientCertificate | None) -> RequestCredentials:
    return RequestCredentials(headers={}, client_host="192.0.2.9", client_certificate=cert)


def plugin(*entries: dict[str, Any]) -> mtls.MutualTls:
    return mtls.create({"map": list(entries)}, Path("."))


def test_certificate_fields(ca: TestCA) -> None:
    issued = ca.issue_client(
        "observer", organization="Acme", uris=(SPIFFE,), dns_names=("o.acme.example",)
    )
    cert = parsed(issued)
    assert cert.subject == "O=Acme,CN=observer"
    assert cert.common_name == "observer"
    assert cert.issuer == "CN=skillrack test CA"
    assert cert.uris == (SPIFFE,) and cert.spiffe_id == SPIFFE
    assert cert.dns_names == ("o.acme.example",)
    assert cert.fingerprint == issued.fingerprint
    assert "BEGIN CERTIFICATE" in cert.pem()


def test_spiffe_id_needs_exactly_one_uri(ca: TestCA) -> None:
    two = parsed(ca.issue_client("two", uris=(SPIFFE, "https://acme.example/x")))
    assert two.spiffe_id is None and len(two.uris) == 2
    assert parsed(ca.issue_client("web", uris=("https://acme.example/x",))).spiffe_id is None


def test_first_matching_entry_maps_identity_tenant_roles(ca: TestCA) -> None:
    cert = parsed(ca.issue_client("observer", uris=(SPIFFE,), dns_names=("o.acme.example",)))
    rules = plugin(
        {"spiffe_id": "spiffe://acme.example/ns/noc/*", "tenant": "acme", "roles": ["operator"]},
        {"dns": "*.acme.example", "identity": "never", "tenant": "x"},
    )
    caller = rules.authenticate(creds(cert))
    assert caller is not None
    assert (caller.identity, caller.tenant, caller.authenticated) == (SPIFFE, "acme", True)
    assert caller.attributes == {
        "roles": ["operator"],
        "auth": "mtls",
        "fingerprint": cert.fingerprint,
    }


@pytest.mark.parametrize(
    ("entry", "identity"),
    [
        ({"dns": "*.acme.example"}, "o.acme.example"),
        ({"uri": "spiffe://acme.example/*"}, SPIFFE),
        ({"subject": "CN=observer", "identity": "obs"}, "obs"),
    ],
)
def test_each_matcher(ca: TestCA, entry: dict[str, Any], identity: str) -> None:
    cert = parsed(ca.issue_client("observer", uris=(SPIFFE,), dns_names=("o.acme.example",)))
    caller = plugin(entry).authenticate(creds(cert))
    assert caller is not None and caller.identity == identity


@pytest.mark.parametrize(
    ("common_name", "organization", "matches"),
    [
        ("inventory", "Acme", True),
        ("evil,O=Acme", None, False),  # text CN=evil\\,O=Acme: a string match would take it
        ("inventory", "Acme,CN=x", False),
        ("inventory", "Evil", False),
        ("inventory", None, False),  # one RDN short
    ],
)
def test_subject_is_matched_on_parsed_rdns(
    ca: TestCA, common_name: str, organization: str | None, matches: bool
) -> None:
    """Issue 28: a subject pattern matches parsed RDNs, never the escaped text."""
    cert = parsed(ca.issue_client(common_name, organization=organization))
    rules = plugin({"subject": "O=Acme,CN=*", "identity": "acme-agent"})
    if matches:
        caller = rules.authenticate(creds(cert))
        assert caller is not None and caller.identity == "acme-agent"
    else:
        with pytest.raises(AuthenticationFailed):
            rules.authenticate(creds(cert))


def test_subject_pattern_must_parse() -> None:
    with pytest.raises(ConfigError, match="subject is not an RFC 4514 name"):
        plugin({"subject": "no equals sign"})


def test_fingerprint_pins_one_certificate(ca: TestCA) -> None:
    issued = ca.issue_client("pinned")
    other = parsed(ca.issue_client("pinned"))  # same subject, another key
    spelled = ":".join(issued.fingerprint[i : i + 2] for i in range(0, 64, 2)).upper()
    rules = plugin({"fingerprint": spelled, "identity": "pinned"})
    assert rules.authenticate(creds(parsed(issued))) is not None
    with pytest.raises(AuthenticationFailed):
        rules.authenticate(creds(other))


def test_without_certificate_not_this_plugins_business() -> None:
    assert plugin({"dns": "*"}).authenticate(creds(None)) is None


def test_unmapped_certificate_refused(ca: TestCA, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger=mtls.__name__)
    cert = parsed(ca.issue_client("stranger"))
    with pytest.raises(AuthenticationFailed) as refused:
        plugin({"spiffe_id": SPIFFE}).authenticate(creds(cert))
    assert refused.value.message == "client certificate not accepted"
    assert "CN=stranger" in caplog.text  # the operator learns which certificate, the caller not


def test_card_scheme() -> None:
    rules = mtls.create({"scheme": "clientCert", "map": [{"dns": "*"}]}, Path("."))
    assert list(rules.security_schemes()) == ["clientCert"]
    assert "mtlsSecurityScheme" in rules.security_schemes()["clientCert"]


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({}, "mtls.map must list"),
        ({"map": []}, "mtls.map must list"),
        ({"map": [{"dns": "*"}], "other": 1}, '[plugins.mtls]: unknown key "other"'),
        ({"map": [{"identity": "x"}]}, "exactly one of"),
        ({"map": [{"dns": "a", "uri": "b"}]}, "exactly one of"),
        ({"map": [{"dns": "a", "colour": "b"}]}, 'mtls.map[0]: unknown key "colour"'),
        ({"map": [{"spiffe_id": "https://x"}]}, "must start with spiffe://"),
        ({"map": [{"fingerprint": "abc"}]}, "64 hex digits"),
        ({"map": [{"dns": "a", "roles": "admin"}]}, "roles must be a list"),
        ({"map": [{"dns": "a", "tenant": 3}]}, "tenant must be a string"),
        ({"map": [{"dns": ""}]}, "must be a non-empty string"),
        ({"map": [{"dns": "a"}], "scheme": "a b"}, "mtls.scheme"),
    ],
)
def test_settings_refused(settings: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(message).replace("'", ".")):
        mtls.create(settings, Path("."))
