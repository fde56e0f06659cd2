"""The operator console's pages, read over HTTP from a real served agent (issue 17, item 1).

No browser here (``test_console_browser.py`` has one): these tests read the
HTML with httpx, so they are fast and cover what each page shows, who may see
it, the CSRF rule of the Grant and Deny forms, and that values at a skill's
``sensitive`` pointers never reach a page.
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from helpers.agent_harness import running_agent
from helpers.agent_skills import AllowAll
from helpers.builders import SkillsPlugin, registry_of, simple_skill
from helpers.header_callers import HeaderCallers, caller_header
from helpers.served_process import digests

from skillrack import Authority, BaseSkill, DomainSchema, SupportingRecord
from skillrack.host.config import DEVELOPMENT_POLICY, Config, ServerSettings
from skillrack.serve.console import CONSOLE_PATH, routes
from skillrack.serve.console.csrf import COOKIE, FIELD
from skillrack.serve.console.masking import MASK
from skillrack.serve.security.approvals import ApprovalStore
from skillrack.testing.serve import error_of, invoke, skill_request

SECRET = "hunter2-correct-horse-battery"
ROTATE_INPUT = {
    "type": "object",
    "description": "Rotate a device's <b>credential</b>.",
    "required": ["device", "secret"],
    "additionalProperties": False,
    "properties": {
        "device": {"type": "string", "minLength": 1, "description": "Device to rotate."},
        "secret": {"type": "string", "description": "The new credential."},
        "mode": {"enum": ["soft", "hard"], "description": "How to rotate."},
        "window": {"$ref": "#/$defs/window"},
    },
    "$defs": {
        "window": {
            "type": "object",
            "description": "A maintenance window.",
            "properties": {"next": {"$ref": "#/$defs/window"}},
        }
    },
}
NOTE = SupportingRecord(
    "rotation-note",
    DomainSchema.inline(
        {"type": "object", "properties": {"note": {"type": "string", "format": "date-time"}}},
        schema_uri="urn:test:rotation-note:1.0",
        version="1.0",
    ),
)


async def rotate(arguments: Any, context: Any) -> Any:
    await context.publish_record(
        "rotation-note", {"note": "2026-01-01T00:00:00Z"}, artifact_id="n1"
    )
    return {"rotated": arguments["device"]}


async def echo(arguments: Any, context: Any) -> Any:
    return {"echo": True}


SKILLS = SkillsPlugin(
    simple_skill(
        "rotate_credential",
        input_schema=ROTATE_INPUT,
        handler=rotate,
        authority=Authority("execute", approval_may_be_required=True),
        resources=("/device",),
        sensitive=("/secret",),
        supporting_records=(NOTE,),
        examples=('{"device": "r1", "secret": "example-only", "mode": "soft"}',),
    ),
    simple_skill("echo", handler=echo),
    BaseSkill(
        id="chat_help",
        name="Chat help",
        description="Answers <i>free</i> text.",
        handler=echo,
        output_modes=("text/plain", "text/markdown"),
        authority=Authority("execute", approval_may_be_required=True),
        cancellable=True,
    ),
    # Refused at assembly: the Overview names its plugin, rule and pointer.
    simple_skill(
        "broken",
        input_schema={"properties": {"a": {"$ref": "https://example.net/<x>.json"}}},
    ),
)

OPERATOR_A = caller_header("acme", "olga", "operator")
CALLER_A = caller_header("acme", "carl")
OPERATOR_B = caller_header("globex", "otto", "operator")
OPERATOR_A2 = caller_header("acme", "oona", "operator")


@pytest.fixture(scope="module")
def agent(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """An agent with authentication (X-Test-Caller), a policy allowing everything."""
    base_dir = tmp_path_factory.mktemp("console")
    registry = registry_of([("tests", SKILLS), ("allow", AllowAll()), ("callers", HeaderCallers())])
    config = Config(base_dir=base_dir, server=ServerSettings(store="memory"))
    with running_agent(registry, config) as url:
        yield url, base_dir


@pytest.fixture(scope="module")
def development(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """An agent without authentication: the console is open to loopback clients."""
    registry = registry_of([("tests", SKILLS), ("allow", AllowAll())])
    config = Config(base_dir=tmp_path_factory.mktemp("dev"), server=ServerSettings(store="memory"))
    with running_agent(registry, config) as url:
        yield url


def page(url: str, path: str, headers: dict[str, str], **kwargs: Any) -> httpx.Response:
    return httpx.get(url + CONSOLE_PATH + path, headers=headers, timeout=10, **kwargs)


def start_rotation(url: str, headers: dict[str, str], device: str = "edge-7") -> str:
    """A rotate_credential call parked for approval; its task id."""
    request = skill_request(
        "rotate_credential",
        {"device": device, "secret": SECRET, "mode": "hard"},
        "1.0",
        digests(url)["rotate_credential"],
    )
    task = invoke(url, request, headers=headers)
    assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED", task
    return str(task["id"])


def approval_of(base_dir: Path, task_id: str) -> Any:
    [approval] = [
        a for a in ApprovalStore(base_dir / "skillrack-approvals.db").list() if a.task_id == task_id
    ]
    return approval


def form_token(client: httpx.Client, url: str) -> str:
    """Load the Approvals page as a browser would: the cookie is kept, the token read."""
    answer = client.get(url + CONSOLE_PATH + "/approvals")
    assert answer.status_code == 200
    visitor = client.cookies.get(COOKIE)
    assert visitor, "the page set no CSRF cookie"
    tokens = set(re.findall(rf'name="{FIELD}" value="([^"]+)"', answer.text))
    assert len(tokens) == 1, tokens  # every form carries the same token
    [token] = tokens
    assert token != visitor  # the token is made with the server secret, not the cookie's copy
    return token


def decide(
    browser: httpx.Client, url: str, approval_id: str, token: str, decision: str
) -> httpx.Response:
    """Press Grant or Deny: the approval's form posted with the page's token."""
    return browser.post(
        url + CONSOLE_PATH + f"/approvals/{approval_id}",
        data={FIELD: token, "decision": decision, "reason": "change ticket CHG-1 checked"},
    )


def test_every_page_renders_for_an_operator(agent: tuple[str, Path]) -> None:
    url, _ = agent
    for path, heading in [
        ("", "Overview"),
        ("/skills", "Skills"),
        ("/skills/rotate_credential", "rotate_credential"),
        ("/tasks", "Tasks"),
        ("/approvals", "Approvals"),
    ]:
        answer = page(url, path, OPERATOR_A)
        assert answer.status_code == 200, (path, answer.text)
        assert answer.headers["content-type"].startswith("text/html")
        assert re.search(r"<h1>[^<]*" + heading, answer.text), path
        assert "<script" not in answer.text  # no JavaScript at all
        assert "frame-ancestors 'none'" in answer.headers["content-security-policy"]


def test_overview_shows_identity_bindings_store_plugins_and_limits(
    agent: tuple[str, Path],
) -> None:
    url, _ = agent
    html = page(url, "", OPERATOR_A).text
    assert f"<code>{url}/</code>" in html and "JSONRPC" in html and "HTTP+JSON" in html
    assert "not signed" in html
    assert "memory (tasks are lost when the server stops)" in html
    assert "tests" in html and "rotate_credential" in html  # the plugin and its skills
    assert "rate_per_minute" in html and "max_schema_bytes" in html
    refused = html[html.index('id="refused"') :]
    assert '<td data-label="Skill">broken</td>' in refused and "<code>meta_schema</code>" in refused
    assert "/input_schema/resolution/schema/properties/a/$ref" in refused
    assert "https://example.net/&lt;x&gt;.json" in refused  # the message, escaped


def test_overview_shows_health_and_flags_a_development_allow_all_policy(
    agent: tuple[str, Path], development: str
) -> None:
    """Issue 28, item 7: a new operator sees at once whether the agent is healthy and guarded."""
    url, _ = agent
    html = page(url, "", OPERATOR_A).text
    health = html[html.index('id="health"') : html.index('id="identity"')]
    assert "Task store" in health and "answered in" in health and "health-ok" in health
    assert "Approvals store" in health and "waiting" in health
    assert "1 refused" in health and "health-warn" in health  # the broken skill
    assert "allow-all" not in html  # this agent has a real policy plugin (AllowAll of tests)
    # `skillrack serve --insecure-allow-all` registers the development policy under this name.
    registry = registry_of([("tests", SKILLS), (DEVELOPMENT_POLICY, AllowAll())])
    config = Config(base_dir=Path(tempfile.mkdtemp()), server=ServerSettings(store="memory"))
    with running_agent(registry, config) as open_url:
        flagged = httpx.get(open_url + CONSOLE_PATH, timeout=10).text
    warning = flagged[flagged.index('class="warning"') : flagged.index('id="health"')]
    assert "Development policy: every call is allowed" in warning
    assert "development allow-all policy" in flagged and "health-bad" in flagged
    assert "none configured: loopback clients only" in flagged


def test_skill_page_shows_schema_trees_examples_and_the_raw_document(
    agent: tuple[str, Path],
) -> None:
    url, _ = agent
    html = page(url, "/skills/rotate_credential", OPERATOR_A).text
    assert html.count("<details") >= 6  # input members, output, the record kind
    assert "Device to rotate." in html and 'title="required">required</span>' in html
    assert "&#34;soft&#34;, &#34;hard&#34;" in html  # the enum, escaped
    assert "&lt;b&gt;credential&lt;/b&gt;" in html  # schema text is escaped, never markup
    assert "refers back to #/$defs/window (recursive)" in html
    # additionalProperties: false, in words (issue 28, item 7), not as a "no value" member.
    root = html[html.index("<details") : html.index("<strong>device</strong>")]
    assert '<p class="closed">no other members</p>' in root
    assert "<strong>additionalProperties</strong>" not in html
    assert "Record rotation-note schema" in html and "date-time" in html
    assert "execute; approval may be required" in html
    assert "example-only" in html  # the declared example
    raw = page(url, "/skills/rotate_credential/interface.json", OPERATOR_A)
    assert raw.status_code == 200
    assert raw.json()["interface_digest"] == digests(url)["rotate_credential"]
    assert raw.json()["interface"]["skill_id"] == "rotate_credential"
    assert page(url, "/skills/nope", OPERATOR_A).status_code == 404


def test_skills_page_lists_base_skills_in_their_own_section(agent: tuple[str, Path]) -> None:
    url, _ = agent
    html = page(url, "/skills", OPERATOR_A).text
    schema_table, base = html.split('id="base-skills"')
    assert "chat_help" not in schema_table and "rotate_credential" not in base
    assert (
        '<td data-label="Skill">chat_help<br>' in base and "Chat help" in base
    )  # no link: it has no page
    assert "Answers &lt;i&gt;free&lt;/i&gt; text." in base  # escaped, never markup
    assert "in: text/plain" in base and "out: text/plain, text/markdown" in base
    assert "cancellable" in base and "execute" in base and "approval may be required" in base
    assert "<details" not in base and "sha256:" not in base  # no schema tree, no digest


def test_pages_need_the_operator_role(agent: tuple[str, Path]) -> None:
    url, _ = agent
    for path in ("", "/skills", "/skills/echo", "/tasks", "/approvals", "/tasks/x"):
        refused = page(url, path, CALLER_A)
        assert refused.status_code == 403, path
        assert "need the &#39;operator&#39; role" in refused.text
        # No credential: off to the sign-in page, never a raw 401 (issue 28).
        signin = page(url, path, {})
        assert signin.status_code == 303, path
        assert signin.headers["location"].startswith(CONSOLE_PATH + "/signin?next=")
    # This agent's only scheme is a header no browser sends: the page says so, offers no form.
    offered = httpx.get(url + signin.headers["location"], timeout=10).text
    assert "there is nothing to sign in with here" in offered and 'name="key"' not in offered
    posted = httpx.post(
        url + CONSOLE_PATH + "/approvals/x", data={"decision": "grant"}, headers=CALLER_A
    )
    assert posted.status_code == 403


def test_sensitive_values_never_reach_a_page(agent: tuple[str, Path]) -> None:
    url, _ = agent
    task_id = start_rotation(url, CALLER_A)
    for path in ("/approvals", f"/tasks/{task_id}", "/tasks"):
        html = page(url, path, OPERATOR_A).text
        assert SECRET not in html, path
    task_html = page(url, f"/tasks/{task_id}", OPERATOR_A).text
    approvals_html = page(url, "/approvals", OPERATOR_A).text
    for html in (task_html, approvals_html):
        assert MASK in html and "edge-7" in html  # masked secret, the resource shown


def test_tasks_list_filters_and_task_page(agent: tuple[str, Path]) -> None:
    url, _ = agent
    done = invoke(url, skill_request("echo", {}, "1.0", digests(url)["echo"]), headers=CALLER_A)
    waiting = start_rotation(url, CALLER_A)
    html = page(url, "/tasks", OPERATOR_A).text
    assert done["id"] in html and waiting in html and "carl" in html and "acme" in html
    completed = page(url, "/tasks", OPERATOR_A, params={"state": "completed"}).text
    assert done["id"] in completed and waiting not in completed
    rotations = page(url, "/tasks", OPERATOR_A, params={"skill": "rotate_credential"}).text
    assert waiting in rotations and done["id"] not in rotations
    assert page(url, "/tasks", OPERATOR_A, params={"state": "<b>"}).status_code == 400
    detail = page(url, f"/tasks/{done['id']}", OPERATOR_A).text
    assert "state-completed" in detail and "echo" in detail and " ms" in detail
    assert page(url, "/tasks/no-such-task", OPERATOR_A).status_code == 404


def test_describe_skill_tasks_are_hidden_unless_asked_for(agent: tuple[str, Path]) -> None:
    """Issue 28, item 7: clients reading interfaces do not bury the work in the task list."""
    url, _ = agent
    described = invoke(
        url,
        {"skill": "describe_skill", "arguments": {"skill_id": "echo"}},
        headers=CALLER_A,
    )
    assert described["status"]["state"] == "TASK_STATE_COMPLETED", described
    done = invoke(url, skill_request("echo", {}, "1.0", digests(url)["echo"]), headers=CALLER_A)
    listed = page(url, "/tasks", OPERATOR_A).text
    assert done["id"] in listed and described["id"] not in listed
    assert "describe_skill</code> task(s) among them are hidden" in listed
    shown = page(url, "/tasks", OPERATOR_A, params={"describe": "shown"}).text
    assert described["id"] in shown and done["id"] in shown and "checked" in shown
    only = page(url, "/tasks", OPERATOR_A, params={"skill": "describe_skill"}).text
    assert described["id"] in only and done["id"] not in only


def test_many_describe_skill_tasks_do_not_bury_the_work(
    agent: tuple[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The list reads further store pages (at most TASK_PAGES_READ) to fill a filtered page."""
    url, _ = agent
    monkeypatch.setattr(routes, "TASK_PAGE_SIZE", 3)  # the agent runs in this process
    done = invoke(url, skill_request("echo", {}, "1.0", digests(url)["echo"]), headers=CALLER_A)
    for _ in range(4):  # more than a store page of them, all newer than the echo
        invoke(
            url, {"skill": "describe_skill", "arguments": {"skill_id": "echo"}}, headers=CALLER_A
        )
    listed = page(url, "/tasks", OPERATOR_A).text
    assert done["id"] in listed
    hidden = re.search(r"(\d+) <code>describe_skill</code> task\(s\)", listed)
    assert hidden is not None and int(hidden.group(1)) >= 4  # older ones may be among them


