"""The client's mutual TLS pieces: loading a certificate and a CA bundle, the hints."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from helpers.certificates import TestCA

from skillrack.cli.client_options import client_tls
from skillrack.client.tls import ClientTls, refused_hint


def test_loading_errors_name_the_file(tmp_path: Path) -> None:
    ca = TestCA(tmp_path)
    client = ca.issue_client("c")
    assert ClientTls(str(client.cert), str(client.key), str(ca.bundle)).context() is not None
    with pytest.raises(ValueError, match="cannot load the client certificate"):
        ClientTls(str(client.cert), str(tmp_path / "missing.key")).context()
    with pytest.raises(ValueError, match="cannot load the CA bundle"):
        ClientTls(cafile=str(tmp_path / "missing.pem")).context()
    with pytest.raises(ValueError, match="needs its certificate"):
        ClientTls(keyfile=str(client.key)).context()


def test_cli_options_are_loaded_once(tmp_path: Path) -> None:
    import argparse

    ca = TestCA(tmp_path)
    client = ca.issue_client("c")
    given = argparse.Namespace(client_cert=str(client.cert), client_key=None, ca_bundle=None)
    with pytest.raises(argparse.ArgumentTypeError, match="cannot load the client certificate"):
        client_tls(given)  # the key is not in the certificate's file
    given.client_key = str(client.key)
    assert client_tls(given) == ClientTls(str(client.cert), str(client.key), None)
    assert client_tls(argparse.Namespace()) is None


def test_hints() -> None:
    closed = httpx.RemoteProtocolError("Server disconnected without sending a response.")
    assert "give one with --client-cert" in refused_hint(closed, "https://a.example", False)
    assert "refused this client certificate" in refused_hint(closed, "https://a.example", True)
    assert refused_hint(closed, "http://a.example", False) == ""
    reset = httpx.ReadError("[Errno 104] Connection reset by peer")
    assert "give one with --client-cert" in refused_hint(reset, "https://a.example", False)
    assert refused_hint(httpx.ConnectError("connection refused"), "https://a", False) == ""
    unverified = httpx.ConnectError("[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed")
    assert "give that CA with --ca-bundle" in refused_hint(unverified, "https://a", False)
