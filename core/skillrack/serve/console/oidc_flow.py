"""The console's OpenID Connect sign-in: the authorization code flow with PKCE (RFC 7636).

Enabled by a ``[plugins.oidc.console]`` table beside the ``oidc`` plugin's
settings, against the same ``issuer``::

    [plugins.oidc.console]
    client_id = "skillrack-console"        # registered at the issuer, redirect URI
                                            # <public URL>/-/console/signin/callback
    client_secret_file = "console-client.secret"   # optional: a confidential client
    scopes = ["openid"]                     # asked for; default ["openid"]

The browser is sent to the issuer's ``authorization_endpoint`` with a random
``state``, a ``nonce`` and the S256 challenge of a random ``code_verifier``;
those three travel in a short-lived signed cookie
(:mod:`skillrack.serve.console.signin`), never in server memory, so any worker
may take the callback.  The callback exchanges the code at the issuer's
``token_endpoint`` (with the verifier, and the client secret when one is
configured), and the **access token** it receives is checked by the
authentication plugins exactly as a bearer token on an API call is (the
``oidc`` plugin: signature, issuer, audience, expiry, claims, roles and
tenant mapping): the console signs in whom the API would accept, and nobody
else.  The ID token is not used.

Both endpoints come from the issuer's discovery document and must be on the
issuer's origin (``https``; ``http`` on loopback with the plugin's
``allow_loopback``): the console sends codes and the client secret nowhere
else.  The document is fetched at the first sign-in and kept for an hour.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
import time
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from skillrack.errors import SkillrackError
from skillrack.host.config import ConfigError
from skillrack.host.startup import is_loopback

#: Seconds the discovery document is kept.
DISCOVERY_SECONDS = 3600.0
#: Seconds a call to the issuer may take.
TIMEOUT_S = 10.0
#: Bytes of an issuer's answer read at most.
MAX_ANSWER_BYTES = 1_000_000


class SignInFailed(SkillrackError):
    """The issuer could not be reached or answered something unusable; one line for the page."""


@dataclass(frozen=True)
class OidcClient:
    """``[plugins.oidc.console]``: the console as a client of the ``oidc`` plugin's issuer."""

    issuer: str
    client_id: str
    client_secret: str
    scopes: tuple[str, ...]
    allow_loopback: bool

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any] | None, base_dir: Path) -> OidcClient | None:
        """The client ``[plugins.oidc]`` configures, or ``None`` without a ``console`` table."""
        if not settings or "console" not in settings:
            return None
        table = settings["console"]
        if not isinstance(table, Mapping):
            raise ConfigError("plugins.oidc.console must be a table (client_id = ...)")
        client_id = table.get("client_id")
        if not isinstance(client_id, str) or not client_id:
            raise ConfigError(
                "plugins.oidc.console.client_id is required: the client id the issuer "
                "registered for the console"
            )
        scopes = table.get("scopes", ["openid"])
        if not isinstance(scopes, list) or not all(isinstance(s, str) and s for s in scopes):
            raise ConfigError('plugins.oidc.console.scopes must be a list of scopes ("openid")')
        secret = ""
        secret_file = table.get("client_secret_file")
        if secret_file is not None:
            if not isinstance(secret_file, str) or not secret_file:
                raise ConfigError("plugins.oidc.console.client_secret_file must be a path")
            where = Path(secret_file) if Path(secret_file).is_absolute() else base_dir / secret_file
            try:
                secret = where.read_text(encoding="utf-8").strip()
            except OSError as exc:
                raise ConfigError(
                    f"plugins.oidc.console.client_secret_file: cannot read {where}: "
                    f"{exc.strerror or exc}"
                ) from None
        issuer = settings.get("issuer")
        if not isinstance(issuer, str):
            raise ConfigError("oidc.issuer is required")  # the plugin says so first
        return cls(
            issuer=issuer.rstrip("/"),
            client_id=client_id,
            client_secret=secret,
            scopes=tuple(scopes),
            allow_loopback=settings.get("allow_loopback") is True,
        )