def test_a_task_page_shows_its_approvals_and_its_result(agent: tuple[str, Path]) -> None:
    """Issue 28, item 7: what was asked, who decided, and what the change returned."""
    url, base_dir = agent
    task_id = start_rotation(url, CALLER_A, device="edge-9")
    waiting = page(url, f"/tasks/{task_id}", OPERATOR_A).text
    approval = approval_of(base_dir, task_id)
    section = waiting[waiting.index("<h2>Approvals</h2>") : waiting.index("<h2>Artifacts</h2>")]
    assert approval.id in section and "pending" in section and "0 of 1" in section
    assert "Decide on the Approvals page" in section
    assert "No result yet." in waiting
    with httpx.Client(headers=OPERATOR_A, timeout=10) as browser:
        granted = decide(browser, url, approval.id, form_token(browser, url), "grant")
        assert granted.status_code == 303
    finished = invoke(url, {"continue": True}, task_id=task_id, headers=CALLER_A)
    assert finished["status"]["state"] == "TASK_STATE_COMPLETED", finished
    html = page(url, f"/tasks/{task_id}", OPERATOR_A).text
    section = html[html.index("<h2>Approvals</h2>") : html.index("<h2>Artifacts</h2>")]
    assert "granted" in section and "grant by olga (tenant acme) via console" in section
    assert "change ticket CHG-1 checked" in section  # the approver's reason
    result = html[html.index('aria-label="Result"') : html.index("<h2>Approvals</h2>")]
    # The result as the task store holds it, read independently over the API.
    [artifact] = [a for a in finished["artifacts"] if a["artifactId"] == "result"]
    stored = artifact["parts"][0]["data"]["result"]
    assert stored == {"rotated": "edge-9"} and "&#34;rotated&#34;: &#34;edge-9&#34;" in result
    assert SECRET not in html


