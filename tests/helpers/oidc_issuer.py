"""A small OpenID Connect issuer served for real on 127.0.0.1, for the OIDC and OAuth tests.

It publishes a discovery document and a JWK Set (with ``Cache-Control`` and
an ``ETag``), issues JWT access tokens by the client-credentials grant and by
the authorization code grant with PKCE (a sign-in form at its authorization
endpoint, for the console's browser tests; S256 only, codes used once),
returns an ID token with the authorization request's ``nonce`` beside the code
grant's access token (or a faulty one: :attr:`Issuer.id_token_fault`),
answers RFC 7662 introspection for opaque tokens it handed out, rotates its
signing key on request, and counts every request per path, so that tests can
assert how often a relying party asked.  :meth:`Issuer.outage` stops the
server and starts it again on the same port: the issuer is unreachable (the
connection is refused) in between.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import html
import json
import secrets
import time
import urllib.parse
from collections import Counter
from collections.abc import Iterator
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric import ec
from jwt.algorithms import ECAlgorithm
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from helpers.hostile_agents import serving
from skillrack.testing.serve import free_port

REALM = "/realms/test"
DISCOVERY = REALM + "/.well-known/openid-configuration"
CERTS = REALM + "/protocol/openid-connect/certs"
TOKEN = REALM + "/protocol/openid-connect/token"
INTROSPECT = REALM + "/protocol/openid-connect/token/introspect"
AUTHORIZE = REALM + "/protocol/openid-connect/auth"
AUDIENCE = "skillrack-agent"


class Issuer:
    """The issuer's state: keys, registered clients, opaque tokens, request counts."""

    def __init__(self, *, max_age: int = 300) -> None:
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.issuer = self.base + REALM
        self.max_age = max_age
        self.keys: dict[str, ec.EllipticCurvePrivateKey] = {}
        self.current = ""
        self.rotate()
        #: client_id -> (secret, scopes it may be granted)
        self.clients: dict[str, tuple[str, tuple[str, ...]]] = {}
        #: opaque token -> its introspection answer
        self.opaque: dict[str, dict[str, Any]] = {}
        self.hits: Counter[str] = Counter()
        #: Members replacing the discovery document's own (a misconfigured or hostile issuer).
        self.discovery_overrides: dict[str, Any] = {}
        #: username -> the claims its access tokens carry besides the defaults
        self.users: dict[str, dict[str, Any]] = {}
        #: public clients of the code flow: client_id -> its one redirect URI
        self.redirects: dict[str, str] = {}
        #: code -> (client_id, redirect_uri, code_challenge, username, nonce)
        self.codes: dict[str, tuple[str, str, str, str, str]] = {}
        #: How the code grant's ID token is wrong (a hostile or broken issuer): ``""`` (a
        #: good one), ``missing``, ``wrong_nonce``, ``no_nonce``, ``other_audience``,
        #: ``other_azp``, ``other_issuer``, ``expired``, ``unknown_key``, ``unsigned``,
        #: ``encryption_key`` (signed with a key the JWK Set publishes for ``enc`` only).
        self.id_token_fault = ""
        #: Keys the JWK Set publishes with ``"use": "enc"``: kid -> key.
        self.encryption_keys: dict[str, ec.EllipticCurvePrivateKey] = {}
        #: What each authorization request asked (its query), in order.
        self.authorizations: list[dict[str, str]] = []
        self._server: contextlib.ExitStack | None = None

    # -- keys and tokens -------------------------------------------------------------------

    def rotate(self, *, keep_old: bool = True) -> str:
        """A new current signing key; the old ones stay published unless ``keep_old`` is false."""
        kid = f"key-{len(self.keys) + 1}-{secrets.token_hex(3)}"
        if not keep_old:
            self.keys.clear()
        self.keys[kid] = ec.generate_private_key(ec.SECP256R1())
        self.current = kid
        return kid

    def claims(self, **overrides: Any) -> dict[str, Any]:
        now = int(time.time())
        base: dict[str, Any] = {
            "iss": self.issuer,
            "aud": AUDIENCE,
            "sub": "svc-assurance",
            "azp": "assurance-client",
            "tenant": "acme-corp",
            "realm_access": {"roles": ["network-operator", "offline_access"]},
            "scope": "openid network:read",
            "iat": now,
            "exp": now + 300,
        }
        base.update(overrides)
        return {k: v for k, v in base.items() if v is not None}

    def token(
        self, kid: str | None = None, headers: dict[str, Any] | None = None, **claims: Any
    ) -> str:
        kid = kid or self.current
        return jwt.encode(
            self.claims(**claims),
            self.keys[kid],
            algorithm="ES256",
            headers={"kid": kid, "typ": "at+jwt", **(headers or {})},
        )

    def opaque_token(self, active: bool = True, **claims: Any) -> str:
        token = secrets.token_urlsafe(24)
        self.opaque[token] = {"active": active, **self.claims(**claims)} if active else {}
        return token

    def client(self, client_id: str, secret: str, scopes: tuple[str, ...]) -> None:
        self.clients[client_id] = (secret, scopes)

    def public_client(self, client_id: str, redirect_uri: str) -> None:
        """A client of the code flow with PKCE and no secret (the console)."""
        self.redirects[client_id] = redirect_uri

    def user(self, username: str, **claims: Any) -> None:
        """Someone who can sign in at the authorization endpoint (any password-less name)."""
        self.users[username] = {"sub": username, **claims}

    # -- the HTTP side ---------------------------------------------------------------------

    def app(self) -> Starlette:
        cache = {"Cache-Control": f"public, max-age={self.max_age}"}

        async def discovery(request: Request) -> Response:
            self.hits[DISCOVERY] += 1
            return JSONResponse(
                {
                    "issuer": self.issuer,
                    "jwks_uri": self.base + CERTS,
                    "token_endpoint": self.base + TOKEN,
                    "introspection_endpoint": self.base + INTROSPECT,
                    "authorization_endpoint": self.base + AUTHORIZE,
                    "grant_types_supported": ["client_credentials", "authorization_code"],
                    "code_challenge_methods_supported": ["S256"],
                    **self.discovery_overrides,
                },
                headers=cache,
            )

        async def certs(request: Request) -> Response:
            self.hits[CERTS] += 1
            body = json.dumps(
                {
                    "keys": [
                        {**json.loads(ECAlgorithm.to_jwk(k.public_key())), "kid": kid, "use": use}
                        for use, keys in (("sig", self.keys), ("enc", self.encryption_keys))
                        for kid, k in keys.items()
                    ]
                },
                sort_keys=True,
            )
            etag = '"' + hashlib.sha256(body.encode()).hexdigest()[:16] + '"'
            if request.headers.get("if-none-match") == etag:
                return Response(status_code=304, headers={**cache, "ETag": etag})
            return Response(body, media_type="application/json", headers={**cache, "ETag": etag})

        async def authorize(request: Request) -> Response:
            self.hits[AUTHORIZE] += 1
            if request.method == "GET":
                asked = dict(request.query_params)
                self.authorizations.append(asked)
                problem = self._authorization_problem(asked)
                if problem:
                    return JSONResponse({"error": "invalid_request", "detail": problem}, 400)
                hidden = "".join(
                    f'<input type="hidden" name="{html.escape(k)}" value="{html.escape(v)}">'
                    for k, v in asked.items()
                )
                return HTMLResponse(
                    '<!doctype html><link rel="icon" href="data:,">'
                    "<title>Test issuer sign-in</title>"
                    "<h1>Test issuer</h1>"
                    f'<form method="post" action="{AUTHORIZE}">{hidden}'
                    '<label for="username">Username</label>'
                    '<input id="username" name="username"><button type="submit">Log in</button>'
                    "</form>"
                )
            form = await _form(request)
            if self._authorization_problem(form) or form.get("username") not in self.users:
                return HTMLResponse("<p>Unknown user or request</p>", status_code=400)
            code = secrets.token_urlsafe(16)
            self.codes[code] = (
                form["client_id"],
                form["redirect_uri"],
                form["code_challenge"],
                form["username"],
                form.get("nonce", ""),
            )
            back = urllib.parse.urlencode({"code": code, "state": form.get("state", "")})
            return Response(status_code=302, headers={"Location": f"{form['redirect_uri']}?{back}"})

        async def token(request: Request) -> Response:
            self.hits[TOKEN] += 1
            client = self._client_of(request)
            form = await _form(request)
            if form.get("grant_type") == "authorization_code":
                return self._code_grant(form)
            if client is None or form.get("grant_type") != "client_credentials":
                return JSONResponse({"error": "invalid_client"}, status_code=401)
            client_id, allowed = client
            asked = str(form.get("scope") or "").split()
            granted = [s for s in asked if s in allowed] if asked else list(allowed)
            access = self.token(
                sub=f"service-account-{client_id}", azp=client_id, scope=" ".join(granted)
            )
            return JSONResponse(
                {
                    "access_token": access,
                    "token_type": "Bearer",
                    "expires_in": 300,
                    "scope": " ".join(granted),
                },
                headers={"Cache-Control": "no-store"},
            )

        async def introspect(request: Request) -> Response:
            self.hits[INTROSPECT] += 1
            if self._client_of(request) is None:
                return JSONResponse({"error": "invalid_client"}, status_code=401)
            form = await _form(request)
            answer = self.opaque.get(str(form.get("token")), {})
            return JSONResponse(answer or {"active": False})

        return Starlette(
            routes=[
                Route(DISCOVERY, discovery),
                Route(CERTS, certs),
                Route(TOKEN, token, methods=["POST"]),
                Route(INTROSPECT, introspect, methods=["POST"]),
                Route(AUTHORIZE, authorize, methods=["GET", "POST"]),
            ]
        )

    def _authorization_problem(self, asked: dict[str, str]) -> str:
        """Why an authorization request is refused; empty when it is a PKCE code request."""
        if asked.get("response_type") != "code":
            return "response_type must be code"
        if self.redirects.get(asked.get("client_id", "")) != asked.get("redirect_uri"):
            return "unknown client or redirect_uri"
        if (
            asked.get("code_challenge_method") != "S256"
            or len(asked.get("code_challenge", "")) != 43
        ):
            return "PKCE with S256 is required"
        return ""

    def _code_grant(self, form: dict[str, str]) -> Response:
        """The authorization code grant: the code once, its client, redirect URI and verifier."""
        found = self.codes.pop(form.get("code", ""), None)
        if found is None:
            return JSONResponse({"error": "invalid_grant"}, status_code=400)
        client_id, redirect_uri, challenge, username, nonce = found
        verifier = form.get("code_verifier", "").encode()
        computed = base64.urlsafe_b64encode(hashlib.sha256(verifier).digest()).rstrip(b"=")
        if (
            form.get("client_id") != client_id
            or form.get("redirect_uri") != redirect_uri
            or not secrets.compare_digest(computed.decode(), challenge)
        ):
            return JSONResponse({"error": "invalid_grant"}, status_code=400)
        access = self.token(headers={"typ": "at+jwt"}, azp=client_id, **self.users[username])
        answer = {"access_token": access, "token_type": "Bearer", "expires_in": 300}
        if self.id_token_fault != "missing":
            answer["id_token"] = self.id_token(client_id, nonce, self.users[username]["sub"])
        return JSONResponse(answer, headers={"Cache-Control": "no-store"})

    def id_token(self, client_id: str, nonce: str, subject: str) -> str:
        """The code grant's ID token for ``client_id``, spoiled as :attr:`id_token_fault` says."""
        fault, now = self.id_token_fault, int(time.time())
        claims: dict[str, Any] = {
            "iss": self.base + "/realms/another" if fault == "other_issuer" else self.issuer,
            "sub": subject,
            "aud": "another-client" if fault == "other_audience" else client_id,
            "iat": now,
            "exp": now - 120 if fault == "expired" else now + 300,
            "nonce": "a-nonce-of-another-sign-in" if fault == "wrong_nonce" else nonce,
        }
        if fault == "no_nonce":
            del claims["nonce"]
        if fault == "other_azp":
            claims["azp"] = "another-client"
        if fault == "unsigned":
            return jwt.encode(claims, None, algorithm="none")
        kid, key = self.current, self.keys[self.current]
        if fault == "unknown_key":
            kid, key = "not-published", ec.generate_private_key(ec.SECP256R1())
        if fault == "encryption_key":  # published, but for encryption only
            kid = "encryption-only"
            key = self.encryption_keys.setdefault(kid, ec.generate_private_key(ec.SECP256R1()))
        return jwt.encode(claims, key, algorithm="ES256", headers={"kid": kid, "typ": "JWT"})

    def _client_of(self, request: Request) -> tuple[str, tuple[str, ...]] | None:
        scheme, _, value = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "basic":
            return None
        client_id, _, secret = base64.b64decode(value).decode().partition(":")
        known = self.clients.get(client_id)
        if known is None or not secrets.compare_digest(known[0], secret):
            return None
        return client_id, known[1]

    def start(self) -> None:
        stack = contextlib.ExitStack()
        stack.enter_context(serving(self.app(), self.port))
        self._server = stack

    def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None

    @contextlib.contextmanager
    def outage(self) -> Iterator[None]:
        """The issuer is down (connections refused) inside the block, back up after it."""
        self.stop()
        try:
            yield
        finally:
            self.start()


async def _form(request: Request) -> dict[str, str]:
    """An ``application/x-www-form-urlencoded`` body (no python-multipart needed)."""
    pairs = urllib.parse.parse_qsl((await request.body()).decode("utf-8"))
    return dict(pairs)


@contextlib.contextmanager
def running_issuer(max_age: int = 300) -> Iterator[Issuer]:
    issuer = Issuer(max_age=max_age)
    issuer.start()
    try:
        yield issuer
    finally:
        issuer.stop()
