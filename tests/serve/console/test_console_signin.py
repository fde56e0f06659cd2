"""Signing in to the console over HTTP (issue 28, item 4), against a real agent and issuer.

The agent takes API keys (the first-party ``api_keys`` plugin) and OpenID
Connect tokens (``oidc``, with ``[plugins.oidc.console]``) from the small
issuer in ``tests/helpers/oidc_issuer.py``, both served for real on
127.0.0.1.  httpx plays the browser here (cookies kept, redirects followed by
hand so that each hop can be checked); ``test_console_signin_browser.py``
does the same in Chromium.  What is checked: the session cookie's attributes
and contents, that a changed, expired or signed-out cookie lets nobody in,
that a wrong key is a 401 the failed-authentication limit counts, that only
operators get a session, the PKCE flow's checks, and that a CSRF token is
bound to its session by the server secret.
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import hashlib
import html
import json
import re
import time
import urllib.parse
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from helpers.agent_harness import running_agent
from helpers.agent_skills import TestSkills
from helpers.certificates import TestCA
from helpers.oidc_issuer import AUDIENCE, AUTHORIZE, TOKEN, Issuer, running_issuer
from helpers.postgres import fresh_database
from helpers.served_process import PLUGIN_MODULE, serving

from skillrack.host.config import Config, ConfigError, ServerSettings
from skillrack.host.plugins import load_plugins
from skillrack.host.registry import build_registry
from skillrack.host.startup import first_party_plugins
from skillrack.serve.console import CONSOLE_PATH
from skillrack.serve.console.csrf import COOKIE as CSRF_COOKIE
from skillrack.serve.console.csrf import FIELD
from skillrack.serve.console.session import COOKIE as SESSION
from skillrack.serve.console.signin import FLOW_COOKIE
from skillrack.testing.serve import free_port

OPERATOR_KEY = "signin-test-operator-key-TEST-ONLY"
OTHER_OPERATOR_KEY = "signin-test-second-operator-TEST-ONLY"
CALLER_KEY = "signin-test-caller-key-TEST-ONLY"
CONSOLE_CLIENT = "skillrack-console"
#: Failed authentications per minute per address before 429 (``[server] failed_auth_per_minute``).
FAILURES = 5


def _keys() -> str:
    entries = [
        (OPERATOR_KEY, "olga", ["operator"]),
        (OTHER_OPERATOR_KEY, "oscar", ["operator"]),
        (CALLER_KEY, "carl", []),
    ]
    return "".join(
        f'[[key]]\nsha256 = "{hashlib.sha256(key.encode()).hexdigest()}"\n'
        f'identity = "{who}"\ntenant = "acme"\nroles = {json.dumps(roles)}\n'
        for key, who, roles in entries
    )


@pytest.fixture(scope="module")
def issuer() -> Iterator[Issuer]:
    with running_issuer() as running:
        running.user("sso-olga", tenant="acme", realm_access={"roles": ["network-operator"]})
        running.user("sso-vera", tenant="acme", realm_access={"roles": ["viewer"]})
        yield running


def agent_config(base_dir: Path, issuer: Issuer, **server: Any) -> Config:
    (base_dir / "keys.toml").write_text(_keys(), encoding="utf-8")
    return Config(
        base_dir=base_dir,
        server=ServerSettings(**{"store": "memory", **server}),
        first_party={
            "api_keys": {"file": "keys.toml"},
            "oidc": {
                "issuer": issuer.issuer,
                "audience": AUDIENCE,
                "allow_loopback": True,
                "roles_claims": ["realm_access.roles"],
                "roles": {"network-operator": ["operator"]},
                "console": {"client_id": CONSOLE_CLIENT},
            },
        },
    )


@pytest.fixture(scope="module")
def agent(issuer: Issuer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with serve(issuer, tmp_path_factory.mktemp("signin")) as url:
        yield url


@contextlib.contextmanager
def serve(issuer: Issuer, base_dir: Path, **server: Any) -> Iterator[str]:
    """The agent on a port chosen first: the issuer must know the console's redirect URI."""
    port = free_port()
    issuer.public_client(CONSOLE_CLIENT, f"http://127.0.0.1:{port}{CONSOLE_PATH}/signin/callback")
    config = agent_config(base_dir, issuer, **server)
    plugins = [*first_party_plugins(config), ("tests", TestSkills())]
    registry = build_registry(load_plugins(use_entry_points=False, extra=plugins))
    with running_agent(registry, config, port=port) as url:
        yield url