def test_another_tenants_operator_sees_and_decides_nothing(agent: tuple[str, Path]) -> None:
    url, base_dir = agent
    task_id = start_rotation(url, CALLER_A)
    approval = approval_of(base_dir, task_id)
    assert task_id not in page(url, "/tasks", OPERATOR_B).text
    assert approval.id not in page(url, "/approvals", OPERATOR_B).text
    assert page(url, f"/tasks/{task_id}", OPERATOR_B).status_code == 404
    start_rotation(url, caller_header("globex", "gina"))  # so that otto's page has a form
    with httpx.Client(headers=OPERATOR_B, timeout=10) as browser:
        token = form_token(browser, url)
        refused = decide(browser, url, approval.id, token, "grant")
    assert refused.status_code == 404
    assert approval_of(base_dir, task_id).state == "pending"


def test_granting_in_the_console_lets_the_task_finish(agent: tuple[str, Path]) -> None:
    url, base_dir = agent
    task_id = start_rotation(url, CALLER_A)
    approval = approval_of(base_dir, task_id)
    with httpx.Client(headers=OPERATOR_A, timeout=10) as browser:
        token = form_token(browser, url)
        granted = decide(browser, url, approval.id, token, "grant")
        assert granted.status_code == 303
        assert granted.headers["location"] == f"{CONSOLE_PATH}/approvals?decided={approval.id}"
        again = decide(browser, url, approval.id, token, "deny")
        assert again.status_code == 409 and "already granted" in again.text
        history = browser.get(url + CONSOLE_PATH + "/approvals").text
    decided = approval_of(base_dir, task_id)
    assert decided.state == "granted" and decided.decided_by == "olga (tenant acme) via console"
    assert "olga (tenant acme) via console" in history
    finished = invoke(url, {"continue": True}, task_id=task_id, headers=CALLER_A)
    assert finished["status"]["state"] == "TASK_STATE_COMPLETED", finished
    html = page(url, f"/tasks/{task_id}", OPERATOR_A).text
    assert "rotation-note" in html  # the record kind among the Artifacts


