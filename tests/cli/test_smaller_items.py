"""The smaller command-line findings of issue 31, one test each (what a new user ran into)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from helpers.agent_harness import running_agent
from helpers.agent_skills import AllowAll, TestSkills
from helpers.builders import registry_of
from helpers.served_process import serving
from helpers.waiting import wait_until

from skillrack import AuthorizationRequest, BaseSkill, Decision, hookimpl
from skillrack.cli import main as cli
from skillrack.serve.bindings.metrics_endpoint import metrics_access
from skillrack.serve.security.approvals import ApprovalStore


def _help(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    with pytest.raises(SystemExit):
        cli.main([*argv, "--help"])
    return capsys.readouterr().out


def test_call_help_shows_no_object_repr(capsys: pytest.CaptureFixture[str]) -> None:
    text = _help(capsys, "call")
    assert "<object object" not in text and "object at 0x" not in text
    assert "--args JSON|@FILE" in text


def test_help_lists_exit_status_3(capsys: pytest.CaptureFixture[str]) -> None:
    text = " ".join(_help(capsys).split())
    assert "3 waiting" in text and "130 interrupted" in text


def _pending(path: Path) -> str:
    store = ApprovalStore(path)
    approval = store.request(
        task_id="task-1",
        skill_id="manage",
        skill_version="1.0",
        operation="delete",
        caller="alice",
        tenant="acme",
        resources={"/device_id": "r1"},
    )
    return approval.id


def test_granting_a_granted_approval_exits_1_already_decided(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "approvals.db"
    approval_id = _pending(store)
    grant = ["approvals", "grant", approval_id, "--store", str(store), "--reason", "ok"]
    assert cli.main([*grant, "--by", "bob"]) == 0
    capsys.readouterr()
    assert cli.main([*grant, "--by", "carol"]) == 1
    captured = capsys.readouterr()
    assert "already decided: approved by bob" in captured.err and captured.out == ""
    assert cli.main(["approvals", "list", "--all", "--store", str(store), "--json"]) == 0
    [approval] = json.loads(capsys.readouterr().out)
    assert [d["by"] for d in approval["decisions"]] == ["bob via cli"]  # not carol's


def test_approval_id_is_named_approval_id_in_every_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "approvals.db"
    approval_id = _pending(store)
    assert cli.main(["approvals", "list", "--store", str(store), "--json"]) == 0
    [listed] = json.loads(capsys.readouterr().out)
    assert listed["approval_id"] == approval_id
    deny = ["approvals", "deny", approval_id, "--store", str(store), "--reason", "no", "--json"]
    assert cli.main(deny) == 0
    assert json.loads(capsys.readouterr().out)["approval_id"] == approval_id


def test_approvals_list_without_a_store_creates_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exited:
        cli.main(["approvals", "list"])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert "no approvals store at" in err and "--config" in err
    assert list(tmp_path.iterdir()) == []
    # With the agent's configuration, before any approval: says so, creates nothing.
    (tmp_path / "skillrack.toml").write_text("[server]\n")
    assert cli.main(["approvals", "list", "--config", "skillrack.toml"]) == 0
    assert "no approvals yet" in capsys.readouterr().err
    assert [p.name for p in tmp_path.iterdir()] == ["skillrack.toml"]
    with pytest.raises(SystemExit):
        cli.main(["approvals", "grant", "x", "--config", "skillrack.toml", "--reason", "r"])
    assert [p.name for p in tmp_path.iterdir()] == ["skillrack.toml"]


class _Denier:
    @hookimpl
    def authorize_invocation(self, request: AuthorizationRequest) -> Decision:
        if request.kind == "base":
            return Decision.deny("no help for you")
        return Decision.allow()


class _Helpdesk:
    @hookimpl
    def register_skills(self, register: Any) -> None:
        async def answer(message: Any, context: Any) -> str:
            return "hello"

        register(BaseSkill(id="help", name="Help", description="help desk", handler=answer))


def test_a_denied_text_call_prints_the_error_object(capsys: pytest.CaptureFixture[str]) -> None:
    registry = registry_of([("helpdesk", _Helpdesk()), ("deny", _Denier())])
    with running_agent(registry) as url:
        status = cli.main(["call", url, "help", "--text", "hi"])
    out = json.loads(capsys.readouterr().out)
    assert status == 1 and set(out) == {"error"}
    assert out["error"]["code"] == "authorization_failed"
    assert out["error"]["state"] == "TASK_STATE_REJECTED" and out["error"]["task_id"]


def test_json_log_is_json_lines_banner_and_access_included(tmp_path: Path) -> None:
    """Every line ``serve --log-format json`` writes is JSON; a request's parts are fields."""
    with serving(tmp_path, args=("--log-format", "json"), log_level="info") as agent:
        httpx.get(agent.url + "/.well-known/agent-card.json", timeout=10)
        wait_until(
            lambda: any('"uvicorn.access"' in x for x in agent.log.read_text().splitlines()),
            "an access line in the log",
        )
        lines = agent.log.read_text().splitlines()
    records = [json.loads(line) for line in lines if line.strip()]  # every line parses
    banner = [r for r in records if r["logger"] == "skillrack.serve"]
    assert banner[0]["message"].startswith("skillrack serving at")
    assert any(r["message"].startswith("metrics: ") for r in banner)
    [access] = [r for r in records if r["logger"] == "uvicorn.access"][:1]
    assert (access["method"], access["path"], access["status"]) == (
        "GET",
        "/.well-known/agent-card.json",
        200,
    )


