"""Signed Agent Cards: JWS over the canonical card (A2A 1.0, section 8.4), and their verification.

Signing, as the specification's "Agent Card Signing" section says:

1. the payload is the card with ``signatures`` excluded and default-valued
   fields removed, serialized with RFC 8785 (JCS);
2. the protected header is ``{"alg", "typ": "JOSE", "kid", "jku"}``, ``jku``
   being the URL of the JWKS this agent publishes (:data:`JWKS_PATH`);
3. the signature is the JWS signature over ``BASE64URL(protected) "."
   BASE64URL(payload)``; the card carries ``{"protected", "signature"}`` in
   its ``signatures`` list (the payload is the card itself, so it is not
   repeated).

"Default-valued fields removed" is done the way both reference SDKs do it
(a2a-sdk's ``_canonicalize_agent_card`` and ``@a2a-js/sdk``'s
``canonicalizeAgentCard``), since a signature that only skillrack could
verify would be of little use: the card is read into the A2A ``AgentCard``
message (fields outside the schema are dropped), written back as proto JSON
(proto3 defaults omitted, ``optional`` fields kept when set), and then empty
strings, lists and objects are removed recursively.  One consequence worth
knowing: an empty value is never covered by the signature, so, for example,
``securityRequirements`` entries whose scope lists are all empty canonicalize
to nothing.  skillrack's client does not take anything it relies on from
such values.

ECDSA signatures are computed deterministically (RFC 6979) when the
installed OpenSSL supports it, so replicas sharing a key publish
byte-identical cards, and the card's strong ETag holds across restarts and
replicas.  RSA (PKCS#1 v1.5) is deterministic anyway.

Verification (:func:`verify_card_signature`) accepts a card when at least one
of its signatures verifies with one of the pinned keys: the verifier never
fetches ``jku`` (a key served by the agent itself proves nothing about the
agent), and accepts only asymmetric algorithms matching the pinned key.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jwt
import rfc8785
from a2a.types import AgentCard, AgentCardSignature
from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature
from google.protobuf import json_format
from jwt.algorithms import ECAlgorithm, RSAAlgorithm

from skillrack.errors import SkillrackError

#: Where the agent publishes the public key(s) of its card signatures (RFC 8615 well-known).
JWKS_PATH = "/.well-known/jwks.json"
JWKS_MEDIA_TYPE = "application/jwk-set+json"

#: Asymmetric JWS algorithms a pinned key may verify; never "none" nor an HMAC.
VERIFY_ALGORITHMS = frozenset(
    {"ES256", "ES384", "ES512", "RS256", "RS384", "RS512", "PS256", "PS384", "PS512"}
)
#: Members of a JWK that belong to a private or symmetric key (RFC 7518 section 6).
PRIVATE_MEMBERS = frozenset({"d", "p", "q", "dp", "dq", "qi", "oth", "k"})
#: Nesting accepted while removing empty values (extension params may nest freely).
MAX_DEPTH = 128

_EC_ALGORITHMS: Mapping[str, tuple[str, hashes.HashAlgorithm]] = {
    "secp256r1": ("ES256", hashes.SHA256()),
    "secp384r1": ("ES384", hashes.SHA384()),
    "secp521r1": ("ES512", hashes.SHA512()),
}
MIN_RSA_BITS = 2048


class CardSignatureError(SkillrackError):
    """A card whose signatures cannot be accepted (the message says why)."""


# -- canonical form ---------------------------------------------------------------------------


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _b64url_decode(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _clean_empty(value: Any, depth: int = 1) -> Any:
    """``value`` without empty strings, lists and objects (recursively); None if empty."""
    if isinstance(value, dict | list) and depth > MAX_DEPTH:
        raise CardSignatureError(f"the card nests deeper than {MAX_DEPTH} levels")
    if isinstance(value, dict):
        cleaned = {k: c for k, v in value.items() if (c := _clean_empty(v, depth + 1)) is not None}
        return cleaned or None
    if isinstance(value, list):
        items = [c for v in value if (c := _clean_empty(v, depth + 1)) is not None]
        return items or None
    if value == "" or value is None:
        return None
    return value


def _as_proto(card: AgentCard | Mapping[str, Any] | str | bytes) -> AgentCard:
    if isinstance(card, AgentCard):
        return card
    try:
        value = json.loads(card) if isinstance(card, str | bytes) else card
        if not isinstance(value, Mapping):
            raise CardSignatureError("the card is not a JSON object")
        return json_format.ParseDict(dict(value), AgentCard(), ignore_unknown_fields=True)
    except (ValueError, json_format.ParseError, RecursionError) as exc:
        raise CardSignatureError(f"the card is not a valid A2A AgentCard: {exc}") from None


def canonical_card(card: AgentCard | Mapping[str, Any] | str | bytes) -> bytes:
    """The bytes a card signature covers: JCS of the card without defaults and ``signatures``."""
    as_dict = json_format.MessageToDict(_as_proto(card))
    as_dict.pop("signatures", None)
    try:
        return bytes(rfc8785.dumps(_clean_empty(as_dict) or {}))
    except (rfc8785.CanonicalizationError, RecursionError) as exc:
        raise CardSignatureError(f"the card has no canonical form: {exc}") from None


# -- keys -------------------------------------------------------------------------------------


def public_jwk(key: ec.EllipticCurvePublicKey | rsa.RSAPublicKey) -> dict[str, Any]:
    """The JWK of a public key (RFC 7517), without kid, alg or use."""
    if isinstance(key, ec.EllipticCurvePublicKey):
        jwk: dict[str, Any] = ECAlgorithm.to_jwk(key, as_dict=True)
    else:
        jwk = RSAAlgorithm.to_jwk(key, as_dict=True)
    return {k: v for k, v in jwk.items() if k not in {"key_ops", "kid", "alg", "use"}}


def thumbprint(jwk: Mapping[str, Any]) -> str:
    """The RFC 7638 JWK thumbprint (SHA-256, base64url) of a public EC or RSA JWK."""
    required = ("crv", "kty", "x", "y") if jwk["kty"] == "EC" else ("e", "kty", "n")
    members = {k: jwk[k] for k in required}
    digest = hashlib.sha256(json.dumps(members, separators=(",", ":"), sort_keys=True).encode())
    return _b64url(digest.digest())


@dataclass(frozen=True)
class CardSigner:
    """The operator's card-signing key: signs a card, and is published as a JWKS."""

    private_key: ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey
    kid: str
    alg: str

    @classmethod
    def of(
        cls, key: ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey, kid: str | None = None
    ) -> CardSigner:
        """A signer for ``key``: ES256/ES384/ES512 by curve, RS256 for RSA.

        ``kid`` defaults to the RFC 7638 thumbprint of the public key.
        """
        if isinstance(key, ec.EllipticCurvePrivateKey):
            if key.curve.name not in _EC_ALGORITHMS:
                raise ValueError(f"curve {key.curve.name} is not P-256, P-384 or P-521")
            alg = _EC_ALGORITHMS[key.curve.name][0]
        else:
            if key.key_size < MIN_RSA_BITS:
                raise ValueError(f"an RSA key needs at least {MIN_RSA_BITS} bits")
            alg = "RS256"
        return cls(key, kid or thumbprint(public_jwk(key.public_key())), alg)

    def jwk(self) -> dict[str, Any]:
        """The public JWK, with ``kid``, ``alg`` and ``use``; never a private member."""
        jwk = public_jwk(self.private_key.public_key())
        return {**jwk, "kid": self.kid, "alg": self.alg, "use": "sig"}

    def jwks(self) -> dict[str, Any]:
        return {"keys": [self.jwk()]}

    def signature(self, card: AgentCard, jku: str) -> AgentCardSignature:
        """The AgentCardSignature of ``card`` (its current ``signatures`` are not covered)."""
        header = {"alg": self.alg, "typ": "JOSE", "kid": self.kid, "jku": jku}
        protected = _b64url(json.dumps(header, separators=(",", ":")).encode("utf-8"))
        signing_input = f"{protected}.{_b64url(canonical_card(card))}".encode("ascii")
        return AgentCardSignature(protected=protected, signature=_b64url(self._sign(signing_input)))

    def sign(self, card: AgentCard, jku: str) -> AgentCard:
        """Append this key's signature to ``card`` (in place) and return it."""
        card.signatures.append(self.signature(card, jku))
        return card

    def _sign(self, data: bytes) -> bytes:
        key = self.private_key
        if isinstance(key, rsa.RSAPrivateKey):
            return key.sign(data, padding.PKCS1v15(), hashes.SHA256())
        hash_algorithm = _EC_ALGORITHMS[key.curve.name][1]
        try:
            der = key.sign(data, ec.ECDSA(hash_algorithm, deterministic_signing=True))
        except UnsupportedAlgorithm:  # OpenSSL older than 3.2: randomized ECDSA
            der = key.sign(data, ec.ECDSA(hash_algorithm))
        # JWS carries ECDSA as the fixed-size big-endian r || s (RFC 7518 section 3.4).
        r, s = decode_dss_signature(der)
        size = (key.curve.key_size + 7) // 8
        return r.to_bytes(size, "big") + s.to_bytes(size, "big")


