"""Signing in to the console in Chromium (issue 28, item 4): OpenID Connect and an API key.

A real ``skillrack serve`` with the example vendor takes API keys (``api_keys``)
and OpenID Connect tokens (``oidc`` with ``[plugins.oidc.console]``) from the
small issuer of ``tests/helpers/oidc_issuer.py``, served for real on
127.0.0.1 with its JWK Set, authorization and token endpoints.  The browser
(Debian's Chromium driven by Playwright, JavaScript off as the console needs
none; see ``test_console_browser.py``) sends no header of its own: it signs in
through the pages, as a person would, then uses the console by its session
cookie (a Grant pressed after signing in with a key), and signs out.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from helpers.example_vendor import example_vendor_env
from helpers.oidc_issuer import AUDIENCE, AUTHORIZE, TOKEN, Issuer, running_issuer

from skillrack.serve.console import CONSOLE_PATH
from skillrack.serve.console.session import COOKIE as SESSION
from skillrack.testing.serve import ServedAgent, invoke, skill_request, start_agent

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")

CHROMIUM = Path(os.environ.get("SKILLRACK_CHROMIUM", "/usr/bin/chromium"))
OPERATOR_KEY = "signin-browser-operator-key-TEST-ONLY"
CALLER_KEY = "signin-browser-caller-key-TEST-ONLY"
CONSOLE_CLIENT = "skillrack-console"
RESET = {
    "operation": "reset_counters",
    "device_id": "edge-router-1",
    "interface": "eth1",
    "reason": "baseline after optics replacement",
}
#: Seconds ``skillrack serve`` may take to answer: plugin loading is slow on a loaded machine.
START_S = 120.0

pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists(),
    reason=f"no Chromium at {CHROMIUM} (apt-get install chromium, or set SKILLRACK_CHROMIUM)",
)


def _key_entry(key: str, identity: str, roles: list[str]) -> str:
    digest = hashlib.sha256(key.encode()).hexdigest()
    return (
        f'[[key]]\nsha256 = "{digest}"\nidentity = "{identity}"\ntenant = "acme"\n'
        f"roles = {json.dumps(roles)}\n"
    )


@pytest.fixture(scope="module")
def issuer() -> Iterator[Issuer]:
    with running_issuer() as running:
        running.user("sso-olga", tenant="acme", realm_access={"roles": ["network-operator"]})
        yield running


@pytest.fixture(scope="module")
def agent(issuer: Issuer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedAgent]:
    workdir = tmp_path_factory.mktemp("console-signin")
    (workdir / "keys.toml").write_text(
        _key_entry(OPERATOR_KEY, "olga", ["operator"]) + _key_entry(CALLER_KEY, "carl", [])
    )
    (workdir / "policy.toml").write_text(
        '[[rule]]\neffect = "allow"\ntenants = ["acme"]\nskills = ["*"]\n'
    )
    config = workdir / "skillrack.toml"
    config.write_text(
        '[agent]\nname = "Console sign-in agent"\n\n[server]\nrate_per_minute = 1000000\n\n'
        '[plugins.api_keys]\nfile = "keys.toml"\n\n[plugins.policy]\nfile = "policy.toml"\n\n'
        f'[plugins.oidc]\nissuer = "{issuer.issuer}"\naudience = "{AUDIENCE}"\n'
        'allow_loopback = true\nroles_claims = ["realm_access.roles"]\n\n'
        '[plugins.oidc.roles]\nnetwork-operator = ["operator"]\n\n'
        f'[plugins.oidc.console]\nclient_id = "{CONSOLE_CLIENT}"\n'
    )
    env = example_vendor_env(tmp_path_factory.mktemp("site") / "site")
    served = start_agent(workdir, args=("--config", str(config)), env=env)
    served.wait_ready(timeout=START_S)
    issuer.public_client(CONSOLE_CLIENT, served.url + CONSOLE_PATH + "/signin/callback")
    try:
        yield served
    finally:
        served.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    # As root (a CI container) Chromium refuses to start without --no-sandbox.
    args = ["--no-sandbox"] if os.geteuid() == 0 else []
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM), args=args)
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture
def screenshots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = os.environ.get("SKILLRACK_ARTIFACTS")
    directory = (Path(where) if where else tmp_path_factory.mktemp("artifacts")) / "screenshots"
    directory.mkdir(parents=True, exist_ok=True)
    return directory


@pytest.fixture
def person(browser: Any) -> Iterator[tuple[Any, Any, list[str]]]:
    """A fresh browser profile with no header of its own: (context, page, console errors)."""
    context = browser.new_context(
        java_script_enabled=False, viewport={"width": 1000, "height": 760}
    )
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        yield context, page, errors
    finally:
        context.close()


def park_reset(agent: ServedAgent) -> tuple[str, str]:
    """carl asks to reset counters; the task waits for approval: (task id, approval id)."""
    card = httpx.get(agent.url + "/.well-known/agent-card.json", timeout=10).json()
    [extension] = [e for e in card["capabilities"]["extensions"] if "params" in e]
    digest = {s["skill_id"]: s["interface_digest"] for s in extension["params"]["skills"]}
    request = skill_request("manage_interface", RESET, "1.0", digest["manage_interface"])
    task = invoke(agent.url, request, headers={"X-API-Key": CALLER_KEY})
    assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED", task
    waiting = task["status"]["message"]["parts"][0]["data"]["skillrack_approval"]
    return str(task["id"]), str(waiting["approval_id"])


def session_cookie(context: Any) -> dict[str, Any]:
    [cookie] = [c for c in context.cookies() if c["name"] == SESSION]
    return dict(cookie)


def test_signing_in_with_openid_connect(
    agent: ServedAgent, issuer: Issuer, person: tuple[Any, Any, list[str]], screenshots: Path
) -> None:
    context, page, errors = person
    page.goto(agent.url + CONSOLE_PATH + "/tasks")
    assert "/signin?next=" in page.url and "Sign in" in page.locator("h1").inner_text()
    page.screenshot(path=str(screenshots / "console-signin.png"))
    tokens_before = issuer.hits[TOKEN]
    page.get_by_role("link", name="Sign in with OpenID Connect").click()
    page.wait_for_url(issuer.base + AUTHORIZE + "?*")  # at the issuer, PKCE asked for
    asked = issuer.authorizations[-1]
    assert asked["code_challenge_method"] == "S256" and asked["client_id"] == CONSOLE_CLIENT
    page.get_by_label("Username").fill("sso-olga")
    page.get_by_role("button", name="Log in").click()
    # Back through the callback; its page moves on to where the person was going.
    page.wait_for_url(agent.url + CONSOLE_PATH + "/tasks", timeout=30_000)
    assert "Tasks" in page.locator("h1").inner_text()
    assert "Signed in as sso-olga (tenant acme)" in page.locator("header").inner_text()
    assert issuer.hits[TOKEN] == tokens_before + 1  # the code exchanged once, with the verifier
    cookie = session_cookie(context)
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict" and cookie["path"] == CONSOLE_PATH
    assert 0 < cookie["expires"] - time.time() <= 1800 + 5  # short-lived
    page.screenshot(path=str(screenshots / "console-signed-in-oidc.png"))
    page.get_by_role("button", name="Sign out").click()
    assert "You are signed out" in page.get_by_role("status").inner_text()
    assert not [c for c in context.cookies() if c["name"] == SESSION]
    page.goto(agent.url + CONSOLE_PATH + "/approvals")
    assert "/signin" in page.url
    assert errors == []


def test_signing_in_with_an_api_key_and_granting(
    agent: ServedAgent, person: tuple[Any, Any, list[str]], screenshots: Path
) -> None:
    context, page, errors = person
    task_id, approval_id = park_reset(agent)
    page.goto(agent.url + CONSOLE_PATH + "/approvals")
    assert "/signin?next=" in page.url
    page.get_by_label("API key", exact=True).fill("not-a-key-of-this-agent")
    page.get_by_role("button", name="Sign in", exact=True).click()
    assert "the key was not accepted" in page.get_by_role("alert").inner_text()
    assert [e for e in errors if "401" not in e] == []  # Chromium logs the page's 401 status
    errors.clear()
    assert not [c for c in context.cookies() if c["name"] == SESSION]
    page.get_by_label("API key", exact=True).fill(OPERATOR_KEY)
    page.get_by_role("button", name="Sign in", exact=True).click()
    page.wait_for_url(agent.url + CONSOLE_PATH + "/approvals", timeout=30_000)
    assert "Signed in as olga (tenant acme)" in page.locator("header").inner_text()
    assert OPERATOR_KEY not in json.dumps(context.cookies())  # the key is kept nowhere
    # The session's own CSRF token: a Grant pressed now is accepted.
    card = page.locator(f"section[aria-labelledby='approval-{approval_id}']")
    card.get_by_label("Reason").fill("CHG-77: counters reset after optics swap")
    card.get_by_role("button", name="Grant").click()
    assert approval_id in page.get_by_role("status").inner_text()
    history = page.locator("table", has_text=approval_id).inner_text()
    assert "granted" in history and "olga (tenant acme) via console" in history
    page.screenshot(path=str(screenshots / "console-signed-in-key.png"))
    finished = invoke(
        agent.url, {"continue": True}, task_id=task_id, headers={"X-API-Key": CALLER_KEY}
    )
    assert finished["status"]["state"] == "TASK_STATE_COMPLETED", finished
    assert errors == []
