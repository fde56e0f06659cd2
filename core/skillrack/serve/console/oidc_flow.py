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
configured).  The token endpoint's answer must carry an **ID token** that is
for this sign-in (OpenID Connect Core 3.1.3.7): signed with a key of the
issuer's JWK Set (the discovery document's ``jwks_uri``, or ``[plugins.oidc]
jwks_uri``) by one of ``[plugins.oidc] algorithms``, ``iss`` the issuer,
``aud`` the console's ``client_id`` (and ``azp`` it, when present), not
expired (``leeway_seconds``), and ``nonce`` the one this browser's sign-in
sent: a code or tokens injected from another sign-in do not sign anybody in.
Then the **access token** of the same answer is checked by the
authentication plugins exactly as a bearer token on an API call is (the
``oidc`` plugin: signature, issuer, audience, expiry, claims, roles and
tenant mapping): the console signs in whom the API would accept, and nobody
else.  ``scopes`` must therefore include ``openid``.

Both endpoints come from the issuer's discovery document and must be on the
issuer's origin (``https``; ``http`` on loopback with the plugin's
``allow_loopback``): the console sends codes and the client secret nowhere
else.  The document and the JWK Set are fetched at the first sign-in and kept
for an hour (the JWK Set is fetched again for a ``kid`` it does not have).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import time
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx

from skillrack.errors import SkillrackError
from skillrack.host.config import ConfigError
from skillrack.host.startup import is_loopback

if TYPE_CHECKING:  # PyJWT (and cryptography) at the first sign-in: slow to import at start
    import jwt