def browser() -> httpx.Client:
    """A cookie-keeping client that does not follow redirects (each hop is checked)."""
    return httpx.Client(timeout=10, follow_redirects=False)


def csrf_of(html: str) -> str:
    tokens = set(re.findall(rf'name="{FIELD}" value="([^"]+)"', html))
    assert len(tokens) == 1, tokens
    return tokens.pop()


def sign_in_with_key(client: httpx.Client, url: str, key: str) -> httpx.Response:
    form = client.get(url + CONSOLE_PATH + "/signin")
    assert form.status_code == 200 and 'name="key"' in form.text
    return client.post(
        url + CONSOLE_PATH + "/signin",
        data={FIELD: csrf_of(form.text), "key": key, "next": CONSOLE_PATH + "/approvals"},
    )


def set_cookie(response: httpx.Response, name: str) -> str:
    [header] = [h for h in response.headers.get_list("set-cookie") if h.startswith(name + "=")]
    return header


def payload_of(cookie: str) -> Any:
    """What an itsdangerous cookie says, read without the secret (it is signed, not sealed)."""
    value = cookie.split(";")[0].split("=", 1)[1].strip('"')
    compressed = value.startswith(".")  # itsdangerous zlib-compresses when that is shorter
    body = value.lstrip(".").split(".")[0]
    raw = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
    return json.loads(zlib.decompress(raw) if compressed else raw)


def test_a_visit_without_credentials_goes_to_the_sign_in_page(agent: str) -> None:
    with browser() as client:
        sent = client.get(agent + CONSOLE_PATH + "/approvals")
        assert sent.status_code == 303
        assert sent.headers["location"] == f"{CONSOLE_PATH}/signin?next={CONSOLE_PATH}/approvals"
        page = client.get(agent + sent.headers["location"])
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert "Sign in with OpenID Connect" in page.text and "X-API-Key" in page.text
    assert "<script" not in page.text


def test_an_api_key_signs_in_with_a_short_lived_signed_cookie(agent: str) -> None:
    with browser() as client:
        signed = sign_in_with_key(client, agent, OPERATOR_KEY)
        assert signed.status_code == 200, signed.text
        assert f'content="0;url={CONSOLE_PATH}/approvals"' in signed.text
        cookie = set_cookie(signed, SESSION)
        attributes = {a.strip().split("=")[0].lower() for a in cookie.split(";")[1:]}
        assert {"httponly", "samesite", "path", "max-age"} <= attributes
        assert "SameSite=strict" in cookie and f"Path={CONSOLE_PATH}" in cookie
        assert "Max-Age=1800" in cookie and "secure" not in attributes  # plain HTTP here
        said = payload_of(cookie)
        assert said["id"] == "olga" and said["tenant"] == "acme" and said["roles"] == ["operator"]
        assert OPERATOR_KEY not in cookie and OPERATOR_KEY not in json.dumps(said)
        approvals = client.get(agent + CONSOLE_PATH + "/approvals")
        assert approvals.status_code == 200
        assert "Signed in as olga (tenant acme)" in approvals.text
        # The same cookie with its payload changed (another identity): not signed, not in.
        value = client.cookies[SESSION]
        forged = (
            base64.urlsafe_b64encode(
                json.dumps({**said, "id": "mallory"}, separators=(",", ":")).encode()
            )
            .decode()
            .rstrip("=")
        )
        client.cookies.set(SESSION, forged + value[value.index(".") :], path=CONSOLE_PATH)
        refused = client.get(agent + CONSOLE_PATH + "/approvals")
    assert refused.status_code == 303 and "/signin" in refused.headers["location"]


