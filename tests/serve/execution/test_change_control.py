"""Change control (issue 28, items 1-3), against real served agents.

Several identities, tenants and roles call one agent through ``X-Test-Caller``
(:mod:`helpers.header_callers`); approvals are decided in the console (HTML
form posts with the page's CSRF token, as a browser sends them) and with
``skillrack approvals`` (in this process).  What each test checks is read
back from the agent (the task over A2A, the console page, the CLI's output,
the audit log), never from the store object the agent writes through.
"""

from __future__ import annotations

import html
import json
import logging
import re
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from helpers.agent_harness import running_agent
from helpers.agent_skills import AllowAll
from helpers.builders import SkillsPlugin, registry_of, simple_skill
from helpers.header_callers import HeaderCallers, caller_header

from skillrack import Authority, hookimpl
from skillrack.cli import main as cli
from skillrack.host.config import Config, ServerSettings
from skillrack.serve.console import CONSOLE_PATH
from skillrack.serve.console.csrf import COOKIE, FIELD
from skillrack.serve.console.routes import APPROVAL_PAGE_SIZE
from skillrack.serve.security.authz import SKILL_SCOPE, AuthorizationRequest, Decision
from skillrack.testing.serve import error_of, invoke, rpc, send, skill_request
from skillrack_plugins import approval_rules

#: Skill ids whose handler ran (a call refused or waiting never gets here).
ran: list[str] = []


async def _run(arguments: Any, context: Any) -> Any:
    ran.append(context.skill_id)
    return {"done": context.skill_id}


COUNTED = {
    "type": "object",
    "required": ["device", "count"],
    "properties": {"device": {"type": "string"}, "count": {"type": "integer"}},
    "additionalProperties": False,
}

SKILLS = SkillsPlugin(
    simple_skill(
        "reset", authority=Authority("execute", approval_may_be_required=True), handler=_run
    ),
    simple_skill("show_config", authority=Authority("observe_only"), handler=_run),
    simple_skill("counted", input_schema=COUNTED, resources=("/device",), handler=_run),
)
RULES = {
    "rule": [
        {
            "effect": "require",
            "skills": ["show_config"],
            "approvals_required": 2,
            "approver_roles": ["network-lead"],
            "description": "config reads are reviewed by two leads",
        }
    ]
}


class LabTeamOnly:
    """A policy that allows every skill at the skill stage, and the call only to ``lab-team``."""

    @hookimpl
    def authorize_invocation(self, request: AuthorizationRequest) -> Decision | None:
        if request.skill_id != "counted":
            return None
        if request.scope == SKILL_SCOPE:
            return Decision.allow("decided on the call")
        return Decision.allow() if request.caller.identity == "lab-team" else Decision.deny()


ALICE = caller_header("acme", "alice", "operator")  # asks, and holds the operator role
OLGA = caller_header("acme", "olga", "operator")
NINA = caller_header("acme", "nina", "operator", "network-lead")  # the console needs operator
CARL = caller_header("acme", "carl")
VERA = caller_header("acme", "vera", "viewer")
PARKER = caller_header("acme", "parker")
LAB = caller_header("acme", "lab-team")
MAX_PENDING = 3


def _registry() -> Any:
    return registry_of(
        [
            ("tests", SKILLS),
            ("allow", AllowAll()),
            ("lab", LabTeamOnly()),
            ("approval_rules", approval_rules.create(RULES, Path("."))),
            ("callers", HeaderCallers()),
        ]
    )


@pytest.fixture(scope="module")
def agent(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path, Any]]:
    base_dir = tmp_path_factory.mktemp("change")
    registry = _registry()
    server = ServerSettings(store="memory", max_pending_approvals=MAX_PENDING)
    with running_agent(registry, Config(base_dir=base_dir, server=server)) as url:
        yield url, base_dir, registry


@pytest.fixture(autouse=True)
def _fresh() -> None:
    ran.clear()


def call(url: str, registry: Any, skill: str, who: dict[str, str], args: Any = None) -> Any:
    digest = registry.skills[skill].interface_digest
    return invoke(url, skill_request(skill, args or {}, "1.0", digest), headers=who)


def follow_up(url: str, task_id: str, who: dict[str, str]) -> httpx.Response:
    return send(url, task_id=task_id, parts=[{"text": "decided?"}], headers=who)


