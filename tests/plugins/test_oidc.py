"""The OpenID Connect plugin against a real issuer on 127.0.0.1.

Keys, rotation, an outage, introspection, and what a token may not make it fetch.
"""

from __future__ import annotations

import asyncio
import os
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from helpers.hostile_agents import CredentialCounter, serving
from helpers.oidc_issuer import AUDIENCE, CERTS, DISCOVERY, INTROSPECT, Issuer, running_issuer
from starlette.applications import Starlette

from skillrack import AuthenticationFailed, Caller, ConfigError, RequestCredentials
from skillrack_plugins import oidc

#: Seconds the issuer is down in the outage test (issue 20 says 5; shorter keeps tox fast).
OUTAGE_SECONDS = float(os.environ.get("SKILLRACK_TEST_OIDC_OUTAGE", "1.5"))
#: Seconds between fetches the plugin allows itself (min_refresh_seconds).
INTERVAL = 0.4


@pytest.fixture
def issuer() -> Iterator[Issuer]:
    with running_issuer(max_age=1) as running:
        running.client("introspector", "introspector-secret", ())
        yield running


def settings(issuer: Issuer, /, **more: Any) -> dict[str, Any]:
    base = {
        "issuer": issuer.issuer,
        "audience": AUDIENCE,
        "allow_loopback": True,
        "min_refresh_seconds": INTERVAL,
        "roles_claims": ["realm_access.roles"],
        "roles": {"network-operator": ["operator"], "scope:network:write": ["writer"]},
        "tenants": {"acme-corp": "acme"},
    }
    return {**base, **more}


def plugin_for(issuer: Issuer, tmp_path: Path | None = None, /, **more: Any) -> oidc.OidcBearer:
    return oidc.create(settings(issuer, **more), tmp_path or Path.cwd())


def authenticate(plugin: oidc.OidcBearer, token: str) -> Caller | None:
    request = RequestCredentials(headers={"authorization": f"Bearer {token}"}, client_host="h")
    return asyncio.run(plugin.authenticate(request))


def refused(plugin: oidc.OidcBearer, token: str) -> bool:
    try:
        authenticate(plugin, token)
    except AuthenticationFailed as exc:
        assert exc.message == "invalid bearer token"  # never which check failed
        return True
    return False


def test_a_token_of_the_issuer_becomes_a_mapped_caller(issuer: Issuer) -> None:
    plugin = plugin_for(issuer)
    caller = authenticate(plugin, issuer.token(scope="openid network:read network:write"))
    assert caller is not None and caller.authenticated
    assert caller.identity == "svc-assurance"
    assert caller.tenant == "acme"  # [plugins.oidc.tenants]
    assert caller.attributes["roles"] == ["operator", "writer"]  # role and scope:, mapped
    assert caller.attributes["client_id"] == "assurance-client"
    assert caller.schemes == {"oidc": ("openid", "network:read", "network:write")}
    assert issuer.hits[DISCOVERY] == 1 and issuer.hits[CERTS] == 1
    authenticate(plugin, issuer.token())
    assert issuer.hits[CERTS] == 1  # cached
    assert refused(plugin, "")
    request = RequestCredentials(headers={"x-api-key": "k"})
    assert asyncio.run(plugin.authenticate(request)) is None  # not this plugin's credential


@pytest.mark.parametrize(
    "claims",
    [
        {"aud": "another-agent"},
        {"iss": "http://127.0.0.1:1/realms/test"},
        {"exp": int(time.time()) - 120},
        {"nbf": int(time.time()) + 600},
        {"exp": None},
        {"tenant": "unmapped-corp"},
        {"sub": None},
    ],
    ids=["aud", "iss", "exp", "nbf", "no-exp", "unmapped-tenant", "no-sub"],
)
def test_claims_are_checked(issuer: Issuer, claims: dict[str, Any]) -> None:
    assert refused(plugin_for(issuer), issuer.token(**claims))