def test_signing_out_ends_the_session(agent: str) -> None:
    with browser() as client:
        assert sign_in_with_key(client, agent, OPERATOR_KEY).status_code == 200
        page = client.get(agent + CONSOLE_PATH)
        assert page.status_code == 200 and "Sign out" in page.text
        no_token = client.post(agent + CONSOLE_PATH + "/signout", data={FIELD: ""})
        assert no_token.status_code == 403  # a form like any other: CSRF-checked
        out = client.post(agent + CONSOLE_PATH + "/signout", data={FIELD: csrf_of(page.text)})
        assert out.status_code == 303
        assert out.headers["location"] == f"{CONSOLE_PATH}/signin?signed_out=1"
        assert "Max-Age=0" in set_cookie(out, SESSION)
        assert SESSION not in client.cookies
        assert client.get(agent + CONSOLE_PATH).status_code == 303
        assert "You are signed out" in client.get(agent + out.headers["location"]).text


@pytest.mark.parametrize("where", ["approvals file", "postgresql"])
def test_a_cookie_copied_before_signing_out_lets_nobody_in(tmp_path: Path, where: str) -> None:
    """Sign-out revokes the session in the store replicas share, until the cookie expires.

    Two replicas with one secret, sharing the approvals SQLite file (tasks in
    memory) or the task store's PostgreSQL database.  An issuer of its own:
    the module's knows one redirect URI, the module agent's.
    """
    (tmp_path / "console.secret").write_text("s" * 48, encoding="utf-8")
    with contextlib.ExitStack() as stack:
        store = "memory" if where != "postgresql" else stack.enter_context(fresh_database())
        check_signed_out_copies(tmp_path, console_secret_file="console.secret", store=store)


def check_signed_out_copies(base_dir: Path, **server: Any) -> None:
    with (
        running_issuer() as issuer,
        serve(issuer, base_dir, **server) as first,
        serve(issuer, base_dir, **server) as second,
        browser() as client,
        browser() as thief,
    ):
        assert sign_in_with_key(client, first, OPERATOR_KEY).status_code == 200
        copied = client.cookies[SESSION]
        thief.cookies.set(SESSION, copied, path=CONSOLE_PATH)
        assert thief.get(second + CONSOLE_PATH).status_code == 200  # the copy works meanwhile
        page = client.get(first + CONSOLE_PATH)
        out = client.post(first + CONSOLE_PATH + "/signout", data={FIELD: csrf_of(page.text)})
        assert out.status_code == 303
        for replica in (first, second):  # the sign-out is seen by the other replica too
            replayed = thief.get(replica + CONSOLE_PATH + "/approvals")
            assert replayed.status_code == 303
            assert replayed.headers["location"].startswith(CONSOLE_PATH + "/signin")
            login = thief.get(replica + CONSOLE_PATH + "/signin")
            assert "Signed in as" not in login.text and 'name="key"' in login.text
            posted = thief.post(replica + CONSOLE_PATH + "/signout", data={FIELD: "x"})
            assert posted.status_code == 403  # no session: its token is no longer valid
        # Signing in again makes a new session, which the old sign-out does not touch.
        assert sign_in_with_key(client, second, OPERATOR_KEY).status_code == 200
        assert client.cookies[SESSION] != copied
        assert client.get(first + CONSOLE_PATH).status_code == 200


def test_only_operators_are_signed_in(agent: str) -> None:
    with browser() as client:
        refused = sign_in_with_key(client, agent, CALLER_KEY)
        assert refused.status_code == 403
        assert "carl may not use the console" in refused.text and "operator" in refused.text
        assert SESSION not in refused.headers.get("set-cookie", "")
        assert client.get(agent + CONSOLE_PATH).status_code == 303


