"""The first-party API-key plugin: hashed key file, header authentication, skill restriction."""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path
from typing import Any

import pytest

from skillrack.host.config import ConfigError
from skillrack.host.plugins import new_manager
from skillrack.serve.security.authn import AuthenticationFailed, RequestCredentials, authenticate
from skillrack.serve.security.authz import AuthorizationRequest, Decision
from skillrack.serve.security.caller import Caller
from skillrack_plugins import api_keys
from skillrack_plugins.api_keys import hash_key

ALICE_KEY = "sk-alice-0123456789abcdef"
BOB_KEY = "sk-bob-fedcba9876543210"

KEY_FILE = f"""
[[key]]
sha256 = "{hash_key(ALICE_KEY)}"
identity = "alice"
tenant = "acme"
roles = ["operator"]
skills = ["evaluate_*", "describe_thing"]

[[key]]
sha256 = "{hash_key(BOB_KEY)}"
identity = "bob"
"""


@pytest.fixture
def key_file(tmp_path: Path) -> Path:
    path = tmp_path / "keys.toml"
    path.write_text(KEY_FILE, encoding="utf-8")
    return path


@pytest.fixture
def plugin(key_file: Path) -> api_keys.ApiKeys:
    return api_keys.create({"file": key_file.name}, key_file.parent)


def creds(headers: dict[str, str]) -> RequestCredentials:
    return RequestCredentials(headers=headers, client_host="192.0.2.7")


def invocation(caller: Caller, skill_id: str) -> AuthorizationRequest:
    return AuthorizationRequest(
        caller=caller, skill_id=skill_id, skill_version="1.0", plugin="p", authority={}
    )


def test_hash_key_is_sha256_hex() -> None:
    assert hash_key("abc") == hashlib.sha256(b"abc").hexdigest()
    assert len(hash_key("abc")) == 64


def test_valid_key_gives_caller(plugin: api_keys.ApiKeys) -> None:
    caller = plugin.authenticate(creds({"x-api-key": ALICE_KEY}))
    assert caller == Caller(
        identity="alice",
        tenant="acme",
        authenticated=True,
        attributes={"roles": ["operator"], "auth": "api_key"},
    )


def test_optional_fields_default(plugin: api_keys.ApiKeys) -> None:
    caller = plugin.authenticate(creds({"x-api-key": BOB_KEY}))
    assert caller is not None
    assert (caller.identity, caller.tenant) == ("bob", "")
    assert caller.attributes == {"roles": [], "auth": "api_key"}


def test_header_lookup_is_case_insensitive(plugin: api_keys.ApiKeys) -> None:
    caller = plugin.authenticate(creds({"X-Api-Key": ALICE_KEY}))
    assert caller is not None and caller.identity == "alice"


def test_absent_header_is_not_this_plugins_business(plugin: api_keys.ApiKeys) -> None:
    assert plugin.authenticate(creds({})) is None
    assert plugin.authenticate(creds({"authorization": "Bearer x"})) is None


