"""Signed Agent Cards (A2A 1.0 section 8.4): signing, the JWKS route, and the pinning client."""

from __future__ import annotations

import base64
import copy
import hashlib
import hmac
import json
import logging
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import jwt
import pytest
from a2a.types import AgentCard
from a2a.utils.signing import create_signature_verifier
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519
from google.protobuf import json_format
from helpers.agent_harness import running_agent
from helpers.signed_agent import (
    AUTH,
    DESCRIPTION,
    SignedAgent,
    private_key,
    registry_for,
    signed_agent,
    write_json,
    write_pem,
)

from skillrack.client.skill_client import SkillClient
from skillrack.errors import ClientCode, SkillCallError
from skillrack.host.config import Config, ConfigError, SigningSettings, load_config
from skillrack.protocol.signing import (
    JWKS_PATH,
    PRIVATE_MEMBERS,
    CardKeys,
    CardSignatureError,
    CardSigner,
    canonical_card,
    verify_card_signature,
)
from skillrack.serve.bindings.card import CARD_PATH, CardEndpoint, build_card, load_card_signer

SKILL = "evaluate_resource_condition"
ARGS = {
    "resource_id": "network-resource-123",
    "condition": {"metric": "utilization", "operator": "gte", "threshold": 80, "unit": "percent"},
}


@pytest.fixture(scope="module")
def agent(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SignedAgent]:
    with signed_agent(tmp_path_factory.mktemp("signed")) as running:
        yield running


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SignedAgent]:
    with signed_agent(tmp_path_factory.mktemp("plain"), tamper=False) as running:
        yield running


@pytest.fixture
def signed(agent: SignedAgent) -> Iterator[SignedAgent]:
    agent.tamper.clear()
    yield agent
    agent.tamper.clear()


@pytest.fixture
async def pinned(signed: SignedAgent) -> AsyncIterator[SkillClient]:
    async with SkillClient(headers=AUTH, card_keys=signed.jwks) as client:
        yield client


def decode(segment: str) -> Any:
    return json.loads(base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4)))


async def refused(client: SkillClient, url: str) -> SkillCallError:
    with pytest.raises(SkillCallError) as info:
        await client.call(url, SKILL, ARGS)
    error = info.value
    assert error.code == ClientCode.CARD_SIGNATURE_INVALID and not error.remote
    assert error.task_id is None and error.state is None
    return error


# The signed card and its JWKS ---------------------------------------------------------------------


def test_card_carries_one_jws_signature_with_kid_and_jku(signed: SignedAgent) -> None:
    card = httpx.get(signed.url + CARD_PATH).json()
    [signature] = card["signatures"]
    assert set(signature) == {"protected", "signature"}  # no unprotected header: see signing.py
    header = decode(signature["protected"])
    assert header == {
        "alg": "ES256",
        "typ": "JOSE",
        "kid": "card-test-1",
        "jku": signed.url + JWKS_PATH,
    }
    assert len(base64.urlsafe_b64decode(signature["signature"] + "==")) == 64  # r || s, P-256
    verify_card_signature(card, signed.jwks)


def test_signature_covers_the_canonical_card_as_the_spec_builds_it(signed: SignedAgent) -> None:
    """JWS signing input = BASE64URL(protected) '.' BASE64URL(JCS(card - defaults - signatures))."""
    card = httpx.get(signed.url + CARD_PATH).json()
    [signature] = card["signatures"]
    payload = canonical_card(card)
    # The payload is RFC 8785 (sorted keys, no whitespace, UTF-8), without signatures...
    assert b"signatures" not in payload and b"\n" not in payload
    assert DESCRIPTION.encode("utf-8") in payload
    # ...and without default values: the served card shows "required": false, the payload not.
    assert card["capabilities"]["extensions"][0]["required"] is False
    assert b'"required"' not in payload
    # An independent check of the same bytes with PyJWT's compact JWS verification.
    token = ".".join(
        [
            signature["protected"],
            base64.urlsafe_b64encode(payload).rstrip(b"=").decode(),
            signature["signature"],
        ]
    )
    key = jwt.PyJWK(signed.jwks["keys"][0])
    assert jwt.api_jws.decode(token, key=key, algorithms=["ES256"]) == payload