def test_csrf_tokens_are_bound_to_the_session_by_the_server_secret(agent: str) -> None:
    """The red team's case: an attacker's own cookie and token, planted, no Origin header."""
    with browser() as victim, browser() as attacker:
        assert sign_in_with_key(victim, agent, OPERATOR_KEY).status_code == 200
        # The attacker's own valid pair: a visitor cookie and the token a page gave him.
        form = attacker.get(agent + CONSOLE_PATH + "/signin")
        planted_cookie = attacker.cookies[CSRF_COOKIE]
        planted_token = csrf_of(form.text)
        # A second operator's own session token, too.
        assert sign_in_with_key(attacker, agent, OTHER_OPERATOR_KEY).status_code == 200
        other_token = csrf_of(attacker.get(agent + CONSOLE_PATH).text)
        victim.cookies.set(CSRF_COOKIE, planted_cookie, path=CONSOLE_PATH)
        for token in (planted_token, other_token, planted_cookie, "x" * 43):
            refused = victim.post(agent + CONSOLE_PATH + "/signout", data={FIELD: token})
            assert refused.status_code == 403 and "CSRF token does not match" in refused.text
        assert victim.get(agent + CONSOLE_PATH).status_code == 200  # still signed in
        own = csrf_of(victim.get(agent + CONSOLE_PATH).text)
        cross_site = victim.post(
            agent + CONSOLE_PATH + "/signout",
            data={FIELD: own},
            headers={"Sec-Fetch-Site": "cross-site"},
        )
        assert cross_site.status_code == 403
        assert victim.post(agent + CONSOLE_PATH + "/signout", data={FIELD: own}).status_code == 303


def test_openid_connect_signs_in_with_the_code_flow_and_pkce(agent: str, issuer: Issuer) -> None:
    with browser() as client:
        start = client.get(
            agent + CONSOLE_PATH + "/signin/oidc", params={"next": "/-/console/tasks"}
        )
        assert start.status_code == 303
        to_issuer = urllib.parse.urlsplit(start.headers["location"])
        assert f"{to_issuer.scheme}://{to_issuer.netloc}{to_issuer.path}" == issuer.base + AUTHORIZE
        asked = dict(urllib.parse.parse_qsl(to_issuer.query))
        assert asked["response_type"] == "code" and asked["client_id"] == CONSOLE_CLIENT
        assert asked["code_challenge_method"] == "S256" and len(asked["code_challenge"]) == 43
        assert asked["redirect_uri"] == agent + CONSOLE_PATH + "/signin/callback"
        assert asked["state"] and asked["nonce"] and asked["scope"] == "openid"
        flow = set_cookie(start, FLOW_COOKIE)
        assert "HttpOnly" in flow and "SameSite=lax" in flow and "Max-Age=600" in flow
        assert payload_of(flow)["state"] == asked["state"]  # the flow travels with the browser
        login = client.get(start.headers["location"])
        assert login.status_code == 200 and "Test issuer" in login.text
        back = client.post(issuer.base + AUTHORIZE, data={**asked, "username": "sso-olga"})
        assert back.status_code == 302
        callback = back.headers["location"]
        assert callback.startswith(agent + CONSOLE_PATH + "/signin/callback?code=")
        saved_flow = client.cookies[FLOW_COOKIE]
        tokens_before = issuer.hits[TOKEN]
        signed = client.get(callback)
        assert signed.status_code == 200, signed.text
        assert "Signed in as sso-olga (tenant acme)" in signed.text
        assert f'content="0;url={CONSOLE_PATH}/tasks"' in signed.text
        assert issuer.hits[TOKEN] == tokens_before + 1 and issuer.codes == {}  # code used
        said = payload_of(set_cookie(signed, SESSION))
        assert said["id"] == "sso-olga" and said["roles"] == ["operator"]
        assert said["method"] == "oidc" and "oidc" in said["schemes"]
        assert FLOW_COOKIE not in client.cookies  # the flow's cookie is gone
        assert client.get(agent + CONSOLE_PATH + "/tasks").status_code == 200
        # The same callback again: without the flow's cookie, refused before the issuer.
        assert client.get(callback).status_code == 400
        # With it (copied back): the issuer refuses a code used once.
        client.cookies.set(FLOW_COOKIE, saved_flow, path=CONSOLE_PATH + "/signin")
        again = client.get(callback)
        assert again.status_code == 502 and "HTTP 400" in again.text