def test_denying_in_the_console_rejects_the_task(agent: tuple[str, Path]) -> None:
    url, base_dir = agent
    task_id = start_rotation(url, CALLER_A)
    approval = approval_of(base_dir, task_id)
    with httpx.Client(headers=OPERATOR_A, timeout=10) as browser:
        token = form_token(browser, url)
        denied = decide(browser, url, approval.id, token, "deny")
    assert denied.status_code == 303
    ended = invoke(url, {"continue": True}, task_id=task_id, headers=CALLER_A)
    assert ended["status"]["state"] == "TASK_STATE_REJECTED"
    assert error_of(ended)["code"] == "authorization_failed"


@pytest.mark.parametrize(
    "case",
    [
        "no token",
        "no cookie",
        "wrong token",
        "foreign origin",
        "cross-site fetch",
        "the cookie's value as token",
        "a colleague's cookie and token",
        "bad decision",
    ],
)
def test_forms_without_a_valid_csrf_token_are_refused(agent: tuple[str, Path], case: str) -> None:
    url, base_dir = agent
    task_id = start_rotation(url, CALLER_A)
    approval = approval_of(base_dir, task_id)
    target = url + CONSOLE_PATH + f"/approvals/{approval.id}"
    with httpx.Client(headers=OPERATOR_A, timeout=10) as browser:
        token = form_token(browser, url)
        data = {FIELD: token, "decision": "grant"}
        headers: dict[str, str] = {}
        if case == "no token":
            del data[FIELD]
        elif case == "no cookie":
            browser.cookies.clear()
        elif case == "wrong token":
            data[FIELD] = token[:-1] + ("A" if token[-1] != "A" else "B")
        elif case == "foreign origin":
            headers["Origin"] = "https://attacker.example"
        elif case == "cross-site fetch":
            headers["Sec-Fetch-Site"] = "cross-site"
        elif case == "the cookie's value as token":  # the old double-submit rule
            data[FIELD] = browser.cookies[COOKIE]
        elif case == "a colleague's cookie and token":
            # Issue 28: another operator of the same tenant plants her own valid pair,
            # no Origin header: the token is bound to the caller by the server secret.
            with httpx.Client(headers=OPERATOR_A2, timeout=10) as colleague:
                data[FIELD] = form_token(colleague, url)
                planted = colleague.cookies[COOKIE]
            browser.cookies.set(COOKIE, planted, path=CONSOLE_PATH)
        else:
            data["decision"] = "approve-everything"
        refused = browser.post(target, data=data, headers=headers)
    assert refused.status_code == (400 if case == "bad decision" else 403), refused.text
    assert approval_of(base_dir, task_id).state == "pending"