def waiting(task: Any) -> dict[str, Any]:
    assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED", task
    found: dict[str, Any] = task["status"]["message"]["parts"][0]["data"]["skillrack_approval"]
    return found


def get_task(url: str, task_id: str, who: dict[str, str]) -> Any:
    answer = rpc(url, "GetTask", {"id": task_id}, headers=who)
    assert "result" in answer, answer
    return answer["result"]


def console_decide(
    url: str, who: dict[str, str], approval_id: str, decision: str, reason: str | None
) -> httpx.Response:
    """Open the Approvals page as ``who``, then press Grant or Deny with that page's token."""
    with httpx.Client(headers=who, timeout=30) as browser:
        page = browser.get(url + CONSOLE_PATH + "/approvals")
        assert page.status_code == 200, page.text
        assert browser.cookies.get(COOKIE)  # the visitor cookie the token is bound to
        found = re.search(rf'name="{FIELD}" value="([^"]+)"', page.text)
        form = {FIELD: found.group(1) if found else "", "decision": decision}
        if reason is not None:
            form["reason"] = reason
        return browser.post(url + CONSOLE_PATH + f"/approvals/{approval_id}", data=form)


def cli_decide(
    capsys: pytest.CaptureFixture[str], base_dir: Path, *argv: str
) -> tuple[int, str, str]:
    store = str(base_dir / "skillrack-approvals.db")
    try:
        status = cli.main(["approvals", *argv, "--store", store])
    except SystemExit as exc:
        status = int(exc.code or 0)
    out, err = capsys.readouterr()
    return status, out, err


def error_text(page: httpx.Response) -> str:
    """The one-line explanation of a console error page."""
    return html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page.text)))


# 1. Separation of duties, N approvers, reasons ---------------------------------------------------


