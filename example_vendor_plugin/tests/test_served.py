"""The skills served by the real ``skillrack serve`` command, driven over raw HTTP.

An operator's path end to end: the installed command, started as a subprocess
with only this distribution loaded, on a free loopback port; the Agent Card;
``describe_skill``; and every skill through JSON-RPC (``/``) and HTTP+JSON
(``/message:send``), including streaming, cancellation and input-required.
Nothing but httpx stands between the test and the wire.
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
from serving import served

from skillrack import Skill
from skillrack.testing import (
    CARD_PATH,
    EXTENSION_URI,
    VerifiedInterface,
    assemble,
    digest_of,
    error_of,
    invoke,
    message,
    rpc,
    send,
    skillrack_command,
    task_of,
    wait_for_state,
)
from skillrack.testing import stream as stream_events
from skillrack_example_vendor import HELP
from skillrack_example_vendor import SKILLS as ALL_SKILLS
from skillrack_example_vendor.inventory import interfaces

DRAFT_DIGEST = "sha256:4dedea3f7ddf19e94d9fd0b30886624f50afb5aadc1b407508a05dd3c40f380d"
BINDINGS = ["JSONRPC", "HTTP+JSON"]
#: The raw-request walk-through the README links to (docs/wire.md, "Raw requests").
WIRE_DOC = Path(__file__).resolve().parents[2] / "docs" / "wire.md"

SKILLS: dict[str, Skill] = {s.id: s for s in ALL_SKILLS}
INTERFACES: dict[str, VerifiedInterface] = {sid: assemble(s) for sid, s in SKILLS.items()}

DRAFT_ARGS = {
    "resource_id": "network-resource-123",
    "condition": {"metric": "utilization", "operator": "gte", "threshold": 80, "unit": "percent"},
}
FUTURE_WINDOW = {"start": "2030-01-15T01:00:00Z", "end": "2030-01-15T03:00:00Z"}
INTENT = {"device_id": "edge-router-1", "interface": "eth2", "desired": {"mtu": 9000}}


# The server --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``skillrack serve`` as a subprocess, serving only this distribution; its base URL."""
    with served(tmp_path_factory.mktemp("served")) as url:
        yield url


# Raw HTTP helpers (the generic ones come from skillrack.testing) ---------------------------------


def domain(skill_id: str, arguments: Any, *, digest: str | None = None) -> dict[str, Any]:
    """A request object bound to the interface assembled in-process from the plugin's Skill."""
    return {
        "skill": skill_id,
        "skill_version": SKILLS[skill_id].version,
        "interface_digest": digest or INTERFACES[skill_id].interface_digest,
        "arguments": arguments,
    }


def describe(skill_id: str) -> dict[str, Any]:
    return {"skill": "describe_skill", "arguments": {"skill_id": skill_id}}


def primary_result(task: Any, skill_id: str) -> Any:
    [primary] = [a for a in task["artifacts"] if a["artifactId"] == "result"]
    assert primary["name"] == skill_id
    [part] = primary["parts"]
    assert part["data"]["skill"] == skill_id
    return part["data"]["result"]


def records_of(task: Any, kind: str) -> list[Any]:
    return [a for a in task.get("artifacts", []) if a["name"] == kind]


def record_data(artifact: Any) -> Any:
    [part] = artifact["parts"]
    return part["data"]


def stream(base: str, data: Any) -> list[Any]:
    """``SendStreamingMessage`` over JSON-RPC: every SSE ``data:`` event's result, in order."""
    return list(stream_events(base, "SendStreamingMessage", {"message": message(data)}))


# 1. The Agent Card -------------------------------------------------------------------------------


def test_card_lists_the_skills_and_binds_each_digest(base: str) -> None:
    response = httpx.get(base + CARD_PATH)
    assert response.status_code == 200
    card = response.json()
    skill_ids = [s["id"] for s in card["skills"]]
    assert skill_ids[0] == "describe_skill"
    assert sorted(skill_ids[1:]) == sorted([*SKILLS, HELP.id])  # help: base-A2A, unbound
    [extension] = card["capabilities"]["extensions"]
    assert extension["uri"] == EXTENSION_URI and extension["required"] is False
    assert extension["params"]["interface_version"] == "1.0"
    bindings = {b["skill_id"]: b for b in extension["params"]["skills"]}
    assert bindings == {
        sid: {
            "skill_id": sid,
            "skill_version": SKILLS[sid].version,
            # What `skillrack interface <id> --digest` prints: the assembled document's digest.
            "interface_digest": INTERFACES[sid].interface_digest,
        }
        for sid in SKILLS
    }
    assert bindings["evaluate_resource_condition"]["interface_digest"] == DRAFT_DIGEST


