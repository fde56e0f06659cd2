"""skillrack describe / call / check against a real agent, honest or broken."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers.builders import VECTOR_DIGEST
from helpers.tamper import Tamper

from skillrack.cli import main as cli

ARGS = {
    "resource_id": "network-resource-123",
    "condition": {"metric": "utilization", "operator": "gte", "threshold": 80, "unit": "percent"},
}


@pytest.fixture
def base(agent: tuple[str, Tamper]) -> Iterator[str]:
    agent[1].clear()
    yield agent[0]
    agent[1].clear()


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, Any]:
    status = cli.main(list(argv))
    out = capsys.readouterr().out
    try:
        return status, json.loads(out)
    except ValueError:
        return status, out


def test_describe_json(base: str, capsys: pytest.CaptureFixture[str]) -> None:
    status, out = run(capsys, "describe", base, "evaluate_resource_condition", "--json")
    assert status == 0 and out["interface_digest"] == VECTOR_DIGEST
    assert out["interface"]["skill_id"] == "evaluate_resource_condition"


def test_call_prints_result_and_records(
    base: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "args.json"
    path.write_text(json.dumps(ARGS))
    for extra in ([], ["--stream"], ["--poll"]):
        status, out = run(
            capsys, "call", base, "evaluate_resource_condition", "--args", f"@{path}", *extra
        )
        assert status == 0
        assert set(out) == {"task_id", "state", "result", "records"}
        assert out["state"] == "TASK_STATE_COMPLETED"
        [ref] = out["result"]["supporting_record_refs"]
        assert out["records"][ref]["record_id"] == ref


def test_call_failures_print_error_objects(base: str, capsys: pytest.CaptureFixture[str]) -> None:
    status, out = run(capsys, "call", base, "no_such_skill", "--args", "{}")
    assert status == 1 and out == {
        "error": {
            "code": "skill_not_advertised",
            "message": "skill 'no_such_skill' is not advertised by this agent's card",
        }
    }
    status, out = run(capsys, "call", base, "crash", "--args", "{}")
    assert status == 1 and out["error"]["code"] == "output_invalid"
    assert out["error"]["state"] == "TASK_STATE_FAILED" and out["error"]["task_id"]
    status, out = run(capsys, "call", "http://127.0.0.1:9", "x", "--args", "{}")
    assert status == 1 and out["error"]["code"] == "transport_error"


@pytest.mark.parametrize(
    "argv",
    [
        ["call", "http://x", "s"],
        ["call", "http://x", "s", "--args", "{not json"],
        ["call", "http://x", "s", "--args", "{}", "--stream", "--poll"],
        ["call", "http://x", "s", "--args", "{}", "--header", "no-colon"],
    ],
)
def test_call_usage_errors_exit_2(argv: list[str]) -> None:
    with pytest.raises(SystemExit) as info:
        cli.main(argv)
    assert info.value.code == 2


def test_check_passes_against_skillrack(base: str, capsys: pytest.CaptureFixture[str]) -> None:
    status, out = run(capsys, "check", base, "--json")
    assert status == 0 and out["passed"] is True
    requirements = {item["requirement"] for item in out["items"]}
    assert any("interface_mismatch" in r for r in requirements)
    assert any("input_invalid" in r for r in requirements)
    assert any("skill_not_advertised" in r for r in requirements)


def test_check_names_the_failed_requirement(
    agent: tuple[str, Tamper], base: str, capsys: pytest.CaptureFixture[str]
) -> None:
    def edit(data: Any) -> Any:
        data["result"]["interface"]["authority"]["default_mode"] = "execute"
        return data

    agent[1].describe = edit
    status, out = run(capsys, "check", base, "--json")
    assert status == 1 and out["passed"] is False
    failed = [item for item in out["items"] if item["passed"] is False]
    assert failed and all("digest" in item["requirement"] for item in failed)
    assert "computed digest" in failed[0]["detail"]


def test_check_against_a_card_without_the_extension(
    agent: tuple[str, Tamper], base: str, capsys: pytest.CaptureFixture[str]
) -> None:
    def edit(card: Any) -> Any:
        card["capabilities"]["extensions"] = []
        return card

    agent[1].card = edit
    status, out = run(capsys, "check", base)
    assert status == 1
    assert "FAIL card advertises the schema-interface extension" in out
    assert "not_schema_interface_agent" in out


def test_check_catches_a_wrong_error_code(
    agent: tuple[str, Tamper], base: str, capsys: pytest.CaptureFixture[str]
) -> None:
    def edit(task: Any) -> None:
        error = task["status"]["message"]["parts"][0]["data"]["error"]
        if error["code"] == "interface_mismatch":
            error["code"] = "input_invalid"

    agent[1].rejected = edit
    status, out = run(capsys, "check", base, "--json")
    assert status == 1
    failed = {item["requirement"] for item in out["items"] if item["passed"] is False}
    assert failed == {"a stale interface_digest is rejected with interface_mismatch"}


def test_call_into_a_reader_that_went_away_ends_quietly(base: str) -> None:
    """``skillrack call ... | head``: the answer has no reader; status 1, no traceback."""
    import subprocess

    from skillrack.testing.serve import skillrack_command

    process = subprocess.Popen(
        [
            skillrack_command(),
            "call",
            base,
            "evaluate_resource_condition",
            "--args",
            json.dumps(ARGS),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdout is not None and process.stderr is not None
    process.stdout.close()  # before the result is printed
    err = process.stderr.read().decode(errors="replace")
    process.stderr.close()
    assert process.wait(timeout=120) == 1
    assert "Traceback" not in err and "BrokenPipe" not in err, err