def test_openid_connect_refuses_a_forged_state_and_a_non_operator(
    agent: str, issuer: Issuer
) -> None:
    with browser() as client:
        start = client.get(agent + CONSOLE_PATH + "/signin/oidc")
        asked = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(start.headers["location"]).query))
        back = client.post(issuer.base + AUTHORIZE, data={**asked, "username": "sso-olga"})
        code = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(back.headers["location"]).query))
        forged = client.get(
            agent + CONSOLE_PATH + "/signin/callback",
            params={"code": code["code"], "state": "attacker-chosen"},
        )
        assert forged.status_code == 400 and "not started here" in forged.text
        assert SESSION not in client.cookies
    with browser() as client:
        start = client.get(agent + CONSOLE_PATH + "/signin/oidc")
        asked = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(start.headers["location"]).query))
        back = client.post(issuer.base + AUTHORIZE, data={**asked, "username": "sso-vera"})
        refused = client.get(back.headers["location"])
        assert refused.status_code == 403 and "sso-vera may not use the console" in refused.text
        assert SESSION not in client.cookies


def oidc_sign_in(client: httpx.Client, agent: str, issuer: Issuer, user: str) -> httpx.Response:
    """The code flow up to the callback's answer: start, the issuer's form, back to the agent."""
    start = client.get(agent + CONSOLE_PATH + "/signin/oidc")
    asked = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(start.headers["location"]).query))
    back = client.post(issuer.base + AUTHORIZE, data={**asked, "username": user})
    assert back.status_code == 302
    return client.get(back.headers["location"])


@pytest.fixture
def faulty(issuer: Issuer) -> Iterator[Issuer]:
    """The module's issuer, its ID token fault set back to none after the test."""
    try:
        yield issuer
    finally:
        issuer.id_token_fault = ""


def test_openid_connect_sign_in_checks_the_id_token_and_its_nonce(
    agent: str, faulty: Issuer
) -> None:
    with browser() as client:
        good = oidc_sign_in(client, agent, faulty, "sso-olga")
        assert good.status_code == 200 and "Signed in as sso-olga" in good.text
    cases = {
        "missing": "gave no ID token",
        "wrong_nonce": "not for this sign-in (its nonce differs)",
        "no_nonce": "not for this sign-in (its nonce differs)",
        "other_audience": "not for this console",
        "other_azp": "issued to another client (azp)",
        "other_issuer": "ID token was refused (Invalid issuer)",
        "expired": "ID token has expired",
        "unknown_key": "has no key 'not-published'",
        "encryption_key": "has no key 'encryption-only'",  # its use is enc, not sig
        "unsigned": "signed with 'none'",
    }
    for fault, said in cases.items():
        faulty.id_token_fault = fault
        with browser() as client:
            refused = oidc_sign_in(client, agent, faulty, "sso-olga")
            assert refused.status_code == 502, (fault, refused.text)
            assert said in html.unescape(refused.text), (fault, refused.text)
            assert SESSION not in client.cookies and FLOW_COOKIE not in client.cookies
            assert client.get(agent + CONSOLE_PATH).status_code == 303


def test_openid_connect_sign_in_needs_the_openid_scope(issuer: Issuer, tmp_path: Path) -> None:
    from skillrack.serve.console.oidc_flow import OidcClient

    settings = {**agent_config(tmp_path, issuer).first_party["oidc"]}
    settings["console"] = {"client_id": CONSOLE_CLIENT, "scopes": ["profile"]}
    with pytest.raises(ConfigError) as raised:
        OidcClient.from_settings(settings, tmp_path)
    assert str(raised.value).startswith('plugins.oidc.console.scopes must include "openid"')


