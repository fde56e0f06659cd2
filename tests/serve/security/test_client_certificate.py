"""What a TLS connection hands the app: the verified peer certificate, the ASGI ``tls`` extension.

A real handshake between two ``ssl.SSLObject`` over memory BIOs (no
socket): the server side is what skillrack's connection protocol reads.
"""

from __future__ import annotations

import ssl

import pytest
from helpers.certificates import Issued, TestCA

from skillrack.serve.security.client_certificate import (
    ClientCertificate,
    tls_extension,
    verified_peer,
)


def handshake(server: ssl.SSLContext, client: ssl.SSLContext) -> ssl.SSLObject:
    """The server's side of a finished handshake between ``server`` and ``client``."""
    to_server, to_client = ssl.MemoryBIO(), ssl.MemoryBIO()
    server_side = server.wrap_bio(to_server, to_client, server_side=True)
    client_side = client.wrap_bio(to_client, to_server, server_hostname="127.0.0.1")
    done: set[str] = set()
    for _ in range(20):
        for name, side in (("client", client_side), ("server", server_side)):
            if name in done:
                continue
            try:
                side.do_handshake()
                done.add(name)
            except ssl.SSLWantReadError:
                pass
        if done == {"client", "server"}:
            return server_side
    raise AssertionError("the handshake did not finish")


@pytest.fixture(scope="module")
def ca(tmp_path_factory: pytest.TempPathFactory) -> TestCA:
    return TestCA(tmp_path_factory.mktemp("ca"))


def server_context(ca: TestCA, verify: ssl.VerifyMode) -> ssl.SSLContext:
    issued = ca.issue_server()
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(issued.cert, issued.key)
    context.load_verify_locations(ca.bundle)
    context.verify_mode = verify
    return context


def client_of(ca: TestCA, issued: Issued | None) -> ssl.SSLContext:
    return ca.client_context(issued)


def test_verified_certificate_and_extension(ca: TestCA) -> None:
    issued = ca.issue_client("observer", uris=("spiffe://acme.example/observer",))
    server = handshake(server_context(ca, ssl.CERT_OPTIONAL), client_of(ca, issued))
    peer = verified_peer(server)
    assert peer is not None and peer.spiffe_id == "spiffe://acme.example/observer"
    assert peer.fingerprint == issued.fingerprint
    extension = tls_extension(server, peer)
    assert extension["client_cert_name"] == "CN=observer"
    assert extension["client_cert_chain"][0].startswith("-----BEGIN CERTIFICATE-----")
    assert extension["tls_version"] in (0x0303, 0x0304)
    assert extension["client_cert_error"] is None


def test_no_certificate_sent(ca: TestCA) -> None:
    server = handshake(server_context(ca, ssl.CERT_OPTIONAL), client_of(ca, None))
    assert verified_peer(server) is None
    assert tls_extension(server, None)["client_cert_chain"] == []


def test_a_server_that_does_not_verify_exposes_nothing(ca: TestCA) -> None:
    issued = ca.issue_client("observer")
    server = handshake(server_context(ca, ssl.CERT_NONE), client_of(ca, issued))
    assert verified_peer(server) is None


def test_an_unparsable_certificate_is_treated_as_absent(
    ca: TestCA, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    issued = ca.issue_client("odd")
    server = handshake(server_context(ca, ssl.CERT_OPTIONAL), client_of(ca, issued))

    def refuse(der: bytes) -> None:
        raise ValueError("an encoding cryptography refuses")

    monkeypatch.setattr(ClientCertificate, "from_der", refuse)
    assert verified_peer(server) is None
    assert "could not be parsed" in caplog.text