def test_only_allowed_algorithms_and_the_issuers_keys(issuer: Issuer) -> None:
    plugin = plugin_for(issuer, algorithms=["ES256"])
    rsa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    other = jwt.encode(
        issuer.claims(), rsa_key, "RS256", headers={"kid": issuer.current, "typ": "at+jwt"}
    )
    assert refused(plugin, other)  # RS256 is not allowed
    forged = jwt.encode(
        issuer.claims(),
        ec.generate_private_key(ec.SECP256R1()),
        "ES256",
        headers={"kid": issuer.current, "typ": "at+jwt"},
    )
    assert refused(plugin, forged)  # right kid, wrong key
    assert refused(plugin, "not-a-jwt-and-no-introspection")


def test_nothing_is_fetched_because_a_token_says_so(issuer: Issuer) -> None:
    """jku, x5u, jwk and an unverified iss name an attacker's server: it is never asked."""
    attacker_key = ec.generate_private_key(ec.SECP256R1())
    counter = CredentialCounter(Starlette())
    with serving(counter) as attacker:
        headers = {
            "jku": attacker + "/jwks.json",
            "x5u": attacker + "/cert.pem",
            "jwk": {**jwt.algorithms.ECAlgorithm.to_jwk(attacker_key.public_key(), as_dict=True)},
        }
        token = jwt.encode(
            issuer.claims(iss=attacker + "/realms/test"),
            attacker_key,
            "ES256",
            headers={"kid": "attacker-key", "typ": "at+jwt", **headers},
        )
        plugin = plugin_for(issuer)
        assert refused(plugin, token)
        assert counter.requests == 0
        assert issuer.hits[CERTS] >= 1  # only the configured issuer was asked


def test_key_rotation_and_unknown_kids_are_fetched_at_most_once_per_interval(
    issuer: Issuer,
) -> None:
    plugin = plugin_for(issuer, default_cache_seconds=300)
    issuer.max_age = 300  # the set stays fresh: only an unknown kid makes a fetch
    assert authenticate(plugin, issuer.token()) is not None
    assert issuer.hits[CERTS] == 1
    time.sleep(INTERVAL)  # a rotation comes later than min_refresh_seconds after a fetch
    issuer.rotate(keep_old=False)  # mid-test: the old key is withdrawn
    assert authenticate(plugin, issuer.token()) is not None  # new kid: fetched once
    assert issuer.hits[CERTS] == 2
    for n in range(5):  # made-up kids in a burst: no fetch within the interval
        assert refused(plugin, issuer.token(headers={"kid": f"made-up-{n}"}))
    assert issuer.hits[CERTS] == 2
    time.sleep(INTERVAL * 1.5)
    assert refused(plugin, issuer.token(headers={"kid": "made-up-late"}))
    assert issuer.hits[CERTS] == 3  # one more, after the interval


def test_the_cache_serves_while_the_issuer_is_down(issuer: Issuer) -> None:
    """max-age=1: the set goes stale during the outage, and is served from the cache."""
    plugin = plugin_for(issuer, stale_seconds=OUTAGE_SECONDS + 30)
    token = issuer.token()
    assert authenticate(plugin, token) is not None
    fetched = issuer.hits[CERTS]
    with issuer.outage():
        deadline = time.monotonic() + OUTAGE_SECONDS
        while time.monotonic() < deadline:
            assert authenticate(plugin, token) is not None
            time.sleep(0.2)
        assert plugin.jwks is not None and plugin.jwks.fetches > fetched  # it did try
    time.sleep(INTERVAL)
    assert authenticate(plugin, token) is not None
    assert issuer.hits[CERTS] > fetched  # asked again once the issuer was back


def test_a_copy_stale_beyond_stale_seconds_is_not_used(issuer: Issuer) -> None:
    plugin = plugin_for(issuer, stale_seconds=0.5)
    token = issuer.token()
    assert authenticate(plugin, token) is not None
    with issuer.outage():
        time.sleep(1 + 0.5 + INTERVAL)  # max-age 1, then stale_seconds
        assert refused(plugin, token)


