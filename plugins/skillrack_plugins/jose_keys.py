"""What the bearer-token plugins share: algorithms, JWK Sets, the bearer header, claim paths.

``jwt_bearer`` reads its JWK Set from a file and ``oidc`` from its issuer;
both must refuse the same things (``none``, a key used with an algorithm of
another type, private key material, a repeated ``kid``), so the rules live
here once.  Errors are ``ValueError`` with a message naming ``where``; each
plugin turns them into a ``ConfigError`` or a refused token.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from typing import Any

import jwt
from jwt.algorithms import get_default_algorithms

logger = logging.getLogger(__name__)

DEFAULT_ALGORITHMS = ("ES256", "RS256")
_BEARER = re.compile(r"bearer(?:\s+(.*))?", re.IGNORECASE | re.DOTALL)
_PRIVATE_MEMBERS = frozenset({"d", "p", "q", "dp", "dq", "qi", "oth"})

#: ``(kid, alg) -> verification key``: a token selects its key by both.
KeyTable = dict[tuple[str, str], Any]


def algorithms_for(jwk: Mapping[str, Any]) -> frozenset[str]:
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


def allowed_algorithms(value: Any, where: str, *, hmac: bool = True) -> frozenset[str]:
    """An operator's ``algorithms`` list; ``none`` never, HMAC only when ``hmac``."""
    if not isinstance(value, list) or not value or not all(isinstance(a, str) for a in value):
        raise ValueError(f"{where} must be a non-empty list of algorithm names")
    known = set(get_default_algorithms()) - {"none"}
    for name in value:
        if name.lower() == "none":
            raise ValueError(f"{where}: 'none' is never accepted")
        if name not in known:
            raise ValueError(
                f"{where}: unknown algorithm {name!r} (known: {', '.join(sorted(known))})"
            )
        if not hmac and name.startswith("HS"):
            raise ValueError(
                f"{where}: {name} needs a shared secret, which a published key set never holds"
            )
    return frozenset(value)


def key_table(document: Any, algorithms: frozenset[str], where: str) -> KeyTable:
    """The usable verification keys of a JWK Set, by ``(kid, alg)``.

    Every key needs a ``kid``, unique in the set; ``"use": "enc"`` keys are
    skipped; private key material is refused; a key is usable with the
    allowed algorithms its type supports (only its own ``alg`` when stated).
    """
    entries = document.get("keys") if isinstance(document, dict) else None
    if not isinstance(entries, list) or not entries:
        raise ValueError(f"{where} must be a JWK Set: an object with a non-empty 'keys' list")
    keys: KeyTable = {}
    kids: set[str] = set()
    for index, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise ValueError(f"{where}: keys[{index}] is not an object")
        kid = entry.get("kid")
        if not isinstance(kid, str) or not kid:
            raise ValueError(f"{where}: keys[{index}] has no 'kid'")
        if kid in kids:
            raise ValueError(f"{where}: kid {kid!r} appears twice")
        kids.add(kid)
        if entry.get("use", "sig") != "sig":
            continue
        if entry.get("kty") != "oct" and _PRIVATE_MEMBERS & set(entry):
            raise ValueError(f"{where}: key {kid!r} holds private key material")
        stated = entry.get("alg")
        usable = algorithms_for(entry) & algorithms
        if stated is not None:
            usable &= {stated}
        if not usable:
            logger.warning("JWKS key %r is not usable with algorithms %s", kid, sorted(algorithms))
            continue
        for alg in sorted(usable):
            try:
                keys[(kid, alg)] = jwt.PyJWK(entry, alg).key
            except jwt.PyJWTError as exc:
                raise ValueError(f"{where}: key {kid!r} is not a valid {alg} key: {exc}") from exc
    if not keys:
        raise ValueError(f"{where}: no key usable with algorithms {sorted(algorithms)}")
    return keys


def bearer_token(headers: Mapping[str, str]) -> str | None:
    """The token of ``Authorization: Bearer``; None without one (or with another scheme)."""
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


#: Claims that must be NumericDate values (RFC 7519 section 2) when present.
NUMERIC_CLAIMS = ("exp", "nbf", "iat")


def check_claim_types(claims: Mapping[str, Any]) -> None:
    """``ValueError`` for a registered claim of the wrong JSON type (checked values aside).

    PyJWT converts what it compares (``int("9999999999")`` for ``exp``), so a
    token whose issuer wrote ``exp`` as a string would pass its check; both
    bearer plugins refuse it here.
    """
    for name in NUMERIC_CLAIMS:
        value = claims.get(name)
        if name in claims and (isinstance(value, bool) or not isinstance(value, int | float)):
            raise ValueError(f"claim {name!r} is not a number")
    if "iss" in claims and not isinstance(claims["iss"], str):
        raise ValueError("claim 'iss' is not a string")
    aud = claims.get("aud")
    if "aud" in claims and not (
        isinstance(aud, str) or (isinstance(aud, list) and all(isinstance(a, str) for a in aud))
    ):
        raise ValueError("claim 'aud' is neither a string nor a list of strings")


def claim_at(claims: Mapping[str, Any], path: str) -> Any:
    """The claim at a dotted path (``realm_access.roles``); None when any step is missing.

    A claim whose own name holds a dot (``https://example.net/roles``) is
    found first under its whole name.
    """
    if path in claims:
        return claims[path]
    value: Any = claims
    for step in path.split("."):
        if not isinstance(value, Mapping) or step not in value:
            return None
        value = value[step]
    return value