def test_a2a_python_sdk_verifies_the_signed_card(
    signed: SignedAgent, caplog: pytest.LogCaptureFixture
) -> None:
    """a2a-sdk's own verifier (create_signature_verifier) accepts skillrack's signature."""
    body = httpx.get(signed.url + CARD_PATH).content
    card = json_format.Parse(body, AgentCard(), ignore_unknown_fields=True)
    key = jwt.PyJWK(signed.jwks["keys"][0])
    with caplog.at_level(logging.ERROR, logger="a2a"):  # it logs test skills without tags
        create_signature_verifier(lambda kid, jku: key, ["ES256"])(card)
        tampered = copy.deepcopy(card)
        tampered.description = "tampered"
        with pytest.raises(Exception, match="No valid signature"):
            create_signature_verifier(lambda kid, jku: key, ["ES256"])(tampered)


def test_jwks_route_is_public_and_serves_the_public_key_only(plain: SignedAgent) -> None:
    signed = plain
    # The agent authenticates every call (an API key) ...
    rpc = {"jsonrpc": "2.0", "id": "1", "method": "GetTask", "params": {"id": "x"}}
    assert httpx.post(signed.url + "/", json=rpc, headers={"A2A-Version": "1.0"}).status_code == 401
    # ... but the card and its keys are public, like the card.
    assert httpx.get(signed.url + CARD_PATH).status_code == 200
    response = httpx.get(signed.url + JWKS_PATH)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/jwk-set+json")
    jwks = response.json()
    [jwk] = jwks["keys"]
    assert not PRIVATE_MEMBERS & set(jwk)
    assert jwk == {**signed.jwks["keys"][0]}
    assert jwk["kid"] == "card-test-1" and jwk["alg"] == "ES256" and jwk["use"] == "sig"
    assert (
        jwk["kty"] == "EC"
        and jwk["crv"] == "P-256"
        and set(jwk)
        == {
            "kty",
            "crv",
            "x",
            "y",
            "kid",
            "alg",
            "use",
        }
    )
    # Cached like the card: built once, strong ETag, 304 on revalidation.
    etag = response.headers["etag"]
    assert "public" in response.headers["cache-control"]
    again = httpx.get(signed.url + JWKS_PATH, headers={"If-None-Match": etag})
    assert again.status_code == 304 and again.content == b""


def test_signed_card_bytes_are_built_once_and_revalidate(plain: SignedAgent) -> None:
    signed = plain
    first = httpx.get(signed.url + CARD_PATH)
    second = httpx.get(signed.url + CARD_PATH)
    assert first.content == second.content and first.headers["etag"] == second.headers["etag"]
    revalidated = httpx.get(
        signed.url + CARD_PATH, headers={"If-None-Match": first.headers["etag"]}
    )
    assert revalidated.status_code == 304


def test_signing_is_deterministic_across_builds(signed: SignedAgent) -> None:
    """Replicas (or a restart) with the same key publish byte-identical cards and ETags."""
    base_url = "https://agents.example.net/assurance"
    endpoints = [
        CardEndpoint.of(build_card(signed.registry, signed.config, base_url, signed.signer), 60)
        for _ in range(2)
    ]
    assert endpoints[0].body == endpoints[1].body and endpoints[0].etag == endpoints[1].etag
    card = json.loads(endpoints[0].body)
    assert decode(card["signatures"][0]["protected"])["jku"] == base_url + JWKS_PATH


def test_unsigned_agent_has_no_jwks_route(tmp_path: Path) -> None:
    config = Config(base_dir=tmp_path)
    with running_agent(registry_for(config), config) as url:
        assert "signatures" not in httpx.get(url + CARD_PATH).json()
        assert httpx.get(url + JWKS_PATH).status_code in (401, 404)


# The client with pinned keys ----------------------------------------------------------------------