#: Seconds the discovery document is kept.
DISCOVERY_SECONDS = 3600.0
#: Seconds a call to the issuer may take.
TIMEOUT_S = 10.0
#: Bytes of an issuer's answer read at most.
MAX_ANSWER_BYTES = 1_000_000
#: ``[plugins.oidc] algorithms`` and ``leeway_seconds`` defaults (the plugin's own).
DEFAULT_ALGORITHMS = ("ES256", "RS256")
DEFAULT_LEEWAY_S = 30.0


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
    #: ``iss`` exactly as ``[plugins.oidc] issuer`` gives it (``issuer`` is without a final /).
    issuer_id: str = ""
    #: ``[plugins.oidc] jwks_uri``; empty: the discovery document's.
    jwks_uri: str = ""
    algorithms: tuple[str, ...] = DEFAULT_ALGORITHMS
    leeway: float = DEFAULT_LEEWAY_S

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
        if "openid" not in scopes:
            raise ConfigError(
                'plugins.oidc.console.scopes must include "openid": the sign-in checks the '
                "ID token the issuer returns for it"
            )
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
        # The plugin checked these settings' types at its own start (oidc.algorithms, ...).
        algorithms = settings.get("algorithms", list(DEFAULT_ALGORITHMS))
        leeway = settings.get("leeway_seconds", DEFAULT_LEEWAY_S)
        jwks_uri = settings.get("jwks_uri", "")
        return cls(
            issuer=issuer.rstrip("/"),
            client_id=client_id,
            client_secret=secret,
            scopes=tuple(scopes),
            allow_loopback=settings.get("allow_loopback") is True,
            issuer_id=issuer,
            jwks_uri=jwks_uri if isinstance(jwks_uri, str) else "",
            algorithms=tuple(str(a) for a in algorithms)
            if isinstance(algorithms, list)
            else DEFAULT_ALGORITHMS,
            leeway=float(leeway) if isinstance(leeway, int | float) else DEFAULT_LEEWAY_S,
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
        self._endpoints: tuple[str, str, str] | None = None
        self._fetched = 0.0
        self._keys: jwt.PyJWKSet | None = None
        self._keys_fetched = 0.0

    async def authorization_url(self, flow: Flow, redirect_uri: str) -> str:
        """Where to send the browser to sign in."""
        authorize, _, _ = await self._discover()
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
        """Exchange ``code`` for the access token, once the answer's ID token is checked.

        The issuer checks the verifier; the ID token is checked here
        (:meth:`check_id_token`), its ``nonce`` against ``flow``'s.
        """
        _, token_endpoint, _ = await self._discover()
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
        id_token = answer.get("id_token")
        if not isinstance(id_token, str) or not id_token:
            raise SignInFailed(
                "the issuer's token endpoint gave no ID token (is the openid scope granted?)"
            )
        await self.check_id_token(id_token, flow)
        return token

    async def check_id_token(self, id_token: str, flow: Flow) -> Mapping[str, Any]:
        """``id_token``'s claims once it is checked for this sign-in; else SignInFailed."""
        import jwt

        client = self.client
        try:
            header = jwt.get_unverified_header(id_token)
        except jwt.PyJWTError:
            raise SignInFailed("the issuer's ID token is not a signed JWT") from None
        algorithm, kid = header.get("alg"), header.get("kid")
        if algorithm not in client.algorithms:
            raise SignInFailed(
                f"the issuer's ID token is signed with {str(algorithm)[:20]!r}, not one of "
                f"[plugins.oidc] algorithms ({', '.join(client.algorithms)})"
            )
        key = await self._key(kid if isinstance(kid, str) else None)
        try:
            claims = jwt.decode(
                id_token,
                key,
                algorithms=[str(algorithm)],
                audience=client.client_id,
                issuer=client.issuer_id or client.issuer,
                leeway=client.leeway,
                options={"require": ["iss", "aud", "exp", "iat", "sub"]},
            )
        except jwt.ExpiredSignatureError:
            raise SignInFailed("the issuer's ID token has expired") from None
        except jwt.InvalidAudienceError:
            raise SignInFailed(
                f"the issuer's ID token is not for this console (aud is not {client.client_id})"
            ) from None
        except jwt.PyJWTError as exc:
            raise SignInFailed(f"the issuer's ID token was refused ({exc})") from None
        azp = claims.get("azp")
        if azp is not None and azp != client.client_id:
            raise SignInFailed("the issuer's ID token was issued to another client (azp)")
        nonce = claims.get("nonce")
        if not isinstance(nonce, str) or not hmac.compare_digest(
            nonce.encode("utf-8", "replace"), flow.nonce.encode()
        ):
            raise SignInFailed(
                "the issuer's ID token is not for this sign-in (its nonce differs); sign in again"
            )
        return claims

    async def _key(self, kid: str | None) -> Any:
        """The verification key named ``kid`` in the issuer's JWK Set (fetched again once)."""
        for refresh in (False, True):
            keys = await self._key_set(refresh)
            found = [
                k
                for k in keys.keys
                if (kid is None or k.key_id == kid) and k.public_key_use in (None, "sig")
            ]
            if len(found) == 1:
                return found[0].key
            if kid is None:
                break  # no kid and several keys (or none): refetching changes nothing
        raise SignInFailed(
            f"the issuer's JWK Set has no key {kid!r} for the ID token"
            if kid is not None
            else "the issuer's ID token names no key (kid) and its JWK Set has several"
        )

    async def _key_set(self, refresh: bool) -> jwt.PyJWKSet:
        import jwt

        fresh = time.monotonic() - self._keys_fetched < DISCOVERY_SECONDS
        if self._keys is not None and fresh and not refresh:
            return self._keys
        _, _, jwks_uri = await self._discover()
        document = await self._call("GET", jwks_uri, trusted=bool(self.client.jwks_uri))
        try:
            self._keys = jwt.PyJWKSet.from_dict(dict(document))
        except jwt.PyJWTError:
            raise SignInFailed("the issuer's JWK Set has no usable key") from None
        self._keys_fetched = time.monotonic()
        return self._keys

    async def _discover(self) -> tuple[str, str, str]:
        """The authorization, token and JWK Set URLs."""
        if self._endpoints is not None and time.monotonic() - self._fetched < DISCOVERY_SECONDS:
            return self._endpoints
        issuer = self.client.issuer
        document = await self._call("GET", issuer + "/.well-known/openid-configuration")
        endpoints = []
        members = ["authorization_endpoint", "token_endpoint"]
        if not self.client.jwks_uri:
            members.append("jwks_uri")
        for member in members:
            url = document.get(member)
            if not isinstance(url, str) or not self._on_issuer(url):
                raise SignInFailed(
                    f"the issuer's discovery document has no {member} on the issuer's origin"
                )
            endpoints.append(url)
        self._endpoints = (endpoints[0], endpoints[1], self.client.jwks_uri or endpoints[2])
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

    async def _call(
        self, method: str, url: str, *, trusted: bool = False, **options: Any
    ) -> Mapping[str, Any]:
        """A JSON object from the issuer; ``trusted``: a URL the operator configured."""
        if not trusted and not self._on_issuer(url):
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