# 2. describe_skill -------------------------------------------------------------------------------


@pytest.mark.parametrize("binding", BINDINGS)
def test_describe_skill_returns_the_draft_vector(base: str, binding: str) -> None:
    response = send(base, describe("evaluate_resource_condition"), binding=binding)
    assert response.headers["a2a-extensions"] == EXTENSION_URI
    task = task_of(response, binding)
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    [artifact] = task["artifacts"]
    assert artifact["name"] == "describe_skill"
    [part] = artifact["parts"]
    assert part["data"]["skill"] == "describe_skill"
    result = part["data"]["result"]
    assert result["interface_digest"] == DRAFT_DIGEST
    assert digest_of(result["interface"]) == DRAFT_DIGEST
    assert result["interface"] == INTERFACES["evaluate_resource_condition"].document


# 3. evaluate_resource_condition ------------------------------------------------------------------


@pytest.mark.parametrize("binding", BINDINGS)
def test_evaluate_resource_condition(base: str, binding: str) -> None:
    interface = INTERFACES["evaluate_resource_condition"]
    task = invoke(base, domain("evaluate_resource_condition", DRAFT_ARGS), binding)
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert [a["name"] for a in task["artifacts"]] == [
        "resource-observation",
        "evaluate_resource_condition",
    ]
    [record] = records_of(task, "resource-observation")
    assert interface.records["resource-observation"].validate(record_data(record)) == ()
    result = primary_result(task, "evaluate_resource_condition")
    assert result["supporting_record_refs"] == [record["artifactId"]]
    assert interface.output.validate(result) == ()


# 4. collect_interface_health ---------------------------------------------------------------------

HEALTH_KIND = "interface-health-observation"


@pytest.mark.parametrize("binding", BINDINGS)
def test_collect_interface_health_one_record_per_interface(base: str, binding: str) -> None:
    interface = INTERFACES["collect_interface_health"]
    device = "edge-router-1"
    args = {"device_id": device, "interval_ms": 0}
    task = invoke(base, domain("collect_interface_health", args), binding)
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    records = records_of(task, HEALTH_KIND)
    assert [record_data(r)["interface"] for r in records] == list(interfaces(device))
    assert all(interface.records[HEALTH_KIND].validate(record_data(r)) == () for r in records)
    # One primary artifact, holding the complete final result.  The Task keeps
    # artifacts in order of first appearance, and the first progressive version
    # of the result is published right after the first record, so in the Task
    # view the primary artifact sits after that record only; the order in which
    # records and the final result were *sent* is asserted on the stream below.
    assert [a["name"] for a in task["artifacts"]].count("collect_interface_health") == 1
    result = primary_result(task, "collect_interface_health")
    assert interface.output.validate(result) == ()
    assert result["interfaces_checked"] == len(records)
    assert result["observation_refs"] == [r["artifactId"] for r in records]