async def test_pinned_client_accepts_the_signed_card_and_calls(
    pinned: SkillClient, signed: SignedAgent
) -> None:
    outcome = await pinned.call(signed.url, SKILL, ARGS)
    assert outcome.state == "TASK_STATE_COMPLETED"
    # Revalidation (304) keeps the verified card; nothing is re-verified or refused.
    again = await pinned.call(signed.url, SKILL, ARGS)
    assert again.state == "TASK_STATE_COMPLETED"


async def test_pinned_keys_from_a_jwks_file_fetched_from_the_agent(
    signed: SignedAgent, tmp_path: Path
) -> None:
    path = write_json(tmp_path / "pinned.json", httpx.get(signed.url + JWKS_PATH).json())
    async with SkillClient(headers=AUTH, card_keys=path) as client:
        assert (await client.call(signed.url, SKILL, ARGS)).state == "TASK_STATE_COMPLETED"
    async with SkillClient(headers=AUTH, card_keys=str(path)) as client:
        await client.card(signed.url)


def _edit_description(card: Any) -> Any:
    card["description"] = "A different agent"
    return card


def _edit_digest(card: Any) -> Any:
    binding = card["capabilities"]["extensions"][0]["params"]["skills"][0]
    binding["interface_digest"] = "sha256:" + "0" * 64
    return card


def _add_skill(card: Any) -> Any:
    card["skills"].append({"id": "exfiltrate", "name": "x", "description": "x", "tags": ["x"]})
    return card


def _edit_url(card: Any) -> Any:
    card["supportedInterfaces"][0]["url"] = "http://attacker.example/"
    return card


def _flip_signature(card: Any) -> Any:
    sig = card["signatures"][0]["signature"]
    card["signatures"][0]["signature"] = ("A" if sig[0] != "A" else "B") + sig[1:]
    return card


def _swap_header_kid(card: Any) -> Any:
    header = decode(card["signatures"][0]["protected"])
    header["kid"] = "someone-else"
    encoded = json.dumps(header, separators=(",", ":")).encode()
    card["signatures"][0]["protected"] = base64.urlsafe_b64encode(encoded).rstrip(b"=").decode()
    return card


@pytest.mark.parametrize(
    "edit",
    [_edit_description, _edit_digest, _add_skill, _edit_url, _flip_signature, _swap_header_kid],
)
async def test_tampered_card_is_refused_before_anything_is_sent(
    pinned: SkillClient, signed: SignedAgent, edit: Any
) -> None:
    signed.tamper.card = edit
    error = await refused(pinned, signed.url)
    assert "refused" in error.message
    assert signed.tamper.sent == []


async def test_tampered_card_passes_without_pinned_keys(signed: SignedAgent) -> None:
    """Pinning is what makes the signature matter (the client is unchanged otherwise)."""
    signed.tamper.card = _edit_description
    async with SkillClient(headers=AUTH) as client:
        assert (await client.card(signed.url))["description"] == "A different agent"


async def test_signatures_removed_is_refused(pinned: SkillClient, signed: SignedAgent) -> None:
    signed.tamper.card = lambda card: {k: v for k, v in card.items() if k != "signatures"}
    error = await refused(pinned, signed.url)
    assert "not signed" in error.message and signed.tamper.sent == []


async def test_unsigned_agent_is_refused_when_keys_are_pinned(
    signed: SignedAgent, tmp_path: Path
) -> None:
    config = Config(base_dir=tmp_path)
    with running_agent(registry_for(config), config) as url:
        async with SkillClient(card_keys=signed.jwks) as client:
            error = await refused(client, url)
        assert "not signed" in error.message
        async with SkillClient() as client:  # unpinned: an unsigned card is accepted
            assert (await client.call(url, SKILL, ARGS)).state == "TASK_STATE_COMPLETED"


@pytest.mark.parametrize("same_kid", [True, False])
async def test_card_signed_by_another_key_is_refused(signed: SignedAgent, same_kid: bool) -> None:
    other = CardSigner.of(private_key("ec"), "card-test-1" if same_kid else "other-key")
    async with SkillClient(headers=AUTH, card_keys=other.jwks()) as client:
        error = await refused(client, signed.url)
    assert ("does not verify" if same_kid else "no pinned key") in error.message
    assert signed.tamper.sent == []