# -- verification -----------------------------------------------------------------------------


@dataclass(frozen=True)
class CardKeys:
    """Pinned public keys (a JWKS) that a card must be signed by."""

    keys: tuple[Mapping[str, Any], ...]

    @classmethod
    def load(cls, source: CardKeys | Mapping[str, Any] | str | os.PathLike[str]) -> CardKeys:
        """From a JWKS (``{"keys": [...]}``) given as a dict or as the path of a JSON file.

        Private and symmetric members are refused (a pinned set is public
        keys only), and so is a set with no usable key.
        """
        if isinstance(source, CardKeys):
            return source
        if isinstance(source, str | os.PathLike):
            try:
                source = json.loads(Path(source).read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                raise CardSignatureError(f"cannot read the pinned JWKS {source}: {exc}") from None
        keys = source.get("keys") if isinstance(source, Mapping) else None
        if not isinstance(keys, list) or not keys:
            raise CardSignatureError('pinned card keys must be a JWKS: {"keys": [<JWK>, ...]}')
        for jwk in keys:
            if not isinstance(jwk, Mapping) or jwk.get("kty") not in ("EC", "RSA"):
                raise CardSignatureError("a pinned card key must be an EC or RSA public JWK")
            if PRIVATE_MEMBERS & set(jwk):
                raise CardSignatureError(
                    f"pinned card key {jwk.get('kid', '(no kid)')!r} has private members; "
                    "pin public keys only"
                )
            try:
                jwt.PyJWK(dict(jwk))
            except (jwt.PyJWTError, ValueError, KeyError, TypeError) as exc:
                raise CardSignatureError(
                    f"pinned card key {jwk.get('kid', '(no kid)')!r} is not a usable JWK: {exc}"
                ) from None
        return cls(tuple(dict(jwk) for jwk in keys))

    @classmethod
    def read(cls, path: str | os.PathLike[str]) -> CardKeys:
        """From a file: a JWKS (JSON), or one public key in PEM (``-----BEGIN PUBLIC KEY``).

        What ``skillrack call --card-key FILE`` pins.  A PEM key becomes a JWK
        without ``kid`` or ``alg``, so it may verify a signature under any
        ``kid``, with the algorithm its curve or RSA size allows.  A private
        key is refused: the pinned side only ever holds public keys.
        """
        try:
            raw = Path(path).read_bytes()
        except OSError as exc:
            raise CardSignatureError(f"cannot read {path}: {exc.strerror or exc}") from None
        if b"-----BEGIN" not in raw:
            try:
                return cls.load(json.loads(raw))
            except ValueError:
                raise CardSignatureError(
                    f"{path} is neither a JWKS (JSON) nor a PEM public key"
                ) from None
        if b"PRIVATE KEY" in raw:
            raise CardSignatureError(
                f"{path} holds a private key; pin its public key (the .jwks.json "
                "`skillrack keys new --card` writes beside it)"
            )
        try:
            key = serialization.load_pem_public_key(raw)
        except (ValueError, UnsupportedAlgorithm) as exc:
            raise CardSignatureError(f"{path} is not a usable PEM public key: {exc}") from None
        if not isinstance(key, ec.EllipticCurvePublicKey | rsa.RSAPublicKey):
            raise CardSignatureError(f"{path} is not an EC or RSA public key")
        return cls.load({"keys": [public_jwk(key)]})

    def __add__(self, other: CardKeys) -> CardKeys:
        return CardKeys(self.keys + other.keys)

    def candidates(self, header: Mapping[str, Any]) -> list[jwt.PyJWK]:
        """Pinned keys that may have made a signature with this protected header."""
        alg, kid = header.get("alg"), header.get("kid")
        found = []
        for jwk in self.keys:
            if kid is not None and jwk.get("kid", kid) != kid:
                continue
            if jwk.get("alg", alg) != alg or jwk.get("use", "sig") != "sig":
                continue
            if "key_ops" in jwk and "verify" not in jwk["key_ops"]:
                continue
            try:
                found.append(jwt.PyJWK(dict(jwk), algorithm=str(alg)))
            except (jwt.PyJWTError, ValueError, KeyError, TypeError):  # not a key for alg
                continue
        return found


def verify_card_signature(
    card_json: AgentCard | Mapping[str, Any] | str | bytes,
    jwks: CardKeys | Mapping[str, Any] | str | os.PathLike[str],
) -> None:
    """Accept the card if one of its signatures verifies with a pinned key; else raise.

    ``card_json`` is the card as received (JSON text or parsed); ``jwks`` the
    pinned public keys (a JWKS dict, its path, or :class:`CardKeys`).  Raises
    :class:`CardSignatureError` saying why no signature was accepted.
    """
    keys = CardKeys.load(jwks)
    card = _as_proto(card_json)
    if not card.signatures:
        raise CardSignatureError("the card is not signed")
    payload = _b64url(canonical_card(card))
    reasons: list[str] = []
    for index, entry in enumerate(card.signatures):
        reasons.append(f"signature {index}: {_check(entry, payload, keys)}")
        if reasons[-1].endswith(": ok"):
            return
    raise CardSignatureError("no signature verifies with a pinned key (" + "; ".join(reasons) + ")")


def _check(entry: AgentCardSignature, payload: str, keys: CardKeys) -> str:
    """ "ok", or why this signature is not accepted."""
    try:
        header = json.loads(_b64url_decode(entry.protected))
    except (ValueError, UnicodeDecodeError):
        return "the protected header is not base64url JSON"
    if not isinstance(header, dict):
        return "the protected header is not a JSON object"
    alg = header.get("alg")
    if alg not in VERIFY_ALGORITHMS:
        return f"algorithm {alg!r} is not accepted"
    candidates = keys.candidates(header)
    if not candidates:
        return f"no pinned key for kid {header.get('kid')!r} and {alg}"
    token = f"{entry.protected}.{payload}.{entry.signature}"
    for key in candidates:
        try:
            jwt.api_jws.decode(
                token, key=key, algorithms=[alg], options={"enforce_minimum_key_length": True}
            )
            return "ok"
        except jwt.PyJWTError:
            continue
    return f"does not verify with the pinned key(s) for kid {header.get('kid')!r}"