def test_collect_interface_health_streams_records_before_the_result(base: str) -> None:
    device = "core-router-1"
    events = stream(base, domain("collect_interface_health", {"device_id": device}))
    assert "task" in events[0]
    assert "statusUpdate" in events[-1]
    assert events[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
    updates = [(i, e["artifactUpdate"]) for i, e in enumerate(events) if "artifactUpdate" in e]
    record_positions = [i for i, u in updates if u["artifact"]["name"] == HEALTH_KIND]
    finals = [
        (i, u)
        for i, u in updates
        if u["artifact"]["name"] == "collect_interface_health" and u.get("lastChunk")
    ]
    [(final_position, final)] = finals
    assert final["artifact"]["artifactId"] == "result" and not final.get("append")
    assert final_position == updates[-1][0]  # the last artifact event of the task
    assert len(record_positions) == len(interfaces(device))
    assert all(position < final_position for position in record_positions)
    result = final["artifact"]["parts"][0]["data"]["result"]
    assert INTERFACES["collect_interface_health"].output.validate(result) == ()
    assert result["interfaces_checked"] == len(interfaces(device))


# 5. Cancelling collect_interface_health ----------------------------------------------------------


def test_cancel_collect_interface_health_mid_run(base: str) -> None:
    args = {"device_id": "edge-router-1", "interval_ms": 500}
    task = invoke(
        base,
        domain("collect_interface_health", args),
        configuration={"returnImmediately": True},
    )
    working = wait_for_state(base, task["id"], {"TASK_STATE_WORKING"})
    assert working["status"]["state"] == "TASK_STATE_WORKING"
    canceled = rpc(base, "CancelTask", {"id": task["id"]})
    assert "result" in canceled, canceled
    assert canceled["result"]["status"]["state"] == "TASK_STATE_CANCELED"
    published = len(records_of(canceled["result"], HEALTH_KIND))
    assert published < len(interfaces("edge-router-1"))
    time.sleep(1.2)  # more than two intervals: a handler still running would publish again
    final = rpc(base, "GetTask", {"id": task["id"]})["result"]
    assert final["status"]["state"] == "TASK_STATE_CANCELED"
    assert len(records_of(final, HEALTH_KIND)) == published


# 6. propose_interface_configuration --------------------------------------------------------------


@pytest.mark.parametrize("binding", BINDINGS)
def test_propose_asks_for_the_window_then_completes(base: str, binding: str) -> None:
    interface = INTERFACES["propose_interface_configuration"]
    task = invoke(base, domain("propose_interface_configuration", INTENT), binding)
    assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    [part] = task["status"]["message"]["parts"]
    need = part["data"]
    assert need["needed"] == "maintenance_window"
    assert need["message"]
    assert need["schema"]["required"] == ["start", "end"]

    answered = invoke(base, FUTURE_WINDOW, binding, task_id=task["id"])
    assert answered["id"] == task["id"]
    assert answered["status"]["state"] == "TASK_STATE_COMPLETED"
    proposal = primary_result(answered, "propose_interface_configuration")
    assert interface.output.validate(proposal) == ()
    assert proposal["maintenance_window"] == {
        "start": "2030-01-15T01:00:00.000Z",
        "end": "2030-01-15T03:00:00.000Z",
    }
    [baseline] = records_of(answered, "configuration-baseline")
    assert proposal["baseline_ref"] == baseline["artifactId"]
    assert interface.records["configuration-baseline"].validate(record_data(baseline)) == ()


def test_cancel_of_a_proposal_is_refused(base: str) -> None:
    parked = invoke(base, domain("propose_interface_configuration", INTENT))
    assert parked["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    refused = rpc(base, "CancelTask", {"id": parked["id"]})
    assert refused["error"]["code"] == -32002, refused  # TaskNotCancelableError
    still = rpc(base, "GetTask", {"id": parked["id"]})["result"]
    assert still["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"

    running = invoke(
        base,
        domain("propose_interface_configuration", {**INTENT, "maintenance_window": FUTURE_WINDOW}),
        configuration={"returnImmediately": True},
    )
    refused = rpc(base, "CancelTask", {"id": running["id"]})
    assert refused["error"]["code"] == -32002, refused
    final = wait_for_state(base, running["id"], {"TASK_STATE_COMPLETED", "TASK_STATE_FAILED"})
    assert final["status"]["state"] == "TASK_STATE_COMPLETED"


# 7. manage_interface -----------------------------------------------------------------------------

TARGET = {"device_id": "edge-router-1", "interface": "eth1"}


def test_manage_interface_reset_without_reason_is_rejected(base: str) -> None:
    task = invoke(base, domain("manage_interface", {"operation": "reset_counters", **TARGET}))
    assert task["status"]["state"] == "TASK_STATE_REJECTED"
    error = error_of(task)
    assert error["code"] == "input_invalid"
    assert {(d["instance_path"], d["keyword"]) for d in error["details"]} == {
        ("/reason", "required")
    }
    assert "artifacts" not in task


@pytest.mark.parametrize("binding", BINDINGS)
def test_manage_interface_get_status(base: str, binding: str) -> None:
    task = invoke(base, domain("manage_interface", {"operation": "get_status", **TARGET}), binding)
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    result = primary_result(task, "manage_interface")
    assert INTERFACES["manage_interface"].output.validate(result) == ()
    assert (result["operation"], result["device_id"], result["interface"]) == (
        "get_status",
        "edge-router-1",
        "eth1",
    )


def test_manage_interface_stale_digest_is_interface_mismatch(base: str) -> None:
    stale = "sha256:" + "0" * 64
    data = domain("manage_interface", {"operation": "get_status", **TARGET}, digest=stale)
    task = invoke(base, data)
    assert task["status"]["state"] == "TASK_STATE_REJECTED"
    error = error_of(task)
    assert error["code"] == "interface_mismatch"
    assert INTERFACES["manage_interface"].interface_digest in error["message"]


# 8. The documented raw requests ---------------------------------------------------------------


def documented_curl_commands() -> list[list[str]]:
    """The curl commands in docs/wire.md's "Raw requests" section, split into words as sh would."""
    text = WIRE_DOC.read_text(encoding="utf-8")
    section = re.search(r"^#+[ \t]*Raw requests\b[^\n]*\n(.*?)(?=^#+[ \t]|\Z)", text, re.M | re.S)
    if section is None:
        return []
    commands: list[list[str]] = []
    for block in re.findall(r"```[^\n]*\n(.*?)```", section.group(1), re.S):
        words = shlex.split(block.replace("\\\n", " "), comments=True)
        for word in words:
            if word == "curl":
                commands.append([word])
            elif commands:
                commands[-1].append(word)
    return commands


def replay(base: str, words: list[str], *, path: str | None = None, body: Any = None) -> Any:
    """Send what a documented curl command sends, to this test's server instead of its host.

    ``path`` and ``body`` override the command's, for the variant the document
    describes in prose (the same request at ``/message:send``).
    """
    headers: dict[str, str] = {}
    data: str | None = None
    url: str | None = None
    rest = iter(words[1:])
    for word in rest:
        if word in ("-H", "--header"):
            name, _, value = next(rest).partition(":")
            headers[name.strip()] = value.strip()
        elif word in ("-d", "--data", "--data-raw"):
            data = next(rest)
        elif word in ("-X", "--request", "-o", "--output", "-w", "--write-out"):
            next(rest)
        elif not word.startswith("-"):
            url = word
    assert url is not None, words
    target = base + (path or urlsplit(url).path or "/")
    if body is not None:
        data = json.dumps(body)
    if data is None:
        return httpx.get(target, headers=headers, timeout=30)
    return httpx.post(target, content=data.encode(), headers=headers, timeout=30)


def documented_requests() -> dict[str, list[str]]:
    """The documented curl commands by what they do: card, describe_skill, the invocation."""
    found: dict[str, list[str]] = {}
    for command in documented_curl_commands():
        text = " ".join(command)
        if CARD_PATH in text:
            found["card"] = command
        elif '"describe_skill"' in text:
            found["describe"] = command
        elif '"evaluate_resource_condition"' in text:
            found["invoke"] = command
    return found


def test_documented_raw_requests(base: str) -> None:
    commands = documented_requests()
    assert "describe" in commands, "docs/wire.md lost its 'Raw requests' describe_skill curl"

    described = replay(base, commands["describe"])
    assert described.status_code == 200, described.text
    assert described.headers["a2a-extensions"] == EXTENSION_URI
    task = described.json()["result"]["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED", task
    [artifact] = task["artifacts"]
    result = artifact["parts"][0]["data"]["result"]
    assert result["interface_digest"] == DRAFT_DIGEST == digest_of(result["interface"])

    if "card" in commands:
        card = replay(base, commands["card"])
        assert card.status_code == 200
        assert "describe_skill" in [s["id"] for s in card.json()["skills"]]

    if "invoke" in commands:
        invocation = json.loads(commands["invoke"][commands["invoke"].index("-d") + 1])
        answers = [
            replay(base, commands["invoke"]).json()["result"]["task"],
            # "the same request works at POST /message:send with the params object as body"
            replay(
                base, commands["invoke"], path="/message:send", body=invocation["params"]
            ).json()["task"],
        ]
        for task in answers:
            assert task["status"]["state"] == "TASK_STATE_COMPLETED", task
            assert [a["name"] for a in task["artifacts"]] == [
                "resource-observation",
                "evaluate_resource_condition",
            ]
            record = task["artifacts"][0]
            result = primary_result(task, "evaluate_resource_condition")
            assert result["supporting_record_refs"] == [record["artifactId"]]


def test_skillrack_check_passes_against_the_served_plugin(base: str) -> None:
    run = subprocess.run(
        [skillrack_command(), "check", base, "--json"],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    report = json.loads(run.stdout)
    assert run.returncode == 0 and report["passed"], report
    checked = {item["skill"] for item in report["items"]}
    assert set(SKILLS) <= checked