def test_the_banner_says_who_may_read_metrics(tmp_path: Path) -> None:
    """Issue 31: the banner said loopback-only metrics though a key was needed."""
    assert metrics_access(registry_of([])) == (
        "loopback clients only, no authentication plugin configured"
    )
    keys = tmp_path / "keys.toml"
    keys.write_text('[[key]]\nsha256 = "' + "0" * 64 + '"\nidentity = "a"\nroles = ["operator"]\n')
    config = tmp_path / "skillrack.toml"
    config.write_text(f'[plugins.api_keys]\nfile = "{keys}"\n')
    with serving(tmp_path, config=config) as agent:
        text = agent.log.read_text()
    [line] = [x for x in text.splitlines() if "metrics:" in x]
    assert "callers with the operator role" in line and "loopback" not in line


ROOT = Path(__file__).resolve().parents[2]


def _doctor(tmp_path: Path, config: str, *flags: str) -> int:
    path = tmp_path / "skillrack.toml"
    path.write_text(config)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SKILLRACK_LOAD_PLUGINS", "")
        # The example vendor's module, importable where its distribution is not installed
        # (tox's core environment holds the host only).
        patch.syspath_prepend(str(ROOT / "example_vendor_plugin" / "src"))
        return cli.main(["doctor", "--config", str(path), *flags])


def test_doctor_names_the_postgresql_approvals_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _doctor(tmp_path, '[server]\nstore = "postgresql://u:pw@127.0.0.1:9/agentdb"\n')
    [line] = [x for x in capsys.readouterr().out.splitlines() if "approvals store" in x]
    assert "agentdb" in line and "table" in line
    assert "skillrack-approvals.db" not in line and "pw" not in line


def test_doctor_quiet_and_an_unknown_skill_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = '[plugins]\nbuiltin = ["skillrack_example_vendor"]\n\n'
    config += '[skills.evaluate_resource_conditon]\nsecurity = ["mtls"]\n'
    status = _doctor(tmp_path, config, "--quiet")
    out = capsys.readouterr().out.splitlines()
    assert status == 1
    assert all(line.split()[0] in ("FAIL", "WARN") for line in out[1:-1])
    [fail] = [line for line in out if line.split()[0] == "FAIL"]
    assert "[skills.evaluate_resource_conditon] names no skill" in fail
    assert 'did you mean "evaluate_resource_condition"?' in fail
    assert out[-1] == "1 problem(s)"


def test_release_keys_sign_bundles_and_verify_needs_a_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`keys new --release` makes the bundle key; `plugin verify` without a key exits 1."""
    key = tmp_path / "release-key.pem"
    assert cli.main(["keys", "new", "--release", str(key)]) == 0
    said = capsys.readouterr().out
    assert f"plugin bundle ... --key {key}" in said and "plugin verify --jwks" in said
    jwks = tmp_path / "release-key.jwks.json"
    out = tmp_path / "bundle"
    tree = str(ROOT / "example_vendor_plugin")  # its source tree: installed or not
    assert cli.main(["plugin", "bundle", tree, "--out", str(out), "--key", str(key)]) == 0
    capsys.readouterr()
    assert cli.main(["plugin", "verify", str(out)]) == 1
    captured = capsys.readouterr()
    assert "signature was not checked" in captured.err and "verified" not in captured.out
    assert cli.main(["plugin", "verify", str(out), "--no-signature"]) == 0
    assert cli.main(["plugin", "verify", str(out), "--jwks", str(jwks)]) == 0
    assert capsys.readouterr().out.rstrip().endswith("verified")


def test_skillrack_started_metadata_is_documented_as_sent(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The key the executor writes is the one docs/wire.md documents, with its members."""
    from skillrack.serve.execution.task_record import SKILL_METADATA_KEY, STARTED_METADATA_KEY

    wire = (Path(__file__).parents[2] / "docs" / "wire.md").read_text()
    assert f'`metadata.{STARTED_METADATA_KEY}` `{{"identity", "tenant", "at"}}`' in wire
    assert f"`metadata.{SKILL_METADATA_KEY}`" in wire
    registry = registry_of([("tests", TestSkills()), ("allow", AllowAll())])
    with running_agent(registry) as url:
        assert cli.main(["call", url, "crash", "--args", "{}"]) == 1
        tasks = httpx.get(url + "/tasks", headers={"A2A-Version": "1.0"}, timeout=10).json()
    assert len(tasks["tasks"]) == 2  # describe_skill, then the call
    for task in tasks["tasks"]:
        assert set(task["metadata"][STARTED_METADATA_KEY]) == {"identity", "tenant", "at"}