async def test_any_pinned_key_may_have_signed(signed: SignedAgent) -> None:
    """Rotation: a pinned set with the old and the new key accepts either."""
    other = CardSigner.of(private_key("ec"), "next-key")
    both = {"keys": [other.jwk(), *signed.jwks["keys"]]}
    async with SkillClient(headers=AUTH, card_keys=both) as client:
        await client.card(signed.url)


def test_card_signature_invalid_is_a_documented_client_code() -> None:
    assert ClientCode.CARD_SIGNATURE_INVALID == "card_signature_invalid"
    assert ClientCode("card_signature_invalid") is ClientCode.CARD_SIGNATURE_INVALID


# verify_card_signature on its own -------------------------------------------------------------


@pytest.fixture(scope="module")
def card_and_signer(agent: SignedAgent) -> tuple[dict[str, Any], CardSigner]:
    card = build_card(agent.registry, agent.config, "http://agent.example", agent.signer)
    return json.loads(CardEndpoint.of(card, 60).body), agent.signer


@pytest.mark.parametrize("kind", ["ec", "ec384", "rsa"])
def test_each_key_type_signs_and_verifies(agent: SignedAgent, kind: str) -> None:
    signer = CardSigner.of(private_key(kind))
    card = build_card(agent.registry, agent.config, "http://agent.example", signer)
    body = CardEndpoint.of(card, 60).body
    verify_card_signature(body, signer.jwks())  # bytes
    verify_card_signature(body.decode(), signer.jwks())  # text
    verify_card_signature(card, signer.jwks())  # the AgentCard message
    header = decode(json.loads(body)["signatures"][0]["protected"])
    assert header["alg"] == {"ec": "ES256", "ec384": "ES384", "rsa": "RS256"}[kind]
    assert header["kid"] == signer.jwk()["kid"]  # default kid: the RFC 7638 thumbprint
    with pytest.raises(CardSignatureError):
        verify_card_signature(_edit_description(json.loads(body)), signer.jwks())


def test_unknown_fields_and_key_order_do_not_matter(
    card_and_signer: tuple[dict[str, Any], CardSigner],
) -> None:
    card, signer = card_and_signer
    reordered = dict(reversed(list(card.items())))
    verify_card_signature({**reordered, "x-unknown-field": 1}, signer.jwks())


def test_thumbprint_matches_rfc_7638_example() -> None:
    from skillrack.protocol.signing import thumbprint

    jwk = {
        "kty": "RSA",
        "n": "0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSo"
        "c_BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0"
        "_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhA"
        "I4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw",
        "e": "AQAB",
        "alg": "RS256",
        "kid": "2011-04-29",
    }
    assert thumbprint(jwk) == "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs"


def test_symmetric_and_none_algorithms_are_refused(
    card_and_signer: tuple[dict[str, Any], CardSigner],
) -> None:
    """Algorithm confusion: an HMAC "signature" keyed with the public key must not pass."""
    card, signer = card_and_signer
    public_pem = signer.private_key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    for alg in ("HS256", "none"):
        header = {"alg": alg, "typ": "JOSE", "kid": signer.kid}
        protected = base64.urlsafe_b64encode(json.dumps(header).encode()).rstrip(b"=").decode()
        payload = base64.urlsafe_b64encode(canonical_card(card)).rstrip(b"=").decode()
        mac = hmac.new(public_pem, f"{protected}.{payload}".encode(), hashlib.sha256).digest()
        forged = {
            **card,
            "signatures": [
                {
                    "protected": protected,
                    "signature": base64.urlsafe_b64encode(mac).rstrip(b"=").decode()
                    if alg != "none"
                    else "",
                }
            ],
        }
        with pytest.raises(CardSignatureError, match="not accepted"):
            verify_card_signature(forged, signer.jwks())