def test_opaque_tokens_are_introspected_with_a_bounded_cache(
    issuer: Issuer, tmp_path: Path
) -> None:
    (tmp_path / "secret").write_text("introspector-secret\n")
    plugin = plugin_for(
        issuer,
        tmp_path,
        introspection={
            "client_id": "introspector",
            "client_secret_file": "secret",
            "cache_entries": 2,
        },
    )
    first, second, third = (issuer.opaque_token(scope="network:write") for _ in range(3))
    caller = authenticate(plugin, first)
    assert caller is not None and caller.schemes == {"oidc": ("network:write",)}
    authenticate(plugin, first)
    assert issuer.hits[INTROSPECT] == 1  # cached
    assert refused(plugin, issuer.opaque_token(active=False))
    assert refused(plugin, "never-issued")
    assert refused(plugin, issuer.opaque_token(aud="another-agent"))
    authenticate(plugin, second)
    authenticate(plugin, third)
    asked = issuer.hits[INTROSPECT]
    authenticate(plugin, first)  # evicted (two entries at most): asked again
    assert issuer.hits[INTROSPECT] == asked + 1
    with pytest.raises(ConfigError, match="the client secret is empty"):
        plugin_for(
            issuer,
            introspection={"client_id": "introspector", "client_secret_env": "NO_SUCH_VAR_OIDC"},
        )


@pytest.mark.parametrize(
    ("more", "message"),
    [
        ({"issuer": "http://idp.example.net/realms/x"}, "must be an https URL"),
        ({"allow_loopback": False}, "must be an https URL"),
        ({"algorithms": ["HS256"]}, "needs a shared secret"),
        ({"algorithms": ["none"]}, "'none' is never accepted"),
        ({"colour": "blue"}, '[plugins.oidc]: unknown key "colour"'),
        ({"card_scheme": "oauth2"}, "oidc.token_url is required"),
        ({"token_url": "https://idp/t"}, 'only with card_scheme = "oauth2"'),
        ({"introspection": {"client_id": "c"}}, "one of client_secret_file"),
        ({"roles": {"a": "b"}}, "oidc.roles.a must be a list"),
        ({"console": {"scopes": ["openid"]}}, "oidc.console.client_id is required"),
        (
            {"console": {"client_id": "c", "secret": "x"}},
            '[plugins.oidc.console]: unknown key "secret"',
        ),
        ({"console": "skillrack-console"}, "oidc.console must be a table"),
    ],
)
def test_settings_are_checked(issuer: Issuer, more: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        plugin_for(issuer, **more)


def test_the_card_scheme(issuer: Issuer) -> None:
    schemes = plugin_for(issuer).security_schemes()
    assert schemes == {
        "oidc": {
            "openIdConnectSecurityScheme": {
                "openIdConnectUrl": issuer.issuer + DISCOVERY.removeprefix("/realms/test"),
                "description": f"Bearer tokens issued by {issuer.issuer}",
            }
        }
    }
    oauth2 = plugin_for(
        issuer,
        card_scheme="oauth2",
        token_url=issuer.base + "/t",
        scopes={"network:write": "change interfaces"},
    ).security_schemes()["oauth2"]["oauth2SecurityScheme"]
    assert oauth2["flows"] == {
        "clientCredentials": {
            "tokenUrl": issuer.base + "/t",
            "scopes": {"network:write": "change interfaces"},
        }
    }


@pytest.mark.parametrize(
    "override",
    [{"issuer": "https://idp.example.net/realms/test"}, {"jwks_uri": "http://127.0.0.1:1/certs"}],
    ids=["another-issuer", "jwks-on-another-origin"],
)
def test_a_discovery_document_is_trusted_only_for_its_own_issuer(
    issuer: Issuer, override: dict[str, Any]
) -> None:
    issuer.discovery_overrides = override
    assert refused(plugin_for(issuer), issuer.token())
    assert issuer.hits[CERTS] == 0  # no key set was fetched from where it pointed


def test_the_authorization_code_flow_on_the_card(issuer: Issuer) -> None:
    scheme = plugin_for(
        issuer,
        card_scheme="oauth2",
        flow="authorization_code",
        token_url="https://idp.example.net/token",
        authorization_url="https://idp.example.net/auth",
    ).security_schemes()["oauth2"]["oauth2SecurityScheme"]
    assert scheme["flows"] == {
        "authorizationCode": {
            "authorizationUrl": "https://idp.example.net/auth",
            "tokenUrl": "https://idp.example.net/token",
            "scopes": {},
            "pkceRequired": True,
        }
    }
    with pytest.raises(ConfigError, match="authorization_url is required"):
        plugin_for(issuer, card_scheme="oauth2", flow="authorization_code", token_url="https://i/t")