def test_hostile_ids_are_escaped_and_refused(agent: tuple[str, Path]) -> None:
    url, _ = agent
    hostile = "<img src=x onerror=alert(1)>"  # no slash: one path segment
    with httpx.Client(headers=OPERATOR_A, timeout=10) as browser:
        token = form_token(browser, url)
        answer = browser.post(
            url + CONSOLE_PATH + "/approvals/" + hostile, data={FIELD: token, "decision": "grant"}
        )
        assert answer.status_code == 404
        assert "<img" not in answer.text and "&lt;img src=x onerror=alert(1)&gt;" in answer.text
        not_a_form = browser.post(
            url + CONSOLE_PATH + "/approvals/x",
            content=b'{"decision": "grant"}',
            headers={"Content-Type": "application/json"},
        )
        assert not_a_form.status_code == 415
    for path in (f"/tasks/{hostile}", f"/skills/{hostile}", "/tasks/%00%ff"):
        shown = page(url, path, OPERATOR_A)
        assert shown.status_code == 404 and "<img" not in shown.text, path


def test_malformed_forms_are_refused_in_one_line(agent: tuple[str, Path]) -> None:
    url, base_dir = agent
    task_id = start_rotation(url, CALLER_A)
    approval = approval_of(base_dir, task_id)
    target = url + CONSOLE_PATH + f"/approvals/{approval.id}"
    form = {"Content-Type": "application/x-www-form-urlencoded"}
    with httpx.Client(headers=OPERATOR_A, timeout=10) as browser:
        token = form_token(browser, url)
        valid = f"{FIELD}={token}&decision=grant"
        for body in (
            (valid + "".join(f"&f{i}=1" for i in range(20))).encode(),  # too many fields
            valid.encode() + b"&note=\xff\xfe",  # not ASCII
        ):
            refused = browser.post(target, content=body, headers=form)
            assert refused.status_code == 400, refused.text
            assert "at most 16 fields" in refused.text
    assert approval_of(base_dir, task_id).state == "pending"


