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
algorithm, ``exp`` missing or past, ``iss``, ``aud``, claim types), or that
comes with a second ``Authorization`` header, is refused
with one generic message: the caller is never told which check failed.  The
reason is logged (never the token).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jwt
from jwt.algorithms import get_default_algorithms

from skillrack import AuthenticationFailed, Caller, ConfigError, RequestCredentials, hookimpl

NAME = "jwt-bearer"
AUTH = "jwt"
SCHEME = 'Bearer realm="a2a"'
CHALLENGE = 'Bearer realm="a2a", error="invalid_token"'
MESSAGE = "invalid bearer token"
DEFAULT_ALGORITHMS = ("ES256", "RS256")

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
_BEARER = re.compile(r"bearer(?:\s+(.*))?", re.IGNORECASE | re.DOTALL)
_PRIVATE_MEMBERS = frozenset({"d", "p", "q", "dp", "dq", "qi", "oth"})


def _algorithms_for(jwk: Mapping[str, Any]) -> frozenset[str]:
    """The algorithms a key of this type (and curve) can verify."""
    kty, crv = jwk.get("kty"), jwk.get("crv")
    if kty == "EC":
        return frozenset(
            {
                "P-256": {"ES256"},
                "P-384": {"ES384"},
                "P-521": {"ES512", "ES521"},
                "secp256k1": {"ES256K"},
            }.get(crv if isinstance(crv, str) else "", set())
        )
    if kty == "RSA":
        return frozenset({"RS256", "RS384", "RS512", "PS256", "PS384", "PS512"})
    if kty == "oct":
        return frozenset({"HS256", "HS384", "HS512"})
    if kty == "OKP" and crv in ("Ed25519", "Ed448"):
        return frozenset({"EdDSA"})
    return frozenset()


class JwtBearer:
    """The plugin object: verifies bearer JWTs against keys loaded at creation."""

    def __init__(
        self,
        keys: dict[tuple[str, str], Any],
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
        token = _bearer(request.headers)
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
    unknown = set(settings) - _SETTINGS
    if unknown:
        raise ConfigError(
            f"unknown key jwt_bearer.{sorted(unknown)[0]} (known: {', '.join(sorted(_SETTINGS))})"
        )
    for required in ("jwks", "issuer", "audience"):
        if required not in settings:
            raise ConfigError(f"jwt_bearer.{required} is required")
    issuer = settings["issuer"]
    if not isinstance(issuer, str) or not issuer:
        raise ConfigError("jwt_bearer.issuer must be a non-empty string")
    audience = settings["audience"]
    if isinstance(audience, list):
        if not audience or not all(isinstance(a, str) and a for a in audience):
            raise ConfigError("jwt_bearer.audience must be a string or a list of strings")
        audience = list(audience)
    elif not isinstance(audience, str) or not audience:
        raise ConfigError("jwt_bearer.audience must be a string or a list of strings")
    algorithms = _algorithms(settings.get("algorithms", list(DEFAULT_ALGORITHMS)))
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


def _algorithms(value: Any) -> frozenset[str]:
    if not isinstance(value, list) or not value or not all(isinstance(a, str) for a in value):
        raise ConfigError("jwt_bearer.algorithms must be a non-empty list of algorithm names")
    known = set(get_default_algorithms()) - {"none"}
    for name in value:
        if name.lower() == "none":
            raise ConfigError("jwt_bearer.algorithms: 'none' is never accepted")
        if name not in known:
            raise ConfigError(
                f"jwt_bearer.algorithms: unknown algorithm {name!r} "
                f"(known: {', '.join(sorted(known))})"
            )
    return frozenset(value)


def _load_jwks(path: Path, algorithms: frozenset[str]) -> dict[tuple[str, str], Any]:
    where = f"jwt_bearer.jwks ({path})"
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"jwt_bearer.jwks: cannot read {path}: {exc.strerror or exc}") from exc
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"{where} is not JSON: {exc}") from exc
    entries = document.get("keys") if isinstance(document, dict) else None
    if not isinstance(entries, list) or not entries:
        raise ConfigError(f"{where} must be a JWK Set: an object with a non-empty 'keys' list")
    keys: dict[tuple[str, str], Any] = {}
    kids: set[str] = set()
    for index, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise ConfigError(f"{where}: keys[{index}] is not an object")
        kid = entry.get("kid")
        if not isinstance(kid, str) or not kid:
            raise ConfigError(f"{where}: keys[{index}] has no 'kid'")
        if kid in kids:
            raise ConfigError(f"{where}: kid {kid!r} appears twice")
        kids.add(kid)
        if entry.get("use", "sig") != "sig":
            continue
        if entry.get("kty") != "oct" and _PRIVATE_MEMBERS & set(entry):
            raise ConfigError(f"{where}: key {kid!r} holds private key material")
        stated = entry.get("alg")
        usable = _algorithms_for(entry) & algorithms
        if stated is not None:
            usable &= {stated}
        if not usable:
            logger.warning("JWKS key %r is not usable with algorithms %s", kid, sorted(algorithms))
            continue
        for alg in sorted(usable):
            try:
                keys[(kid, alg)] = jwt.PyJWK(entry, alg).key
            except jwt.PyJWTError as exc:
                raise ConfigError(f"{where}: key {kid!r} is not a valid {alg} key: {exc}") from exc
    if not keys:
        raise ConfigError(f"{where}: no key usable with algorithms {sorted(algorithms)}")
    return keys


def _bearer(headers: Mapping[str, str]) -> str | None:
    value = headers.get("authorization")
    if value is None:
        for name, candidate in headers.items():
            if name.lower() == "authorization":
                value = candidate
                break
    if value is None:
        return None
    match = _BEARER.fullmatch(value.strip())
    if match is None:
        return None  # another scheme (Basic, ...): not this plugin's credential
    return (match.group(1) or "").strip()
