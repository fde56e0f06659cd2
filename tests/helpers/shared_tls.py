"""One default TLS context for every httpx client the suite's own process makes.

``httpx.get(...)``, ``httpx.post(...)`` and each new ``httpx.Client()`` build a
TLS context, loading the whole CA bundle, even for an ``http://`` URL: about
25 ms of CPU each.  The suite's helpers poll agents with such calls
(``wait_for_state`` every 50 ms), and a profile of the suite found a fifth of
the xdist workers' CPU there.  :func:`install` makes httpx's transports reuse
one context per CA setting for the default verification; a test that passes
``verify=`` (its own CA, a client certificate) gets exactly what it asked for.
Only the test process changes: served agents and CLI runs are untouched.
"""

from __future__ import annotations

import functools
import os
import ssl
from typing import Any

import httpx
from httpx._transports import default as transports  # where the transports look it up


@functools.cache
def _context(cafile: str | None, capath: str | None, trust_env: bool) -> ssl.SSLContext:
    return httpx.create_ssl_context(verify=True, trust_env=trust_env)


def _shared(verify: Any = True, cert: Any = None, trust_env: bool = True) -> ssl.SSLContext:
    if verify is True and cert is None:
        environ = os.environ if trust_env else {}
        return _context(environ.get("SSL_CERT_FILE"), environ.get("SSL_CERT_DIR"), trust_env)
    return httpx.create_ssl_context(verify=verify, cert=cert, trust_env=trust_env)


def install() -> None:
    """From now on, httpx transports built with the default verification share a context."""
    transports.create_ssl_context = _shared  # type: ignore[assignment]
