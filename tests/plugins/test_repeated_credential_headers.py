"""The first-party authentication plugins refuse a credential header that came twice.

The authentication gate refuses such requests before plugins run (tested
against a real server in ``tests/serve/middleware/test_failed_auth_limit.py``); the
plugins refuse them too, from ``RequestCredentials.repeated``, so that a host
that builds credentials another way still never lets the last copy win.
"""

from __future__ import annotations

import json
from pathlib import Path

import jwt
import pluggy
import pytest
from cryptography.hazmat.primitives.asymmetric import ec

from skillrack.host.plugins import new_manager
from skillrack.serve.middleware.authentication import credential_headers
from skillrack.serve.security.authn import AuthenticationFailed, RequestCredentials
from skillrack_plugins import api_keys, jwt_bearer
from skillrack_plugins.api_keys import hash_key

KEY = "sk-ops-0123456789abcdef"


@pytest.fixture
def keys(tmp_path: Path) -> api_keys.ApiKeys:
    (tmp_path / "keys.toml").write_text(f'[[key]]\nsha256 = "{hash_key(KEY)}"\nidentity = "ops"\n')
    return api_keys.create({"file": "keys.toml", "header": "X-Token"}, tmp_path)


def test_api_keys_refuses_a_repeated_key_header(keys: api_keys.ApiKeys) -> None:
    once = RequestCredentials(headers={"x-token": KEY})
    assert keys.authenticate(once) is not None
    twice = RequestCredentials(headers={"x-token": KEY}, repeated=frozenset({"x-token"}))
    with pytest.raises(AuthenticationFailed, match="repeated API key header"):
        keys.authenticate(twice)
    other = RequestCredentials(headers={"x-token": KEY}, repeated=frozenset({"accept"}))
    assert keys.authenticate(other) is not None


def test_jwt_bearer_refuses_a_repeated_authorization(tmp_path: Path) -> None:
    key = ec.generate_private_key(ec.SECP256R1())
    jwk = json.loads(jwt.algorithms.ECAlgorithm.to_jwk(key.public_key()))
    (tmp_path / "jwks.json").write_text(json.dumps({"keys": [{**jwk, "kid": "k1"}]}))
    plugin = jwt_bearer.create(
        {"jwks": "jwks.json", "issuer": "https://idp", "audience": "a"}, tmp_path
    )
    token = jwt.encode(
        {"iss": "https://idp", "aud": "a", "sub": "ops", "exp": 2**31},
        key,
        algorithm="ES256",
        headers={"kid": "k1"},
    )
    headers = {"authorization": f"Bearer {token}"}
    assert plugin.authenticate(RequestCredentials(headers=headers)) is not None
    with pytest.raises(AuthenticationFailed):
        plugin.authenticate(
            RequestCredentials(headers=headers, repeated=frozenset({"authorization"}))
        )


def test_the_gate_knows_each_plugins_credential_header(keys: api_keys.ApiKeys) -> None:
    manager: pluggy.PluginManager = new_manager()
    assert credential_headers(manager) == {"authorization", "proxy-authorization"}
    manager.register(keys, name="api-keys")
    assert "x-token" in credential_headers(manager)