def test_a_form_body_over_the_limit_is_refused(agent: tuple[str, Path]) -> None:
    url, _ = agent
    answer = httpx.post(
        url + CONSOLE_PATH + "/approvals/x",
        content=b"a=" + b"x" * 4_100_000,
        headers={**OPERATOR_A, "Content-Type": "application/x-www-form-urlencoded"},
        timeout=30,
    )
    assert answer.status_code == 413


def test_without_authentication_loopback_operators_use_the_console(development: str) -> None:
    task_id = start_rotation(development, {})
    html = httpx.get(development + CONSOLE_PATH + "/approvals", timeout=10).text
    assert task_id in html and SECRET not in html
    assert httpx.get(development + CONSOLE_PATH, timeout=10).status_code == 200


REDIS_PASSWORD = "Planted-Redis-Password-9d41"


@pytest.fixture
def redis_with_password(tmp_path: Path) -> Iterator[str]:
    """A redis-server of this test's own on a loopback port, requiring a planted password."""
    import shutil
    import socket
    import subprocess
    import time

    server = shutil.which("redis-server")
    if server is None:
        pytest.skip("redis-server is not installed")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen(
        [
            server,
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--requirepass",
            REDIS_PASSWORD,
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(tmp_path),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                if time.monotonic() > deadline or process.poll() is not None:
                    pytest.skip("redis-server did not start")
                time.sleep(0.05)
        yield f"redis://:{REDIS_PASSWORD}@127.0.0.1:{port}/0"
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_no_page_shows_a_store_password(redis_with_password: str, tmp_path: Path) -> None:
    """Issue 28: [server] limits_store with its Redis password, planted, appears on no page
    (masked as the task store's is), while the agent really counts in that Redis."""
    registry = registry_of([("tests", SKILLS), ("allow", AllowAll()), ("callers", HeaderCallers())])
    config = Config(
        base_dir=tmp_path,
        server=ServerSettings(store="memory", limits_store=redis_with_password),
    )
    with running_agent(registry, config) as url:
        # A call goes through the rate limit, counted in that Redis (the password works).
        assert invoke(url, skill_request("echo", {}, "1.0", digests(url)["echo"]), headers=CALLER_A)
        pages = ["", "/skills", "/skills/rotate_credential", "/tasks", "/approvals"]
        texts = [page(url, path, OPERATOR_A).text for path in pages]
    overview = texts[0]
    assert "limits_store" in overview
    assert f"redis://:***@127.0.0.1:{redis_with_password.rsplit(':', 1)[1]}" in overview
    assert not any(REDIS_PASSWORD in text for text in texts)