def test_the_identity_that_asked_cannot_approve_itself(
    agent: tuple[str, Path, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    url, base_dir, registry = agent
    task = call(url, registry, "reset", ALICE)
    approval = waiting(task)["approval_id"]
    # The console: alice holds the operator role, but she asked.
    refused = console_decide(url, ALICE, approval, "grant", "looks fine to me")
    assert refused.status_code == 403
    assert "separation of duties" in error_text(refused)
    # The CLI, under her name.
    status, _, err = cli_decide(
        capsys, base_dir, "grant", approval, "--by", "alice", "--reason", "x"
    )
    assert status == 1 and "separation of duties" in err and len(err.strip().splitlines()) == 1
    # Nothing was decided: her follow-up still waits, and the handler never ran.
    assert waiting(task_of(follow_up(url, task["id"], ALICE)))["approvals_granted"] == 0
    assert ran == []
    # Another operator may.
    granted = console_decide(url, OLGA, approval, "grant", "CHG-42 reviewed")
    assert granted.status_code == 303, granted.text
    done = task_of(follow_up(url, task["id"], ALICE))
    assert done["status"]["state"] == "TASK_STATE_COMPLETED" and ran == ["reset"]


def test_every_decision_needs_a_reason(
    agent: tuple[str, Path, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    url, base_dir, registry = agent
    task = call(url, registry, "reset", CARL)
    approval = waiting(task)["approval_id"]
    for reason in (None, "", "   "):
        answer = console_decide(url, OLGA, approval, "grant", reason)
        assert answer.status_code == 400 and "needs a reason" in error_text(answer)
    status, _, err = cli_decide(capsys, base_dir, "grant", approval, "--by", "olga")
    assert status == 2 and "--reason" in err
    assert waiting(task_of(follow_up(url, task["id"], CARL)))["approvals_granted"] == 0
    denied = console_decide(url, OLGA, approval, "deny", "no change window today")
    assert denied.status_code == 303
    final = task_of(follow_up(url, task["id"], CARL))
    assert final["status"]["state"] == "TASK_STATE_REJECTED"
    assert error_of(final)["code"] == "authorization_failed" and ran == []


def test_two_approvers_each_with_a_role_the_rule_names(
    agent: tuple[str, Path, Any],
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """An observe_only skill a rule puts under two network leads' approval (items 1 and 2)."""
    caplog.set_level(logging.INFO, logger="skillrack.audit")
    url, base_dir, registry = agent
    task = call(url, registry, "show_config", CARL)
    asked = waiting(task)
    assert asked["approvals_required"] == 2 and asked["approver_roles"] == ["network-lead"]
    approval = asked["approval_id"]
    # An operator without the rule's role cannot decide it, in the console or the CLI.
    wrong_role = console_decide(url, OLGA, approval, "grant", "fine")
    assert wrong_role.status_code == 403 and "role 'network-lead'" in error_text(wrong_role)
    status, _, err = cli_decide(
        capsys, base_dir, "grant", approval, "--by", "otto", "--reason", "fine"
    )
    assert status == 1 and "role 'network-lead'" in err
    # One lead grants: still waiting, one of two.
    assert console_decide(url, NINA, approval, "grant", "diff reviewed").status_code == 303
    still = waiting(task_of(follow_up(url, task["id"], CARL)))
    assert (still["approvals_granted"], still["approvals_required"]) == (1, 2)
    # The same lead again does not count twice.
    twice = console_decide(url, NINA, approval, "grant", "really")
    assert twice.status_code == 403 and "distinct approvers" in error_text(twice)
    assert ran == []
    # A second lead, through the CLI, completes it.
    status, out, _ = cli_decide(
        capsys,
        base_dir,
        "grant",
        approval,
        "--by",
        "nils",
        "--role",
        "network-lead",
        "--reason",
        "second look done",
    )
    assert status == 0 and out.startswith(f"{approval} granted")
    done = task_of(follow_up(url, task["id"], CARL))
    assert done["status"]["state"] == "TASK_STATE_COMPLETED" and ran == ["show_config"]
    # Every approver, reason and time: the console, the CLI and the audit log.
    page = httpx.get(url + CONSOLE_PATH + "/approvals", headers=OLGA, timeout=30).text
    row = page[page.index(f"<code>{approval}</code>") :].split("</tr>")[0]
    stamp = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z"
    assert re.search(rf"grant by nina \(tenant acme\) via console at {stamp}: diff reviewed", row)
    assert re.search(rf"grant by nils via cli at {stamp}: second look done", row)
    status, out, _ = cli_decide(capsys, base_dir, "list", "--all", "--json")
    [listed] = [a for a in json.loads(out) if a["id"] == approval]
    assert [(d["by"], d["reason"]) for d in listed["decisions"]] == [
        ("nina (tenant acme) via console", "diff reviewed"),
        ("nils via cli", "second look done"),
    ]
    assert all(re.fullmatch(stamp, d["at"]) for d in listed["decisions"])
    lines = [r.getMessage() for r in caplog.records if r.name == "skillrack.audit"]
    [line] = [x for x in lines if approval in x and "granted" in x][:1]
    assert "nina (tenant acme) via console" in line and "'diff reviewed'" in line
    assert "nils via cli" in line and "'second look done'" in line


# 1. Follow-ups only from the caller who started the task -----------------------------------------


@pytest.mark.parametrize("intruder", [VERA, OLGA], ids=["viewer", "operator"])
def test_a_follow_up_from_another_caller_of_the_tenant_is_refused(
    agent: tuple[str, Path, Any], intruder: dict[str, str]
) -> None:
    url, _, registry = agent
    task = call(url, registry, "reset", CARL)
    approval = waiting(task)["approval_id"]
    before = get_task(url, task["id"], CARL)
    answer = follow_up(url, task["id"], intruder).json()
    assert "error" in answer and "result" not in answer, answer
    assert "authorization_failed" in json.dumps(answer["error"])
    after = get_task(url, task["id"], CARL)
    assert after["status"] == before["status"] and len(after["history"]) == len(before["history"])
    # Granted, the task still runs only for its caller.
    assert console_decide(url, OLGA, approval, "grant", "ok for carl").status_code == 303
    assert "error" in follow_up(url, task["id"], intruder).json() and ran == []
    done = task_of(follow_up(url, task["id"], CARL))
    assert done["status"]["state"] == "TASK_STATE_COMPLETED" and ran == ["reset"]


def test_a_cancel_from_another_caller_of_the_tenant_is_refused(
    agent: tuple[str, Path, Any],
) -> None:
    url, _, registry = agent
    task = call(url, registry, "reset", CARL)
    waiting(task)
    before = get_task(url, task["id"], CARL)
    answer = rpc(url, "CancelTask", {"id": task["id"]}, headers=VERA)
    assert "error" in answer and "authorization_failed" in json.dumps(answer["error"]), answer
    after = get_task(url, task["id"], CARL)
    assert after["status"] == before["status"]


# 1. At most max_pending_approvals per caller -----------------------------------------------------


def test_a_caller_cannot_park_more_than_max_pending_approvals(
    agent: tuple[str, Path, Any],
) -> None:
    url, _, registry = agent
    parked = [call(url, registry, "reset", PARKER) for _ in range(MAX_PENDING)]
    assert all(waiting(task) for task in parked)
    over = call(url, registry, "reset", PARKER)
    assert over["status"]["state"] == "TASK_STATE_REJECTED"
    error = error_of(over)
    assert (
        error["code"] == "resource_limit_exceeded" and "max_pending_approvals" in error["message"]
    )
    # Another caller of the same tenant is not held back by parker's.
    assert waiting(call(url, registry, "reset", LAB))


# 3. No field details to a caller who will be denied ---------------------------------------------


def test_field_details_only_for_a_caller_the_call_stage_allows(
    agent: tuple[str, Path, Any],
) -> None:
    """The policy allows every caller at the skill stage and only lab-team at the call stage:
    the others learn authorization_failed, never the input_invalid pointers."""
    url, _, registry = agent
    invalid = {"device": 7, "count": "many"}
    for who in (CARL, OLGA):
        task = call(url, registry, "counted", who, invalid)
        assert task["status"]["state"] == "TASK_STATE_REJECTED"
        error = error_of(task)
        assert error["code"] == "authorization_failed" and "details" not in error
        assert "/count" not in json.dumps(task["status"]) and "integer" not in json.dumps(task)
    allowed = error_of(call(url, registry, "counted", LAB, invalid))
    assert allowed["code"] == "input_invalid"
    assert {"/device", "/count"} <= {d["instance_path"] for d in allowed["details"]}


# 1. Approvals that expire ------------------------------------------------------------------------


def test_an_expired_approval_ends_the_task_saying_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    registry = _registry()
    server = ServerSettings(store="memory", approval_ttl=1.0)
    with running_agent(registry, Config(base_dir=tmp_path, server=server)) as url:
        task = call(url, registry, "reset", CARL)
        approval = waiting(task)["approval_id"]
        assert waiting(task)["expires_at"]
        time.sleep(1.3)
        status, _, err = cli_decide(
            capsys, tmp_path, "grant", approval, "--by", "o", "--reason", "x"
        )
        assert status == 1 and "expired" in err
        final = task_of(follow_up(url, task["id"], CARL))
    assert final["status"]["state"] == "TASK_STATE_REJECTED"
    error = error_of(final)
    assert error["code"] == "authorization_failed" and "expired" in error["message"]
    assert ran == []


# The Approvals page stays bounded with many waiting ----------------------------------------------


def test_the_approvals_page_with_1500_waiting_renders_a_bounded_page(tmp_path: Path) -> None:
    registry = _registry()
    with running_agent(registry, Config(base_dir=tmp_path)) as url:
        call(url, registry, "reset", CARL)  # the agent made the table; fill it as a flood would
        created = "2026-01-01T00:00:00.000Z"
        with sqlite3.connect(tmp_path / "skillrack-approvals.db") as db:
            db.executemany(
                "INSERT INTO approvals (id, task_id, skill_id, skill_version, operation, caller,"
                " tenant, resources, state, created_at, expires_at) VALUES"
                " (?,?,?,?,?,?,?,?,?,?,?)",
                [
                    (
                        f"flood{n:07d}",
                        f"task-{n}",
                        "reset",
                        "1.0",
                        None,
                        "parker",
                        "acme",
                        "{}",
                        "pending",
                        created,
                        "2999-01-01T00:00:00.000Z",
                    )
                    for n in range(1500)
                ],
            )
        started = time.monotonic()
        first = httpx.get(url + CONSOLE_PATH + "/approvals", headers=OLGA, timeout=60)
        elapsed = time.monotonic() - started
        last = httpx.get(url + CONSOLE_PATH + "/approvals?page=999", headers=OLGA, timeout=60)
    assert first.status_code == 200 and last.status_code == 200
    for answer in (first, last):
        rows = answer.text.count('<section class="card"')
        assert 0 < rows <= APPROVAL_PAGE_SIZE
    assert "1501 waiting" in first.text and 'href="/-/console/approvals?page=2"' in first.text
    assert len(first.content) < 500_000 and elapsed < 3.0, (len(first.content), elapsed)


def task_of(response: httpx.Response) -> Any:
    body = response.json()
    assert "result" in body, body
    return body["result"]["task"]
