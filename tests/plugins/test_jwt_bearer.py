"""The first-party bearer-JWT plugin: local JWKS, PyJWT verification, one generic refusal."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import logging
import time
from pathlib import Path
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import ec
from jwt.algorithms import ECAlgorithm

from skillrack.host.config import ConfigError
from skillrack.host.plugins import new_manager
from skillrack.serve.security.authn import AuthenticationFailed, RequestCredentials, authenticate
from skillrack.serve.security.caller import Caller
from skillrack_plugins import jwt_bearer

ISSUER = "https://idp.example.net"
AUDIENCE = "https://agents.example.net/assurance"
KID = "key-1"


def public_jwk(key: ec.EllipticCurvePrivateKey, kid: str = KID) -> dict[str, Any]:
    jwk: dict[str, Any] = json.loads(ECAlgorithm.to_jwk(key.public_key()))
    jwk.update({"kid": kid, "use": "sig"})
    return jwk


@pytest.fixture
def signing_key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


@pytest.fixture
def jwks_file(tmp_path: Path, signing_key: ec.EllipticCurvePrivateKey) -> Path:
    path = tmp_path / "jwks.json"
    path.write_text(json.dumps({"keys": [public_jwk(signing_key)]}), encoding="utf-8")
    return path


@pytest.fixture
def plugin(jwks_file: Path) -> jwt_bearer.JwtBearer:
    return jwt_bearer.create(
        {"jwks": jwks_file.name, "issuer": ISSUER, "audience": AUDIENCE}, jwks_file.parent
    )


def claims(**overrides: Any) -> dict[str, Any]:
    now = int(time.time())
    base: dict[str, Any] = {
        "iss": ISSUER,
        "aud": AUDIENCE,
        "sub": "alice",
        "tenant": "acme",
        "roles": ["operator"],
        "iat": now,
        "exp": now + 300,
    }
    base.update(overrides)
    return {k: v for k, v in base.items() if v is not None}


def sign(
    key: ec.EllipticCurvePrivateKey,
    payload: dict[str, Any] | None = None,
    kid: str | None = KID,
) -> str:
    headers = {"kid": kid} if kid is not None else {}
    return jwt.encode(payload or claims(), key, algorithm="ES256", headers=headers)


def bearer(token: str) -> RequestCredentials:
    return RequestCredentials(headers={"authorization": f"Bearer {token}"}, client_host="h")


def refused(plugin: jwt_bearer.JwtBearer, token: str) -> AuthenticationFailed:
    with pytest.raises(AuthenticationFailed) as info:
        plugin.authenticate(bearer(token))
    assert info.value.message == "invalid bearer token"
    assert info.value.challenge == 'Bearer realm="a2a", error="invalid_token"'
    return info.value


def b64(data: dict[str, Any]) -> str:
    raw = json.dumps(data, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def test_valid_token_gives_caller(
    plugin: jwt_bearer.JwtBearer, signing_key: ec.EllipticCurvePrivateKey
) -> None:
    caller = plugin.authenticate(bearer(sign(signing_key)))
    assert caller == Caller(
        identity="alice",
        tenant="acme",
        authenticated=True,
        attributes={"roles": ["operator"], "auth": "jwt"},
    )


def test_tenant_and_roles_are_optional(
    plugin: jwt_bearer.JwtBearer, signing_key: ec.EllipticCurvePrivateKey
) -> None:
    caller = plugin.authenticate(bearer(sign(signing_key, claims(tenant=None, roles=None))))
    assert caller is not None
    assert caller.tenant == "" and caller.attributes == {"roles": [], "auth": "jwt"}


def test_no_bearer_header_is_not_this_plugins_business(plugin: jwt_bearer.JwtBearer) -> None:
    assert plugin.authenticate(RequestCredentials(headers={})) is None
    assert plugin.authenticate(RequestCredentials(headers={"authorization": "Basic YTpi"})) is None
    assert plugin.authenticate(RequestCredentials(headers={"x-api-key": "k"})) is None


def test_scheme_is_case_insensitive(
    plugin: jwt_bearer.JwtBearer, signing_key: ec.EllipticCurvePrivateKey
) -> None:
    headers = {"Authorization": f"bearer {sign(signing_key)}"}
    caller = plugin.authenticate(RequestCredentials(headers=headers))
    assert caller is not None and caller.identity == "alice"


def test_expired(plugin: jwt_bearer.JwtBearer, signing_key: ec.EllipticCurvePrivateKey) -> None:
    now = int(time.time())
    refused(plugin, sign(signing_key, claims(iat=now - 600, exp=now - 120)))


def test_expiry_within_leeway_is_accepted(
    plugin: jwt_bearer.JwtBearer, signing_key: ec.EllipticCurvePrivateKey
) -> None:
    now = int(time.time())
    assert plugin.authenticate(bearer(sign(signing_key, claims(exp=now - 5)))) is not None


def test_exp_is_required(
    plugin: jwt_bearer.JwtBearer, signing_key: ec.EllipticCurvePrivateKey
) -> None:
    refused(plugin, sign(signing_key, claims(exp=None)))


def test_wrong_audience(
    plugin: jwt_bearer.JwtBearer, signing_key: ec.EllipticCurvePrivateKey
) -> None:
    refused(plugin, sign(signing_key, claims(aud="https://elsewhere.example")))
    refused(plugin, sign(signing_key, claims(aud=None)))


def test_wrong_issuer(
    plugin: jwt_bearer.JwtBearer, signing_key: ec.EllipticCurvePrivateKey
) -> None:
    refused(plugin, sign(signing_key, claims(iss="https://evil.example")))
    refused(plugin, sign(signing_key, claims(iss=None)))


def test_wrong_key(plugin: jwt_bearer.JwtBearer) -> None:
    other = ec.generate_private_key(ec.SECP256R1())
    refused(plugin, sign(other))


def test_unknown_kid(plugin: jwt_bearer.JwtBearer, signing_key: ec.EllipticCurvePrivateKey) -> None:
    refused(plugin, sign(signing_key, kid="key-2"))


def test_missing_kid(plugin: jwt_bearer.JwtBearer, signing_key: ec.EllipticCurvePrivateKey) -> None:
    refused(plugin, sign(signing_key, kid=None))


def test_alg_none(plugin: jwt_bearer.JwtBearer) -> None:
    token = jwt.encode(claims(), "", algorithm="none", headers={"kid": KID})
    refused(plugin, token)
    # hand-built too, with and without a trailing signature segment
    unsigned = f"{b64({'alg': 'none', 'typ': 'JWT', 'kid': KID})}.{b64(claims())}."
    refused(plugin, unsigned)
    refused(plugin, unsigned.rstrip("."))


def test_hs256_with_public_key_as_secret(plugin: jwt_bearer.JwtBearer, jwks_file: Path) -> None:
    # algorithm confusion: HMAC keyed with the public JWK's bytes must not verify
    # (built by hand: PyJWT itself refuses to sign with such a secret)
    secret = jwks_file.read_bytes()
    signing_input = f"{b64({'alg': 'HS256', 'typ': 'JWT', 'kid': KID})}.{b64(claims())}"
    mac = hmac.new(secret, signing_input.encode(), hashlib.sha256).digest()
    refused(plugin, f"{signing_input}.{base64.urlsafe_b64encode(mac).rstrip(b'=').decode()}")


def test_tampered_payload(
    plugin: jwt_bearer.JwtBearer, signing_key: ec.EllipticCurvePrivateKey
) -> None:
    header, _, signature = sign(signing_key).split(".")
    forged = f"{header}.{b64(claims(sub='mallory', roles=['admin']))}.{signature}"
    refused(plugin, forged)


def test_garbage_and_empty(plugin: jwt_bearer.JwtBearer) -> None:
    refused(plugin, "not-a-jwt")
    refused(plugin, "a.b.c")
    with pytest.raises(AuthenticationFailed):
        plugin.authenticate(RequestCredentials(headers={"authorization": "Bearer"}))


def test_bad_claim_types(
    plugin: jwt_bearer.JwtBearer, signing_key: ec.EllipticCurvePrivateKey
) -> None:
    refused(plugin, sign(signing_key, claims(sub=None)))
    refused(plugin, sign(signing_key, claims(roles="admin")))
    refused(plugin, sign(signing_key, claims(tenant=7)))
    # Registered claims of the wrong type, which PyJWT would convert (issue 28).
    far = int(time.time()) + 3600
    refused(plugin, sign(signing_key, claims(exp=str(far))))
    refused(plugin, sign(signing_key, claims(iat=True)))
    refused(plugin, sign(signing_key, claims(nbf=str(far - 7200))))


def test_refusals_do_not_log_the_token(
    plugin: jwt_bearer.JwtBearer,
    signing_key: ec.EllipticCurvePrivateKey,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    token = sign(signing_key, claims(aud="https://elsewhere.example"))
    refused(plugin, token)
    assert token not in caplog.text
    assert token.split(".")[1] not in caplog.text


def test_custom_claims(
    tmp_path: Path, jwks_file: Path, signing_key: ec.EllipticCurvePrivateKey
) -> None:
    plugin = jwt_bearer.create(
        {
            "jwks": str(jwks_file),
            "issuer": ISSUER,
            "audience": ["other", AUDIENCE],
            "identity_claim": "email",
            "tenant_claim": "org",
            "roles_claim": "groups",
            "leeway_seconds": 0,
        },
        tmp_path / "unused",
    )
    token = sign(signing_key, claims(email="a@acme.example", org="acme", groups=["noc"]))
    caller = plugin.authenticate(bearer(token))
    assert caller is not None
    assert (caller.identity, caller.tenant) == ("a@acme.example", "acme")
    assert caller.attributes["roles"] == ["noc"]
    now = int(time.time())
    refused(plugin, sign(signing_key, claims(email="a", exp=now - 5)))  # no leeway


def test_rs256_and_key_rotation(tmp_path: Path, signing_key: ec.EllipticCurvePrivateKey) -> None:
    from cryptography.hazmat.primitives.asymmetric import rsa
    from jwt.algorithms import RSAAlgorithm

    rsa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    rsa_jwk = json.loads(RSAAlgorithm.to_jwk(rsa_key.public_key()))
    rsa_jwk["kid"] = "rsa-1"
    (tmp_path / "jwks.json").write_text(
        json.dumps({"keys": [public_jwk(signing_key), rsa_jwk]}), encoding="utf-8"
    )
    plugin = jwt_bearer.create(
        {"jwks": "jwks.json", "issuer": ISSUER, "audience": AUDIENCE}, tmp_path
    )
    assert plugin.authenticate(bearer(sign(signing_key))) is not None
    token = jwt.encode(claims(), rsa_key, algorithm="RS256", headers={"kid": "rsa-1"})
    assert plugin.authenticate(bearer(token)) is not None
    # the EC key is not an RSA key, and PS256 is not configured
    refused(plugin, jwt.encode(claims(), rsa_key, algorithm="RS256", headers={"kid": KID}))
    refused(plugin, jwt.encode(claims(), rsa_key, algorithm="PS256", headers={"kid": "rsa-1"}))


def test_card_and_challenge(plugin: jwt_bearer.JwtBearer) -> None:
    assert plugin.security_schemes() == {
        "bearer": {"httpAuthSecurityScheme": {"scheme": "Bearer", "bearerFormat": "JWT"}}
    }
    assert plugin.www_authenticate() == 'Bearer realm="a2a"'


DROP = object()
GOOD: dict[str, Any] = {"jwks": "jwks.json", "issuer": ISSUER, "audience": AUDIENCE}


@pytest.mark.parametrize(
    ("changes", "named"),
    [
        ({"jwks": DROP}, r"jwt_bearer\.jwks is required"),
        ({"issuer": DROP}, r"jwt_bearer\.issuer is required"),
        ({"audience": DROP}, r"jwt_bearer\.audience is required"),
        ({"issuer": ""}, r"jwt_bearer\.issuer"),
        ({"audience": []}, r"jwt_bearer\.audience"),
        ({"audience": 3}, r"jwt_bearer\.audience"),
        ({"surprise": 1}, r'\[plugins\.jwt\]: unknown key "surprise"'),
        ({"algorithms": ["ES256", "none"]}, r"jwt_bearer\.algorithms: 'none'"),
        ({"algorithms": ["NONE"]}, r"jwt_bearer\.algorithms: 'none'"),
        ({"algorithms": ["XS999"]}, r"jwt_bearer\.algorithms: unknown algorithm 'XS999'"),
        ({"algorithms": []}, r"jwt_bearer\.algorithms"),
        ({"algorithms": "ES256"}, r"jwt_bearer\.algorithms"),
        ({"algorithms": ["RS256"]}, r"jwt_bearer\.jwks .*no key usable"),
        ({"identity_claim": ""}, r"jwt_bearer\.identity_claim"),
        ({"tenant_claim": 1}, r"jwt_bearer\.tenant_claim"),
        ({"roles_claim": None}, r"jwt_bearer\.roles_claim"),
        ({"leeway_seconds": -1}, r"jwt_bearer\.leeway_seconds"),
        ({"leeway_seconds": True}, r"jwt_bearer\.leeway_seconds"),
        ({"leeway_seconds": "30"}, r"jwt_bearer\.leeway_seconds"),
        ({"jwks": "missing.json"}, r"jwt_bearer\.jwks: cannot read"),
        ({"jwks": 5}, r"jwt_bearer\.jwks must be a path"),
    ],
)
def test_bad_settings_name_the_key(jwks_file: Path, changes: dict[str, Any], named: str) -> None:
    settings = {k: v for k, v in {**GOOD, **changes}.items() if v is not DROP}
    with pytest.raises(ConfigError, match=named) as info:
        jwt_bearer.create(settings, jwks_file.parent)
    assert "\n" not in str(info.value)


def test_hs256_only_when_listed(tmp_path: Path) -> None:
    secret = base64.urlsafe_b64encode(b"s" * 32).rstrip(b"=").decode()
    jwk = {"kty": "oct", "k": secret, "kid": "shared"}
    (tmp_path / "jwks.json").write_text(json.dumps({"keys": [jwk]}), encoding="utf-8")
    with pytest.raises(ConfigError, match="no key usable"):
        jwt_bearer.create(GOOD, tmp_path)
    plugin = jwt_bearer.create({**GOOD, "algorithms": ["HS256"]}, tmp_path)
    token = jwt.encode(claims(), b"s" * 32, algorithm="HS256", headers={"kid": "shared"})
    assert plugin.authenticate(bearer(token)) is not None


@pytest.mark.parametrize(
    ("content", "named"),
    [
        ("{not json", r"is not JSON"),
        ("[]", r"must be a JWK Set"),
        ('{"keys": []}', r"must be a JWK Set"),
        ('{"keys": [1]}', r"keys\[0\] is not an object"),
        ('{"keys": [{"kty": "EC", "crv": "P-256", "x": "AA", "y": "AA"}]}', r"has no 'kid'"),
        (
            '{"keys": [{"kty": "EC", "crv": "P-256", "x": "AA", "y": "AA", "kid": "k"}]}',
            r"key 'k' is not a valid ES256 key",
        ),
    ],
)
def test_bad_jwks_fails_loudly(tmp_path: Path, content: str, named: str) -> None:
    (tmp_path / "jwks.json").write_text(content, encoding="utf-8")
    with pytest.raises(ConfigError, match=named) as info:
        jwt_bearer.create(GOOD, tmp_path)
    assert "\n" not in str(info.value)


def test_jwks_refuses_duplicates_and_private_keys(
    tmp_path: Path, signing_key: ec.EllipticCurvePrivateKey
) -> None:
    path = tmp_path / "jwks.json"
    path.write_text(json.dumps({"keys": [public_jwk(signing_key)] * 2}), encoding="utf-8")
    with pytest.raises(ConfigError, match="appears twice"):
        jwt_bearer.create(GOOD, tmp_path)
    private = json.loads(ECAlgorithm.to_jwk(signing_key))
    private["kid"] = KID
    path.write_text(json.dumps({"keys": [private]}), encoding="utf-8")
    with pytest.raises(ConfigError, match="private key material"):
        jwt_bearer.create(GOOD, tmp_path)


def test_jwks_is_read_once(
    jwks_file: Path, plugin: jwt_bearer.JwtBearer, signing_key: ec.EllipticCurvePrivateKey
) -> None:
    jwks_file.unlink()
    assert plugin.authenticate(bearer(sign(signing_key))) is not None


async def test_registered_with_the_host(
    plugin: jwt_bearer.JwtBearer, signing_key: ec.EllipticCurvePrivateKey
) -> None:
    manager = new_manager()
    manager.register(plugin, name=jwt_bearer.NAME)
    ok = await authenticate(manager, bearer(sign(signing_key)))
    assert ok.caller is not None and ok.caller.identity == "alice"
    bad = await authenticate(manager, bearer(sign(signing_key, claims(aud="x"))))
    assert bad.caller is None and bad.message == "invalid bearer token"
    assert bad.challenges == ('Bearer realm="a2a", error="invalid_token"', 'Bearer realm="a2a"')