def test_unknown_key_is_refused_and_not_logged(
    plugin: api_keys.ApiKeys, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    secret = "sk-unknown-should-never-appear"
    with pytest.raises(AuthenticationFailed) as info:
        plugin.authenticate(creds({"x-api-key": secret}))
    assert info.value.message == "invalid API key"
    assert info.value.challenge == 'ApiKey header="X-API-Key"'
    assert secret not in caplog.text
    assert hash_key(secret) not in caplog.text


def test_empty_key_is_refused(plugin: api_keys.ApiKeys) -> None:
    with pytest.raises(AuthenticationFailed):
        plugin.authenticate(creds({"x-api-key": ""}))


def test_key_file_stores_no_clear_key(key_file: Path) -> None:
    text = key_file.read_text(encoding="utf-8")
    assert ALICE_KEY not in text and BOB_KEY not in text
    assert hash_key(ALICE_KEY) in text


def test_card_and_challenge(plugin: api_keys.ApiKeys, key_file: Path) -> None:
    scheme = plugin.security_schemes()["apiKey"]["apiKeySecurityScheme"]
    assert scheme["location"] == "header" and scheme["name"] == "X-API-Key"
    assert scheme["description"]
    assert plugin.www_authenticate() == 'ApiKey header="X-API-Key"'
    custom = api_keys.create({"file": str(key_file), "header": "X-Token"}, Path("/nowhere"))
    assert custom.www_authenticate() == 'ApiKey header="X-Token"'
    assert custom.security_schemes()["apiKey"]["apiKeySecurityScheme"]["name"] == "X-Token"
    assert custom.authenticate(creds({"x-token": ALICE_KEY})) is not None
    assert custom.authenticate(creds({"x-api-key": ALICE_KEY})) is None


def test_skills_restriction(plugin: api_keys.ApiKeys) -> None:
    alice = plugin.authenticate(creds({"x-api-key": ALICE_KEY}))
    assert alice is not None
    assert plugin.authorize_invocation(invocation(alice, "evaluate_resource_condition")) is None
    assert plugin.authorize_invocation(invocation(alice, "describe_thing")) is None
    denied = plugin.authorize_invocation(invocation(alice, "reboot_device"))
    assert isinstance(denied, Decision) and not denied.allowed
    # a prefix is not a match: patterns are whole-name fnmatch patterns
    assert plugin.authorize_invocation(invocation(alice, "describe_thing_2")) is not None


def test_no_skills_means_no_opinion(plugin: api_keys.ApiKeys) -> None:
    bob = plugin.authenticate(creds({"x-api-key": BOB_KEY}))
    assert bob is not None
    assert plugin.authorize_invocation(invocation(bob, "reboot_device")) is None


def test_callers_of_other_plugins_are_not_restricted(plugin: api_keys.ApiKeys) -> None:
    by_jwt = Caller("alice", "acme", True, {"roles": [], "auth": "jwt"})
    assert plugin.authorize_invocation(invocation(by_jwt, "reboot_device")) is None
    anonymous = Caller("anonymous")
    assert plugin.authorize_invocation(invocation(anonymous, "reboot_device")) is None


def test_empty_skills_denies_everything(tmp_path: Path) -> None:
    (tmp_path / "k.toml").write_text(
        f'[[key]]\nsha256 = "{hash_key("k")}"\nidentity = "c"\nskills = []\n', encoding="utf-8"
    )
    plugin = api_keys.create({"file": "k.toml"}, tmp_path)
    caller = plugin.authenticate(creds({"x-api-key": "k"}))
    assert caller is not None
    decision = plugin.authorize_invocation(invocation(caller, "anything"))
    assert decision is not None and not decision.allowed


def test_env_source(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("SKILLRACK_TEST_KEYS", KEY_FILE)
    plugin = api_keys.create({"env": "SKILLRACK_TEST_KEYS"}, tmp_path)
    caller = plugin.authenticate(creds({"x-api-key": BOB_KEY}))
    assert caller is not None and caller.identity == "bob"


def test_file_and_env_are_merged(monkeypatch: pytest.MonkeyPatch, key_file: Path) -> None:
    monkeypatch.setenv(
        "SKILLRACK_TEST_KEYS", f'[[key]]\nsha256 = "{hash_key("carol")}"\nidentity = "carol"\n'
    )
    plugin = api_keys.create({"file": str(key_file), "env": "SKILLRACK_TEST_KEYS"}, Path("/"))
    for key, who in ((ALICE_KEY, "alice"), ("carol", "carol")):
        caller = plugin.authenticate(creds({"x-api-key": key}))
        assert caller is not None and caller.identity == who


def test_unset_env_is_a_config_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("SKILLRACK_TEST_KEYS", raising=False)
    with pytest.raises(ConfigError, match=r"api_keys\.env"):
        api_keys.create({"env": "SKILLRACK_TEST_KEYS"}, tmp_path)


def entry(**fields: Any) -> str:
    base: dict[str, Any] = {"sha256": hash_key("x"), "identity": "a"}
    base.update(fields)
    lines = []
    for name, value in base.items():
        if isinstance(value, list):
            rendered = "[" + ", ".join(f'"{v}"' if isinstance(v, str) else str(v) for v in value)
            lines.append(f"{name} = {rendered}]")
        elif isinstance(value, str):
            lines.append(f'{name} = "{value}"')
        else:
            lines.append(f"{name} = {value}")
    return "[[key]]\n" + "\n".join(lines) + "\n"


@pytest.mark.parametrize(
    ("settings", "text", "named"),
    [
        ({}, None, r"api_keys\.file or api_keys\.env"),
        ({"file": "k.toml", "bogus": 1}, None, r'\[plugins\.api_keys\]: unknown key "bogus"'),
        ({"file": "k.toml", "header": "Bad Header"}, None, r"api_keys\.header"),
        ({"file": "k.toml", "header": 3}, None, r"api_keys\.header"),
        ({"file": 5}, None, r"api_keys\.file"),
        ({"file": "missing.toml"}, None, r"api_keys\.file: cannot read"),
        ({"env": ""}, None, r"api_keys\.env"),
        ({"file": "k.toml"}, "this is = = not toml", r"api_keys\.file .*not valid TOML"),
        ({"file": "k.toml"}, "", r"no \[\[key\]\]"),
        ({"file": "k.toml"}, "[other]\na = 1\n", r'k\.toml\): unknown key "other"; known: key$'),
        ({"file": "k.toml"}, entry(sha256="ABC"), r"key\[0\]\.sha256"),
        ({"file": "k.toml"}, entry(sha256=hash_key("x").upper()), r"key\[0\]\.sha256"),
        ({"file": "k.toml"}, entry(identity=""), r"key\[0\]\.identity"),
        ({"file": "k.toml"}, entry(tenant=3), r"key\[0\]\.tenant"),
        ({"file": "k.toml"}, entry(roles="admin"), r"key\[0\]\.roles"),
        ({"file": "k.toml"}, entry(skills=[1]), r"key\[0\]\.skills"),
        ({"file": "k.toml"}, entry(key="sk-clear"), r'key\[0\]: unknown key "key"; known: '),
        ({"file": "k.toml"}, entry() + entry(identity="b"), r"listed twice"),
        (
            {"file": "k.toml"},
            entry(skills=["a"]) + entry(sha256=hash_key("y"), skills=["b"]),
            r"identity 'a'.*same skills",
        ),
    ],
)
def test_bad_settings_name_the_key(
    tmp_path: Path, settings: dict[str, Any], text: str | None, named: str
) -> None:
    if text is not None:
        (tmp_path / "k.toml").write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError, match=named) as info:
        api_keys.create(settings, tmp_path)
    assert "\n" not in str(info.value)
    assert "sk-clear" not in str(info.value)


def test_rotation_keys_may_share_an_identity(tmp_path: Path) -> None:
    text = entry(skills=["a", "b"]) + entry(sha256=hash_key("y"), skills=["b", "a"])
    (tmp_path / "k.toml").write_text(text, encoding="utf-8")
    plugin = api_keys.create({"file": "k.toml"}, tmp_path)
    for key in ("x", "y"):
        caller = plugin.authenticate(creds({"x-api-key": key}))
        assert caller is not None and caller.identity == "a"


async def test_registered_with_the_host(plugin: api_keys.ApiKeys) -> None:
    manager = new_manager()
    manager.register(plugin, name=api_keys.NAME)
    ok = await authenticate(manager, creds({"x-api-key": ALICE_KEY}))
    assert ok.caller is not None and ok.caller.identity == "alice"
    refused = await authenticate(manager, creds({"x-api-key": "nope"}))
    assert refused.caller is None and refused.message == "invalid API key"
    assert refused.challenges == ('ApiKey header="X-API-Key"',)
    missing = await authenticate(manager, creds({}))
    assert missing.caller is None and missing.message == "credentials are required"
