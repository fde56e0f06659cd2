"""The TLS files ``skillrack serve`` is given, and what each listener makes of them.

uvicorn reads ``--ssl-certfile`` / ``--ssl-keyfile`` itself for HTTPS; the
gRPC binding (:mod:`skillrack.serve.bindings.grpc_server`) serves the same
certificate and key, built here into gRPC's server credentials.  Every TLS
setting a listener needs (client certificates, say) is added to
:class:`TlsFiles` and read in :func:`grpc_server_credentials`, so both
bindings change together.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import grpc


@dataclass(frozen=True)
class TlsFiles:
    """The PEM files HTTPS is served with: the certificate chain and its private key.

    ``keyfile`` is None when the key is in ``certfile`` (as uvicorn allows).
    ``client_ca`` (``[server] ssl_client_ca``) is the CA bundle client
    certificates are verified against, and ``client_auth`` whether one is
    ``"required"`` or ``"optional"``.
    """

    certfile: str
    keyfile: str | None = None
    client_ca: str | None = None
    client_auth: str = "required"


def grpc_server_credentials(tls: TlsFiles) -> grpc.ServerCredentials:
    """gRPC's server credentials for the certificate and key HTTPS uses (read once, here).

    With ``client_ca`` and ``client_auth = "required"`` gRPC requires and
    verifies a client certificate in the handshake, as uvicorn does; the
    verified one reaches authentication (``grpc_binding``, from the call's
    ``auth_context``).  gRPC's Python server cannot ask for a certificate
    without requiring it, so under ``"optional"`` the gRPC port asks for
    none: its callers authenticate with the other schemes.
    """
    import grpc

    chain = Path(tls.certfile).read_bytes()
    key = Path(tls.keyfile).read_bytes() if tls.keyfile else chain
    if tls.client_ca and tls.client_auth == "required":
        return grpc.ssl_server_credentials(
            [(key, chain)],
            root_certificates=Path(tls.client_ca).read_bytes(),
            require_client_auth=True,
        )
    return grpc.ssl_server_credentials([(key, chain)])


__all__ = ["TlsFiles", "grpc_server_credentials"]
