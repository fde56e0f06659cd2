"""Bearer JSON Web Tokens, verified with PyJWT against a local JWKS file.

Settings:

``jwks`` (required)
    Path of a JWK Set (JSON) holding the issuer's public keys; a relative path
    resolves against the directory of the configuration file.  The file is
    read once, when the plugin is created; nothing is ever fetched over the
    network.  Every key needs a ``kid``, unique in the set; a token selects its
    key by ``kid``.  Keys with ``"use": "enc"`` are ignored; private key
    material is refused.
``issuer`` (required)
    The expected ``iss``.
``audience`` (required)
    The expected ``aud``: a string, or a list of which the token must name one.
``algorithms``
    Accepted ``alg`` values; default ``["ES256", "RS256"]``.  ``none`` is never
    accepted; HMAC algorithms (``HS*``) only when listed here.  A key is used
    only with the listed algorithms its type supports (and only its own
    ``alg`` when the JWK states one).
``identity_claim`` / ``tenant_claim`` / ``roles_claim``
    Claims giving the caller's identity (default ``sub``; required in the
    token), tenant (default ``tenant``; ``""`` when absent) and roles (default
    ``roles``; a list of strings, or absent).
``leeway_seconds``
    Clock skew tolerated on ``exp``, ``nbf`` and ``iat``; default 30.

A request without ``Authorization: Bearer`` is not this plugin's business
(``None``).  A token that fails any check (signature, unknown ``kid``,
algorithm, ``exp`` missing or past, ``iss``, ``aud``, claim types: ``exp``,
``nbf``, ``iat`` numbers, never strings), or that
comes with a second ``Authorization`` header, is refused
with one generic message: the caller is never told which check failed.  The
reason is logged (never the token).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jwt

from skillrack import (
    AuthenticationFailed,
    Caller,
    ConfigError,
    RequestCredentials,
    hookimpl,
    refuse_unknown_keys,
)
from skillrack_plugins._settings import audience_setting
from skillrack_plugins.jose_keys import (
    DEFAULT_ALGORITHMS,
    KeyTable,
    allowed_algorithms,
    bearer_token,
    check_claim_types,
    key_table,
)

NAME = "jwt-bearer"
AUTH = "jwt"
SCHEME = 'Bearer realm="a2a"'
CHALLENGE = 'Bearer realm="a2a", error="invalid_token"'
MESSAGE = "invalid bearer token"

logger = logging.getLogger(__name__)

_SETTINGS = frozenset(
    {
        "jwks",
        "issuer",
        "audience",
        "algorithms",
        "identity_claim",
        "tenant_claim",
        "roles_claim",
        "leeway_seconds",
    }
)


class JwtBearer:
    """The plugin object: verifies bearer JWTs against keys loaded at creation."""

    def __init__(
        self,
        keys: KeyTable,
        *,
        issuer: str,
        audience: str | list[str],
        identity_claim: str,
        tenant_claim: str,
        roles_claim: str,
        leeway: float,
    ) -> None:
        self._keys = keys  # (kid, alg) -> verification key
        self._issuer = issuer
        self._audience = audience
        self._identity_claim = identity_claim
        self._tenant_claim = tenant_claim
        self._roles_claim = roles_claim
        self._leeway = leeway

    @hookimpl
    def authenticate(self, request: RequestCredentials) -> Caller | None:
        token = bearer_token(request.headers)
        if token is None:
            return None
        if "authorization" in request.repeated:  # which copy is the token? neither
            raise AuthenticationFailed(MESSAGE, challenge=CHALLENGE)
        try:
            return self._verify(token)
        except Exception as exc:  # every failure looks the same to the caller
            logger.info(
                "bearer token refused (client %s): %s",
                request.client_host or "-",
                type(exc).__name__,
            )
            raise AuthenticationFailed(MESSAGE, challenge=CHALLENGE) from None

    def _verify(self, token: str) -> Caller:
        if not token:
            raise ValueError("empty token")
        header = jwt.get_unverified_header(token)
        kid, alg = header.get("kid"), header.get("alg")
        if not isinstance(kid, str) or not isinstance(alg, str):
            raise ValueError("kid or alg missing")
        key = self._keys.get((kid, alg))
        if key is None:
            raise LookupError("no key for this kid and alg")
        claims = jwt.decode(
            token,
            key=key,
            algorithms=[alg],
            audience=self._audience,
            issuer=self._issuer,
            leeway=self._leeway,
            options={"require": ["exp", "iss", "aud"], "verify_signature": True},
        )
        check_claim_types(claims)
        identity = claims.get(self._identity_claim)
        if not isinstance(identity, str) or not identity:
            raise ValueError("identity claim missing")
        tenant = claims.get(self._tenant_claim, "")
        if not isinstance(tenant, str):
            raise ValueError("tenant claim is not a string")
        roles = claims.get(self._roles_claim, [])
        if not isinstance(roles, list) or not all(isinstance(r, str) for r in roles):
            raise ValueError("roles claim is not a list of strings")
        return Caller(
            identity=identity,
            tenant=tenant,
            authenticated=True,
            attributes={"roles": list(roles), "auth": AUTH},
        )

    @hookimpl
    def security_schemes(self) -> dict[str, Any]:
        return {"bearer": {"httpAuthSecurityScheme": {"scheme": "Bearer", "bearerFormat": "JWT"}}}

    @hookimpl
    def www_authenticate(self) -> str:
        return SCHEME


def create(settings: Mapping[str, Any], base_dir: Path) -> JwtBearer:
    """Validate ``settings``, load the JWKS, and return the plugin object."""
    refuse_unknown_keys("[plugins.jwt]", settings, _SETTINGS)
    for required in ("jwks", "issuer", "audience"):
        if required not in settings:
            raise ConfigError(f"jwt_bearer.{required} is required")
    issuer = settings["issuer"]
    if not isinstance(issuer, str) or not issuer:
        raise ConfigError("jwt_bearer.issuer must be a non-empty string")
    audience = audience_setting("jwt_bearer", settings["audience"])
    try:
        algorithms = allowed_algorithms(
            settings.get("algorithms", list(DEFAULT_ALGORITHMS)), "jwt_bearer.algorithms"
        )
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    claims = {}
    for name, default in (
        ("identity_claim", "sub"),
        ("tenant_claim", "tenant"),
        ("roles_claim", "roles"),
    ):
        value = settings.get(name, default)
        if not isinstance(value, str) or not value:
            raise ConfigError(f"jwt_bearer.{name} must be a non-empty string")
        claims[name] = value
    leeway = settings.get("leeway_seconds", 30)
    if isinstance(leeway, bool) or not isinstance(leeway, int | float) or not 0 <= leeway <= 3600:
        raise ConfigError("jwt_bearer.leeway_seconds must be a number from 0 to 3600")
    raw = settings["jwks"]
    if not isinstance(raw, str) or not raw:
        raise ConfigError("jwt_bearer.jwks must be a path")
    path = Path(raw) if Path(raw).is_absolute() else base_dir / raw
    keys = _load_jwks(path, algorithms)
    return JwtBearer(
        keys,
        issuer=issuer,
        audience=audience,
        identity_claim=claims["identity_claim"],
        tenant_claim=claims["tenant_claim"],
        roles_claim=claims["roles_claim"],
        leeway=float(leeway),
    )


def _load_jwks(path: Path, algorithms: frozenset[str]) -> KeyTable:
    where = f"jwt_bearer.jwks ({path})"
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"jwt_bearer.jwks: cannot read {path}: {exc.strerror or exc}") from exc
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"{where} is not JSON: {exc}") from exc
    try:
        return key_table(document, algorithms, where)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
