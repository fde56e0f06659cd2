"""The operator console in a real browser against a real ``skillrack serve`` (issue 17, item 2).

Debian's Chromium (``/usr/bin/chromium``, or ``SKILLRACK_CHROMIUM``) driven by
Playwright's Python API; no browser is downloaded.  The tests skip, saying
why, when either is missing (``.ci/run`` installs the ``chromium`` package).

The agent serves the example vendor behind API keys: ``olga`` holds the
``operator`` role, ``carl`` (same tenant) does not.  ``carl`` calls
``manage_interface reset_counters`` with ``skillrack call``, which waits for
an operator; ``olga`` presses Grant in the console and the call finishes.  Pages are read with
JavaScript disabled, which is how the console must work.  Each page is
screenshotted into ``$SKILLRACK_ARTIFACTS/screenshots`` (tox sets it to
``.tox/artifacts``); without that variable, into a temporary directory whose
path the run prints.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from helpers.example_vendor import example_vendor_env

from skillrack.serve.console import CONSOLE_PATH
from skillrack.testing.serve import (
    ServedAgent,
    invoke,
    skill_request,
    skillrack_command,
    start_agent,
)

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")

CHROMIUM = Path(os.environ.get("SKILLRACK_CHROMIUM", "/usr/bin/chromium"))
OPERATOR_KEY = "console-test-operator-key-TEST-ONLY"
CALLER_KEY = "console-test-caller-key-TEST-ONLY"
RESET = {
    "operation": "reset_counters",
    "device_id": "edge-router-1",
    "interface": "eth1",
    "reason": "baseline after optics replacement",
}
#: What ``skillrack call`` prints on stderr when it starts waiting for an operator.
WAITING = re.compile(r"waiting for approval (\w+) by role 'operator' \(task ([0-9a-f-]+);")
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
        f"roles = {roles!r}\n".replace("'", '"')
    )


@pytest.fixture(scope="module")
def agent(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedAgent]:
    workdir = tmp_path_factory.mktemp("console-browser")
    (workdir / "keys.toml").write_text(
        _key_entry(OPERATOR_KEY, "olga", ["operator"]) + _key_entry(CALLER_KEY, "carl", [])
    )
    (workdir / "policy.toml").write_text(
        '[[rule]]\neffect = "allow"\ntenants = ["acme"]\nskills = ["*"]\n'
    )
    config = workdir / "skillrack.toml"
    config.write_text(
        '[agent]\nname = "Console test agent"\n\n[server]\nrate_per_minute = 1000000\n\n'
        '[plugins.api_keys]\nfile = "keys.toml"\n\n[plugins.policy]\nfile = "policy.toml"\n'
    )
    env = example_vendor_env(tmp_path_factory.mktemp("site") / "site")
    served = start_agent(workdir, args=("--config", str(config)), env=env)
    served.wait_ready(timeout=START_S)
    try:
        yield served
    finally:
        served.stop()


@pytest.fixture(scope="module")
def screenshots(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Path]:
    where = os.environ.get("SKILLRACK_ARTIFACTS")
    directory = (Path(where) if where else tmp_path_factory.mktemp("artifacts")) / "screenshots"
    directory.mkdir(parents=True, exist_ok=True)
    yield directory
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line(f"console screenshots: {directory}")


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


class Console:
    """A browser session with one API key, JavaScript off, recording console errors."""

    def __init__(self, browser: Any, agent: ServedAgent, key: str, **options: Any) -> None:
        self.base = agent.url + CONSOLE_PATH
        self.context = browser.new_context(
            java_script_enabled=False, extra_http_headers={"X-API-Key": key}, **options
        )
        self.page = self.context.new_page()
        self.errors: list[str] = []
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))

    def open(self, path: str = "") -> Any:
        return self.page.goto(self.base + path)

    def close(self) -> None:
        self.context.close()


@pytest.fixture
def operator(browser: Any, agent: ServedAgent) -> Iterator[Console]:
    session = Console(browser, agent, OPERATOR_KEY, viewport={"width": 1000, "height": 760})
    yield session
    session.close()


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


def test_every_page_loads_without_console_errors(
    agent: ServedAgent, operator: Console, screenshots: Path
) -> None:
    task_id, _ = park_reset(agent)
    pages = [
        ("overview", "", "Overview"),
        ("skills", "/skills", "Skills"),
        ("skill", "/skills/manage_interface", "Manage interface"),
        ("tasks", "/tasks", "Tasks"),
        ("task", f"/tasks/{task_id}", "Task"),
        ("approvals", "/approvals", "Approvals"),
    ]
    for name, path, heading in pages:
        response = operator.open(path)
        assert response is not None and response.status == 200, name
        assert heading in operator.page.locator("h1").inner_text(), name
        operator.page.screenshot(path=str(screenshots / f"console-{name}.png"))
    assert operator.errors == []
    # Collapsible schema trees without a script: a closed <details> opens on click.
    operator.open("/skills/manage_interface")
    summary = operator.page.locator("summary", has_text="device_id").first
    member = summary.locator("xpath=..")
    assert member.get_attribute("open") is None
    summary.click()
    assert member.get_attribute("open") is not None
    assert "Identifier of the managed device" in member.inner_text()
    assert operator.errors == []


def test_pages_fit_a_phone(browser: Any, agent: ServedAgent, screenshots: Path) -> None:
    """At 390 px no table scrolls sideways: each row is a card of labelled cells (issue 28, 7)."""
    task_id, _ = park_reset(agent)
    phone = Console(browser, agent, OPERATOR_KEY, viewport={"width": 390, "height": 844})
    try:
        pages = [
            ("overview", ""),
            ("approvals", "/approvals"),
            ("tasks", "/tasks?describe=shown"),
            ("task", f"/tasks/{task_id}"),
            ("skills", "/skills"),
        ]
        for name, path in pages:
            assert phone.open(path).status == 200
            box = phone.page.locator("main").bounding_box()
            assert box is not None and box["x"] + box["width"] <= 390, name
            cells = phone.page.locator("main table td").all()
            assert cells or name == "approvals", f"{name}: no table to check"
            cards = phone.page.locator("main section.card, main input, main button").all()
            for cell in cells[:60] + cards[:20]:
                if not cell.is_visible():
                    continue  # inside a closed <details>
                edge = cell.bounding_box()
                assert edge is not None and edge["x"] + edge["width"] <= 390 + 0.5, (
                    name,
                    cell.inner_text()[:60],
                )
            for cell in cells[:60]:  # a card's full width, not a column squeezed to a few letters
                edge = cell.bounding_box() if cell.is_visible() else None
                assert edge is None or edge["width"] >= 250, (name, cell.inner_text()[:60])
            for head in phone.page.locator("main table thead").all():
                shown = head.bounding_box()  # None inside a closed <details>
                assert shown is None or shown["height"] <= 1, name  # the cells carry labels
            phone.page.screenshot(
                path=str(screenshots / f"console-phone-{name}.png"), full_page=True
            )
        assert phone.errors == []
    finally:
        phone.close()


def test_an_approval_granted_by_clicking_finishes_the_callers_task(
    agent: ServedAgent, operator: Console, screenshots: Path
) -> None:
    """``skillrack call`` waits; a Grant pressed in the console lets it finish, nothing else."""
    call = subprocess.Popen(
        [
            skillrack_command(),
            "call",
            agent.url,
            "manage_interface",
            *("--args", json.dumps(RESET), "--approval-interval", "0.5"),
            *("--header", f"X-API-Key: {CALLER_KEY}"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert call.stderr is not None
        waiting = WAITING.search(call.stderr.readline())  # said before it starts waiting
        assert waiting is not None, call.stderr.read()
        approval_id, task_id = waiting.group(1), waiting.group(2)
        operator.open("/approvals")
        card = operator.page.locator(f"section[aria-labelledby='approval-{approval_id}']")
        assert "reset_counters" in card.inner_text() and "edge-router-1" in card.inner_text()
        assert call.poll() is None  # nothing decided yet: still waiting
        card.get_by_label("Reason").fill("CHG-1234: counters reset after optics swap")
        grant = card.get_by_role("button", name="Grant")
        grant.focus()  # keyboard: focus the button and press Enter
        with operator.page.expect_navigation():
            operator.page.keyboard.press("Enter")
        status = operator.page.get_by_role("status")
        assert approval_id in status.inner_text()
        operator.page.screenshot(path=str(screenshots / "console-approvals-decided.png"))
        history = operator.page.locator("table", has_text=approval_id).inner_text()
        assert "granted" in history and "olga (tenant acme) via console" in history
        assert "CHG-1234: counters reset after optics swap" in history
        out, err = call.communicate(timeout=120)
    finally:
        call.kill()
    assert call.returncode == 0, err
    result = json.loads(out)
    assert result["task_id"] == task_id and result["state"] == "TASK_STATE_COMPLETED"
    assert result["result"]["counters_reset"] is True
    operator.open(f"/tasks/{task_id}")
    assert "completed" in operator.page.locator("dl.facts").inner_text()
    assert operator.errors == []


def test_a_caller_without_the_operator_role_is_refused(
    browser: Any, agent: ServedAgent, screenshots: Path
) -> None:
    caller = Console(browser, agent, CALLER_KEY)
    try:
        for path in ("", "/approvals", "/tasks"):
            response = caller.open(path)
            assert response.status == 403, path
            assert "operator" in caller.page.get_by_role("alert").inner_text()
        caller.page.screenshot(path=str(screenshots / "console-refused.png"))
    finally:
        caller.close()


def test_a_post_without_the_csrf_token_is_refused(agent: ServedAgent, operator: Console) -> None:
    task_id, approval_id = park_reset(agent)
    operator.open("/approvals")  # the session has its CSRF cookie now
    target = f"{operator.base}/approvals/{approval_id}"
    refused = operator.context.request.post(target, form={"decision": "grant"})
    assert refused.status == 403 and "CSRF" in refused.text()
    forged = operator.context.request.post(
        target, form={"decision": "grant", "csrf_token": "x" * 43}
    )
    assert forged.status == 403
    operator.open("/approvals")
    pending = operator.page.locator(f"section[aria-labelledby='approval-{approval_id}']")
    assert pending.get_by_role("button", name="Grant").is_visible()  # still pending
    # The cookie's own value as the token (the old double-submit rule) is refused too.
    cookie_copy = operator.context.request.post(
        target, form={"decision": "grant", "csrf_token": _cookie_value(operator), "reason": "x"}
    )
    assert cookie_copy.status == 403
    ended = operator.context.request.post(
        target,
        form={"decision": "deny", "csrf_token": _token(operator), "reason": "not today"},
    )
    assert ended.ok  # with the token, the same post is accepted
    rejected = invoke(
        agent.url, {"continue": True}, task_id=task_id, headers={"X-API-Key": CALLER_KEY}
    )
    assert rejected["status"]["state"] == "TASK_STATE_REJECTED"


def _token(session: Console) -> str:
    """The CSRF token the page's forms carry (made with the server secret, not the cookie's)."""
    token = session.page.locator("input[name='csrf_token']").first.get_attribute("value")
    assert token
    [cookie] = [
        c["value"] for c in session.context.cookies() if c["name"] == "skillrack_console_csrf"
    ]
    assert token != cookie
    return str(token)


def _cookie_value(session: Console) -> str:
    [cookie] = [
        c["value"] for c in session.context.cookies() if c["name"] == "skillrack_console_csrf"
    ]
    return str(cookie)
