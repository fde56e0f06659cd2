"""``skillrack call`` through an operator's approval, end to end, with real processes.

A real ``skillrack serve`` holds the example vendor, whose ``manage_interface``
``reset_counters`` waits for an operator.  ``skillrack call`` runs in one
process and ``skillrack approvals grant|deny`` in another, as an operator and
a caller would: the call waits (saying so, for whom and for which approval,
on stderr), then finishes on a grant or exits 1 with ``authorization_failed``
on a denial.  ``--no-wait`` prints the waiting task (exit 3) and ``--task-id``
continues it later.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers.example_vendor import example_vendor_env

from skillrack.cli.main import main
from skillrack.testing.serve import skillrack_command, start_agent

RESET = json.dumps(
    {
        "operation": "reset_counters",
        "device_id": "edge-router-1",
        "interface": "eth1",
        "reason": "baseline after optics replacement",
    }
)
WAITING = re.compile(r"waiting for approval (\w+) by role 'operator' \(task ([0-9a-f-]+);")


@pytest.fixture(scope="module")
def agent(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """The example vendor served on loopback; its URL and its configuration file."""
    workdir = tmp_path_factory.mktemp("approvals-agent")
    config = workdir / "skillrack.toml"
    config.write_text('[server]\nstore = "memory"\nrate_per_minute = 1000000\n')
    served = start_agent(
        workdir, env=example_vendor_env(workdir / "site"), args=["--config", str(config)]
    ).wait_ready(120)
    try:
        yield served.url, config
    finally:
        served.stop()


def _call(url: str, *extra: str) -> list[str]:
    return [skillrack_command(), "call", url, "manage_interface", *extra]


def _run(argv: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=120)


def _decide(config: Path, action: str, approval_id: str) -> subprocess.CompletedProcess[str]:
    decide = [skillrack_command(), "approvals", action, approval_id, "--config", str(config)]
    return _run([*decide, "--by", "test-operator", "--reason", "CHG-7 reviewed"])


def _here(capsys: pytest.CaptureFixture[str], *argv: str) -> subprocess.CompletedProcess[str]:
    """The command in this process (quicker than a subprocess where the process is not tested)."""
    try:
        status = main(list(argv))
    except SystemExit as exc:  # argparse's usage error
        status = int(exc.code or 0)
    out, err = capsys.readouterr()
    return subprocess.CompletedProcess(list(argv), status, out, err)


def _call_here(capsys: pytest.CaptureFixture[str], url: str, *extra: str) -> Any:
    return _here(capsys, "call", url, "manage_interface", *extra)


def _decide_here(
    capsys: pytest.CaptureFixture[str], config: Path, action: str, approval_id: str
) -> subprocess.CompletedProcess[str]:
    return _here(
        capsys,
        "approvals",
        action,
        approval_id,
        "--config",
        str(config),
        "--by",
        "test-operator",
        "--reason",
        "CHG-7 reviewed",
    )


def _waiting_call(url: str) -> tuple[subprocess.Popen[str], str, str]:
    """A waiting ``skillrack call`` in the background; the process, approval id and task id."""
    process = subprocess.Popen(
        _call(url, "--args", RESET, "--approval-interval", "0.5"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stderr is not None
    line = process.stderr.readline()  # the call says it waits before it starts waiting
    found = WAITING.search(line)
    if found is None:
        process.kill()
        out, err = process.communicate()
        raise AssertionError(f"no waiting line: {line!r} {err!r} {out!r}")
    return process, found.group(1), found.group(2)


def _finish(process: subprocess.Popen[str]) -> tuple[int, Any, str]:
    out, err = process.communicate(timeout=60)
    return process.returncode, json.loads(out), err


def test_call_waits_for_the_approval_and_finishes_once_granted(
    agent: tuple[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    url, config = agent
    process, approval_id, task_id = _waiting_call(url)
    try:
        listed = _here(capsys, "approvals", "list", "--json", "--config", str(config))
        pending = {a["id"]: a for a in json.loads(listed.stdout)}
        assert pending[approval_id]["task_id"] == task_id
        assert process.poll() is None  # still waiting: nothing was decided
        granted = _decide(config, "grant", approval_id)
        assert granted.returncode == 0 and granted.stdout.startswith(f"{approval_id} granted")
        status, result, err = _finish(process)
    finally:
        process.kill()
    assert status == 0, err
    assert result["task_id"] == task_id and result["state"] == "TASK_STATE_COMPLETED"
    assert result["result"]["counters_reset"] is True
    assert "Traceback" not in err


def test_call_exits_1_with_authorization_failed_once_denied(agent: tuple[str, Path]) -> None:
    url, config = agent
    process, approval_id, task_id = _waiting_call(url)
    try:
        denied = _decide(config, "deny", approval_id)
        assert denied.returncode == 0 and denied.stdout.startswith(f"{approval_id} denied")
        status, error, err = _finish(process)
    finally:
        process.kill()
    assert status == 1, err
    assert error["error"]["code"] == "authorization_failed"
    assert error["error"]["task_id"] == task_id
    assert error["error"]["state"] == "TASK_STATE_REJECTED"


def test_no_wait_returns_the_task_and_task_id_continues_it(
    agent: tuple[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    url, config = agent
    started = _call_here(capsys, url, "--args", RESET, "--no-wait")
    assert started.returncode == 3, started.stderr
    task = json.loads(started.stdout)
    assert task["state"] == "TASK_STATE_INPUT_REQUIRED"
    waiting = task["input_request"]["skillrack_approval"]
    assert waiting["approver"] == "operator" and waiting["operation"] == "reset_counters"
    task_id, approval_id = task["task_id"], waiting["approval_id"]

    # Still undecided: --task-id --no-wait looks again and says the same.
    again = _call_here(capsys, url, "--task-id", task_id, "--no-wait")
    assert again.returncode == 3, again.stderr
    assert json.loads(again.stdout)["input_request"]["skillrack_approval"]["approval_id"] == (
        approval_id
    )

    assert _decide_here(capsys, config, "grant", approval_id).returncode == 0
    finished = _call_here(capsys, url, "--task-id", task_id)
    assert finished.returncode == 0, finished.stderr
    result = json.loads(finished.stdout)
    assert result["task_id"] == task_id and result["state"] == "TASK_STATE_COMPLETED"
    assert result["result"]["counters_reset"] is True
    # A finished task continued once more is judged as it is: nothing runs twice.
    repeated = _call_here(capsys, url, "--task-id", task_id)
    assert repeated.returncode == 0 and json.loads(repeated.stdout)["result"] == result["result"]

    # Deny after the grant: refused, saying how it was decided, never printing "granted".
    late = _decide_here(capsys, config, "deny", approval_id)
    assert late.returncode == 1
    assert "granted" not in late.stdout + late.stderr
    assert "already decided: approved by test-operator" in late.stderr
    assert "'deny' changed nothing" in late.stderr


def test_a_denied_task_continued_later_is_authorization_failed(
    agent: tuple[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    url, config = agent
    started = _call_here(capsys, url, "--args", RESET, "--no-wait")
    task = json.loads(started.stdout)
    approval_id = task["input_request"]["skillrack_approval"]["approval_id"]
    assert _decide_here(capsys, config, "deny", approval_id).returncode == 0
    continued = _call_here(capsys, url, "--task-id", task["task_id"])
    assert continued.returncode == 1
    assert json.loads(continued.stdout)["error"]["code"] == "authorization_failed"
    late = _decide_here(capsys, config, "grant", approval_id)
    assert late.returncode == 1 and "already decided: refused by test-operator" in late.stderr


@pytest.mark.parametrize(
    "task_id",
    ["no-such-task", "../../etc/passwd", "x" * 5000, "' OR 1=1 --", "\u202etask"],
)
def test_task_id_of_no_task_is_refused_in_one_line(
    agent: tuple[str, Path], capsys: pytest.CaptureFixture[str], task_id: str
) -> None:
    url, _ = agent
    refused = _call_here(capsys, url, "--task-id", task_id)
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert "error" in json.loads(refused.stdout)


def test_call_needs_args_or_a_task_id(
    agent: tuple[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    url, _ = agent
    refused = _call_here(capsys, url)
    assert refused.returncode == 2
    assert "--args" in refused.stderr and "--task-id" in refused.stderr
    for interval in ("0", "-1", "nan", "inf", "3601", "soon", ""):
        bad = _call_here(capsys, url, "--args", RESET, "--approval-interval", interval)
        assert bad.returncode == 2, interval
        assert "--approval-interval" in bad.stderr and "Traceback" not in bad.stderr