def test_a_session_ends_after_its_lifetime(issuer: Issuer, tmp_path: Path) -> None:
    with serve(issuer, tmp_path, console_session_seconds=2) as url, browser() as client:
        assert sign_in_with_key(client, url, OPERATOR_KEY).status_code == 200
        assert client.get(url + CONSOLE_PATH).status_code == 200
        time.sleep(3.2)  # itsdangerous counts whole seconds
        expired = client.get(url + CONSOLE_PATH)
    assert expired.status_code == 303 and "/signin" in expired.headers["location"]


def test_wrong_keys_are_401_and_counted_by_the_failed_authentication_limit(
    issuer: Issuer, tmp_path: Path
) -> None:
    with serve(issuer, tmp_path, failed_auth_per_minute=FAILURES) as url, browser() as client:
        for n in range(FAILURES):
            wrong = sign_in_with_key(client, url, f"guessed-key-{n}")
            assert wrong.status_code == 401 and "the key was not accepted" in wrong.text
        form = client.get(url + CONSOLE_PATH + "/signin")
        assert form.status_code == 429  # blocked: not even the form, nor the right key
        blocked = client.post(
            url + CONSOLE_PATH + "/signin", data={FIELD: "x", "key": OPERATOR_KEY}
        )
        assert blocked.status_code == 429


def test_replicas_sharing_the_secret_file_share_sessions(issuer: Issuer, tmp_path: Path) -> None:
    (tmp_path / "console.secret").write_text("s" * 48, encoding="utf-8")
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "console.secret").write_text("t" * 48, encoding="utf-8")
    with (
        serve(issuer, tmp_path, console_secret_file="console.secret") as first,
        serve(issuer, tmp_path, console_secret_file=str(tmp_path / "console.secret")) as second,
        serve(issuer, tmp_path / "other", console_secret_file="console.secret") as third,
        browser() as client,
    ):
        assert sign_in_with_key(client, first, OPERATOR_KEY).status_code == 200
        assert client.get(second + CONSOLE_PATH).status_code == 200  # same secret
        assert client.get(third + CONSOLE_PATH).status_code == 303  # another secret


def test_over_https_the_cookie_is_secure_and_certificates_need_no_sign_in(
    tmp_path: Path,
) -> None:
    """``Secure`` under TLS; a mapped client certificate (mTLS) opens the console as before."""
    ca = TestCA(tmp_path / "pki")
    server, operator_cert = ca.issue_server("127.0.0.1"), ca.issue_client("ops-cert")
    workdir = tmp_path / "agent"
    workdir.mkdir()
    (workdir / "keys.toml").write_text(_keys(), encoding="utf-8")
    (workdir / "policy.toml").write_text(
        '[[rule]]\neffect = "allow"\ntenants = ["acme"]\nskills = ["*"]\n', encoding="utf-8"
    )
    config = workdir / "skillrack.toml"
    config.write_text(
        f'[plugins]\nbuiltin = ["{PLUGIN_MODULE}"]\n\n[server]\nrate_per_minute = 1000000\n'
        f'ssl_client_ca = "{ca.bundle}"\nssl_client_auth = "optional"\n\n'
        '[plugins.policy]\nfile = "policy.toml"\n\n[plugins.api_keys]\nfile = "keys.toml"\n\n'
        '[[plugins.mtls.map]]\nsubject = "CN=ops-cert"\nidentity = "ops-cert"\n'
        'tenant = "acme"\nroles = ["operator"]\n',
        encoding="utf-8",
    )
    tls = ("--ssl-certfile", str(server.cert), "--ssl-keyfile", str(server.key))
    with serving(workdir, config=config, args=tls, tls=ca.client_context()) as agent:
        assert agent.url.startswith("https://")
        with httpx.Client(verify=ca.client_context(), timeout=10) as client:
            signed = sign_in_with_key(client, agent.url, OPERATOR_KEY)
            assert signed.status_code == 200, signed.text
            cookie = set_cookie(signed, SESSION)
            assert "Secure" in cookie and "HttpOnly" in cookie and "SameSite=strict" in cookie
        with httpx.Client(verify=ca.client_context(), timeout=10) as fresh:
            visitor = set_cookie(fresh.get(agent.url + CONSOLE_PATH + "/signin"), CSRF_COOKIE)
            assert "Secure" in visitor and "HttpOnly" in visitor
        with httpx.Client(verify=ca.client_context(operator_cert), timeout=10) as mtls:
            page = mtls.get(agent.url + CONSOLE_PATH + "/approvals", follow_redirects=False)
        assert page.status_code == 200 and "Approvals" in page.text  # no sign-in, no session
        assert "Signed in as" not in page.text and SESSION not in page.headers.get("set-cookie", "")