def test_one_valid_signature_among_several_suffices(
    card_and_signer: tuple[dict[str, Any], CardSigner],
) -> None:
    card, signer = card_and_signer
    bogus = {"protected": "e30", "signature": "AAAA"}
    verify_card_signature({**card, "signatures": [bogus, *card["signatures"]]}, signer.jwks())
    with pytest.raises(CardSignatureError, match=r"signature 0: .*signature 1: "):
        verify_card_signature({**card, "signatures": [bogus, bogus]}, signer.jwks())


@pytest.mark.parametrize(
    "jwks",
    [
        {},
        {"keys": []},
        {"keys": [{"kty": "oct", "k": "c2VjcmV0"}]},
        {"keys": [{"kty": "EC", "crv": "P-256"}]},
        "no-such-file.json",
    ],
)
def test_bad_pinned_key_sets_are_refused(jwks: Any) -> None:
    with pytest.raises(CardSignatureError):
        CardKeys.load(jwks)


def test_private_members_cannot_be_pinned() -> None:
    key = private_key("ec")
    private_jwk = json.loads(jwt.algorithms.ECAlgorithm.to_jwk(key))
    assert "d" in private_jwk
    with pytest.raises(CardSignatureError, match="private members"):
        SkillClient(card_keys={"keys": [private_jwk]})


def test_canonical_form_follows_the_reference_sdks() -> None:
    """The spec's example of section 8.4.1, canonicalized the way a2a-sdk and @a2a-js/sdk do.

    The example keeps REQUIRED fields that are empty ("description": "",
    "skills": []); both SDKs remove every empty string, list and object, so a
    signature that keeps them would not verify with either.  skillrack follows
    the SDKs; proto defaults ("extensions": []) and unset optionals go in both.
    """
    example = {
        "name": "Example Agent",
        "description": "",
        "capabilities": {"streaming": False, "pushNotifications": False, "extensions": []},
        "skills": [],
    }
    assert canonical_card(example) == (
        b'{"capabilities":{"pushNotifications":false,"streaming":false},"name":"Example Agent"}'
    )


# Configuration ----------------------------------------------------------------------------------


def test_signing_table_is_read_and_the_key_resolved_against_the_config(tmp_path: Path) -> None:
    (tmp_path / "keys").mkdir()
    write_pem(tmp_path / "keys" / "card.pem", private_key("ec"))
    path = tmp_path / "skillrack.toml"
    path.write_text('[signing]\nkey = "keys/card.pem"\nkid = "card-2025"\n')
    config = load_config(path)
    assert config.signing == SigningSettings(key="keys/card.pem", kid="card-2025")
    assert config.base_dir == tmp_path.resolve()
    signer = load_card_signer(config.signing, config.base_dir)
    assert signer.kid == "card-2025" and signer.alg == "ES256"
    assert load_config(None).signing is None


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ('key = "k.pem"\nalgorithm = "ES256"', "unknown key"),
        ("key = 3", "signing.key"),
        ('kid = "x"', "signing.key"),
        ('key = "k.pem"\nkid = ""', "signing.kid"),
    ],
)
def test_bad_signing_tables_are_refused(tmp_path: Path, table: str, message: str) -> None:
    path = tmp_path / "skillrack.toml"
    path.write_text(f"[signing]\n{table}\n")
    with pytest.raises(ConfigError, match=message):
        load_config(path)


def test_unusable_signing_keys_are_configuration_errors(tmp_path: Path) -> None:
    encrypted = private_key("ec").private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.BestAvailableEncryption(b"secret"),
    )
    (tmp_path / "encrypted.pem").write_bytes(encrypted)
    write_pem(tmp_path / "ed25519.pem", ed25519.Ed25519PrivateKey.generate())
    write_pem(tmp_path / "k1.pem", ec.generate_private_key(ec.SECP256K1()))
    (tmp_path / "garbage.pem").write_text("not a key")
    cases = {
        "missing.pem": "cannot read",
        "encrypted.pem": "encrypted",
        "ed25519.pem": "EC .* or RSA key is required",
        "k1.pem": "P-256",
        "garbage.pem": "not a PEM private key",
    }
    for name, message in cases.items():
        with pytest.raises(ConfigError, match=message):
            load_card_signer(SigningSettings(key=name), tmp_path)