@dataclass(frozen=True)
class Flow:
    """One sign-in in progress: what the callback must see again."""

    state: str
    nonce: str
    verifier: str

    @classmethod
    def new(cls) -> Flow:
        return cls(
            state=secrets.token_urlsafe(24),
            nonce=secrets.token_urlsafe(24),
            verifier=secrets.token_urlsafe(48),  # 64 characters: RFC 7636 asks 43 to 128
        )

    @property
    def challenge(self) -> str:
        digest = hashlib.sha256(self.verifier.encode("ascii")).digest()
        return base64.urlsafe_b64encode(digest).decode().rstrip("=")


class CodeFlow:
    """The issuer's endpoints, and the two steps of the flow."""

    def __init__(self, client: OidcClient) -> None:
        self.client = client
        self._endpoints: tuple[str, str] | None = None
        self._fetched = 0.0

    async def authorization_url(self, flow: Flow, redirect_uri: str) -> str:
        """Where to send the browser to sign in."""
        authorize, _ = await self._discover()
        query = urllib.parse.urlencode(
            {
                "response_type": "code",
                "client_id": self.client.client_id,
                "redirect_uri": redirect_uri,
                "scope": " ".join(self.client.scopes),
                "state": flow.state,
                "nonce": flow.nonce,
                "code_challenge": flow.challenge,
                "code_challenge_method": "S256",
            }
        )
        return f"{authorize}{'&' if '?' in authorize else '?'}{query}"

    async def access_token(self, code: str, flow: Flow, redirect_uri: str) -> str:
        """Exchange ``code`` for the access token (the issuer checks the verifier)."""
        _, token_endpoint = await self._discover()
        form = {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": redirect_uri,
            "client_id": self.client.client_id,
            "code_verifier": flow.verifier,
        }
        auth = (
            (self.client.client_id, self.client.client_secret)
            if self.client.client_secret
            else None
        )
        answer = await self._call("POST", token_endpoint, data=form, auth=auth)
        token = answer.get("access_token")
        if not isinstance(token, str) or not token:
            raise SignInFailed("the issuer's token endpoint gave no access token")
        return token

    async def _discover(self) -> tuple[str, str]:
        if self._endpoints is not None and time.monotonic() - self._fetched < DISCOVERY_SECONDS:
            return self._endpoints
        issuer = self.client.issuer
        document = await self._call("GET", issuer + "/.well-known/openid-configuration")
        endpoints = []
        for member in ("authorization_endpoint", "token_endpoint"):
            url = document.get(member)
            if not isinstance(url, str) or not self._on_issuer(url):
                raise SignInFailed(
                    f"the issuer's discovery document has no {member} on the issuer's origin"
                )
            endpoints.append(url)
        self._endpoints = (endpoints[0], endpoints[1])
        self._fetched = time.monotonic()
        return self._endpoints

    def _on_issuer(self, url: str) -> bool:
        parts, issuer = urllib.parse.urlsplit(url), urllib.parse.urlsplit(self.client.issuer)
        if (parts.scheme, parts.netloc) != (issuer.scheme, issuer.netloc):
            return False
        if parts.scheme == "https":
            return True
        return (
            parts.scheme == "http"
            and self.client.allow_loopback
            and is_loopback(parts.hostname or "")
        )

    async def _call(self, method: str, url: str, **options: Any) -> Mapping[str, Any]:
        if not self._on_issuer(url):
            raise SignInFailed(
                "the issuer must be https (http only on loopback with oidc.allow_loopback)"
            )
        try:
            async with httpx.AsyncClient(timeout=TIMEOUT_S, follow_redirects=False) as http:
                response = await http.request(method, url, **options)
        except httpx.HTTPError as exc:
            raise SignInFailed(f"the issuer did not answer ({type(exc).__name__})") from None
        if response.status_code != 200 or len(response.content) > MAX_ANSWER_BYTES:
            raise SignInFailed(f"the issuer answered HTTP {response.status_code}")
        try:
            answer = response.json()
        except ValueError:
            raise SignInFailed("the issuer's answer is not JSON") from None
        if not isinstance(answer, Mapping):
            raise SignInFailed("the issuer's answer is not a JSON object")
        return answer