@pytest.mark.parametrize(
    "target",
    ["https://evil.example/", "//evil.example/x", "/-/console//evil.example", "/elsewhere",
     "/-/console/tasks\r\nRefresh: 0;url=https://evil.example", "/-/consolex"],
)  # fmt: skip
def test_after_signing_in_only_console_paths_are_followed(agent: str, target: str) -> None:
    with browser() as client:
        form = client.get(agent + CONSOLE_PATH + "/signin")
        signed = client.post(
            agent + CONSOLE_PATH + "/signin",
            data={FIELD: csrf_of(form.text), "key": OPERATOR_KEY, "next": target},
        )
        assert signed.status_code == 200
        assert f'content="0;url={CONSOLE_PATH}"' in signed.text and "evil" not in signed.text
        started = client.get(agent + CONSOLE_PATH + "/signin/oidc", params={"next": target})
        assert payload_of(set_cookie(started, FLOW_COOKIE))["next"] == CONSOLE_PATH


def test_a_bad_secret_file_is_one_line_naming_the_option(issuer: Issuer, tmp_path: Path) -> None:
    from skillrack.serve.server import build_server

    (tmp_path / "short.secret").write_text("too-short", encoding="utf-8")
    cases = [
        ({"console_secret_file": "short.secret"}, {}, "server.console_secret_file: ", "9 bytes"),
        ({"console_secret_file": "nope"}, {}, "server.console_secret_file: ", "cannot read"),
        ({}, {"client_secret_file": "nope"}, "plugins.oidc.console.client_secret_file: ", "read"),
    ]
    for server, console, prefix, said in cases:
        config = agent_config(tmp_path, issuer, **server)
        oidc = {**config.first_party["oidc"], "console": {"client_id": CONSOLE_CLIENT, **console}}
        config = dataclasses.replace(config, first_party={**config.first_party, "oidc": oidc})
        plugins = [*first_party_plugins(config), ("tests", TestSkills())]
        registry = build_registry(load_plugins(use_entry_points=False, extra=plugins))
        with pytest.raises(ConfigError) as raised:
            build_server(registry, config, "http://127.0.0.1:1")
        message = str(raised.value)
        assert message.startswith(prefix) and said in message and "\n" not in message


def test_sign_outs_are_kept_until_their_cookie_expires_then_pruned(tmp_path: Path) -> None:
    import asyncio
    import sqlite3

    from skillrack.serve.console.revocations import SIGNOUTS_TABLE, FileRevocations

    path = tmp_path / "approvals.db"
    revocations = FileRevocations(path)
    now = time.time()

    async def scenario() -> tuple[bool, bool]:
        await revocations.revoke("expired-cookie", now - 1)
        await revocations.revoke("live-cookie", now + 60)  # prunes what expired
        return await revocations.revoked("expired-cookie"), await revocations.revoked("live-cookie")

    assert asyncio.run(scenario()) == (False, True)
    with contextlib.closing(sqlite3.connect(path)) as db:
        rows = db.execute(f"SELECT sid FROM {SIGNOUTS_TABLE}").fetchall()
    assert rows == [("live-cookie",)]
    assert path.stat().st_mode & 0o077 == 0  # beside the approvals, in their 0600 file
