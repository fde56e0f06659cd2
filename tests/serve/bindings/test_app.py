"""A real skillrack agent on 127.0.0.1, driven over HTTP: card, describe_skill, invocation."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from helpers.agent_harness import running_agent
from helpers.agent_skills import AllowAll, DenyForbidden, TestSkills
from helpers.builders import VECTOR_DIGEST, SkillsPlugin, load_json, registry_of, simple_skill
from helpers.waiting import wait_until

from skillrack import Authority, BaseSkill
from skillrack.host.config import Config, ServerSettings
from skillrack.host.registry import Registry
from skillrack.protocol.messages import EXTENSION_URI
from skillrack.testing.serve import HEADERS, error_of, invoke, rpc, send, skill_request, task_of

BINDINGS = ["JSONRPC", "HTTP+JSON"]
DRAFT_ARGS = {
    "resource_id": "network-resource-123",
    "condition": {"metric": "utilization", "operator": "gte", "threshold": 80, "unit": "percent"},
}


@pytest.fixture(scope="module")
def registry() -> Registry:
    return registry_of([("tests", TestSkills()), ("allow", AllowAll()), ("deny", DenyForbidden())])


@pytest.fixture(scope="module")
def base(registry: Registry, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    config = Config(
        server=ServerSettings(max_body_bytes=200_000, max_json_depth=40),
        base_dir=tmp_path_factory.mktemp("agent"),
    )
    with running_agent(registry, config) as url:
        yield url


def call(base: str, registry: Registry, skill: str, arguments: Any, **kwargs: Any) -> Any:
    registered = registry.get(skill)
    assert registered is not None
    data = skill_request(skill, arguments, registered.skill.version, registered.interface_digest)
    return invoke(base, data, **kwargs)


# Agent Card --------------------------------------------------------------------------------------


def test_card_fields_and_extension(base: str, registry: Registry) -> None:
    response = httpx.get(base + "/.well-known/agent-card.json")
    assert response.status_code == 200
    card = response.json()
    for field in (
        "name",
        "description",
        "version",
        "supportedInterfaces",
        "capabilities",
        "defaultInputModes",
        "defaultOutputModes",
        "skills",
    ):
        assert card[field], field
    interfaces = {i["protocolBinding"]: i for i in card["supportedInterfaces"]}
    assert set(interfaces) == {"JSONRPC", "HTTP+JSON"}
    assert all(i["protocolVersion"] == "1.0" for i in interfaces.values())
    [extension] = card["capabilities"]["extensions"]
    assert extension["uri"] == EXTENSION_URI and extension["required"] is False
    assert extension["params"]["interface_version"] == "1.0"
    bindings = extension["params"]["skills"]
    assert {b["skill_id"] for b in bindings} == set(registry.skills)
    assert {
        "skill_id": "evaluate_resource_condition",
        "skill_version": "1.0",
        "interface_digest": VECTOR_DIGEST,
    } in bindings
    skill_ids = [s["id"] for s in card["skills"]]
    assert skill_ids[0] == "describe_skill" and set(skill_ids[1:]) == set(registry.skills)
    assert all(s["inputModes"] == ["application/json"] for s in card["skills"])


def test_card_etag_and_304(base: str) -> None:
    first = httpx.get(base + "/.well-known/agent-card.json")
    etag = first.headers["etag"]
    assert "max-age" in first.headers["cache-control"]
    again = httpx.get(base + "/.well-known/agent-card.json", headers={"If-None-Match": etag})
    assert again.status_code == 304 and again.content == b""
    other = httpx.get(base + "/.well-known/agent-card.json", headers={"If-None-Match": '"x"'})
    assert other.status_code == 200 and other.content == first.content


# describe_skill ----------------------------------------------------------------------------------


@pytest.mark.parametrize("binding", BINDINGS)
def test_describe_skill_returns_the_draft_document(base: str, binding: str) -> None:
    response = send(
        base,
        {"skill": "describe_skill", "arguments": {"skill_id": "evaluate_resource_condition"}},
        binding=binding,
    )
    assert response.headers["a2a-extensions"] == EXTENSION_URI
    task = task_of(response, binding)
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    [artifact] = task["artifacts"]
    assert artifact["name"] == "describe_skill"
    [part] = artifact["parts"]
    vector = load_json("draft-example-describe-skill-result.json")
    assert part["data"]["skill"] == "describe_skill"
    assert part["data"]["result"]["interface_digest"] == VECTOR_DIGEST
    assert part["data"]["result"]["interface"] == vector["result"]["interface"]


def test_no_extension_header_no_echo_but_same_rules(base: str) -> None:
    data = {"skill": "describe_skill", "arguments": {"skill_id": "nope"}}
    response = send(base, data, headers={"A2A-Extensions": ""})
    assert "a2a-extensions" not in response.headers
    task = task_of(response)
    assert task["status"]["state"] == "TASK_STATE_REJECTED"
    assert error_of(task)["code"] == "skill_not_advertised"


@pytest.mark.parametrize(
    "data, pointer",
    [
        ({"skill": "describe_skill", "arguments": {}}, "/arguments/skill_id"),
        (
            {"skill": "describe_skill", "arguments": {"skill_id": "x", "skill_version": "1.0"}},
            "/arguments/skill_version",
        ),
        ({"skill": "describe_skill"}, "/arguments"),
    ],
)
def test_malformed_describe_request(base: str, data: Any, pointer: str) -> None:
    task = invoke(base, data)
    assert task["status"]["state"] == "TASK_STATE_REJECTED"
    error = error_of(task)
    assert error["code"] == "input_invalid"
    assert pointer in [d["instance_path"] for d in error["details"]]


@pytest.mark.parametrize(
    "parts",
    [
        [{"text": "describe evaluate_resource_condition please"}],
        [{"data": {"skill": "describe_skill", "arguments": {"skill_id": "x"}}}, {"text": "hi"}],
        [{"data": ["not", "an", "object"]}],
    ],
)
def test_message_that_is_not_one_request_object(base: str, parts: Any) -> None:
    task = invoke(base, None, parts=parts)
    assert task["status"]["state"] == "TASK_STATE_REJECTED"
    error = error_of(task)
    assert error["code"] == "input_invalid"
    assert "describe_skill" in error["message"] and EXTENSION_URI in error["message"]


# Domain-skill invocation -------------------------------------------------------------------------


@pytest.mark.parametrize("binding", BINDINGS)
def test_successful_invocation_with_record(base: str, registry: Registry, binding: str) -> None:
    task = call(base, registry, "evaluate_resource_condition", DRAFT_ARGS, binding=binding)
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    names = [a["name"] for a in task["artifacts"]]
    assert names == ["resource-observation", "evaluate_resource_condition"]
    record, primary = task["artifacts"]
    [result_part] = primary["parts"]
    result = result_part["data"]
    assert result["skill"] == "evaluate_resource_condition"
    assert result["result"]["result"] == "condition_not_met"
    assert result["result"]["supporting_record_refs"] == [record["artifactId"]]
    interface = registry.skills["evaluate_resource_condition"].interface
    assert interface.output.validate(result["result"]) == ()
    [record_part] = record["parts"]
    assert interface.records["resource-observation"].validate(record_part["data"]) == ()


@pytest.mark.parametrize(
    "field, value",
    [("skill_version", "1.1"), ("interface_digest", "sha256:" + "0" * 64)],
)
def test_interface_mismatch_before_arguments(base: str, field: str, value: str) -> None:
    data = skill_request("evaluate_resource_condition", {"garbage": True}, "1.0", VECTOR_DIGEST)
    data[field] = value
    task = invoke(base, data)
    assert task["status"]["state"] == "TASK_STATE_REJECTED"
    assert error_of(task)["code"] == "interface_mismatch"


def test_unknown_skill_is_not_advertised(base: str) -> None:
    task = invoke(base, skill_request("no_such_skill", {}, "1.0", VECTOR_DIGEST))
    assert task["status"]["state"] == "TASK_STATE_REJECTED"
    assert error_of(task)["code"] == "skill_not_advertised"


def test_malformed_domain_request_object(base: str) -> None:
    task = invoke(base, {"skill": "evaluate_resource_condition", "arguments": DRAFT_ARGS})
    error = error_of(task)
    assert task["status"]["state"] == "TASK_STATE_REJECTED" and error["code"] == "input_invalid"
    paths = {d["instance_path"] for d in error["details"]}
    assert paths == {"/skill_version", "/interface_digest"}


@pytest.mark.parametrize("binding", BINDINGS)
def test_input_invalid_details(base: str, registry: Registry, binding: str) -> None:
    args = json.loads(json.dumps(DRAFT_ARGS))
    args["condition"]["threshold"] = "high"
    del args["condition"]["unit"]
    task = call(base, registry, "evaluate_resource_condition", args, binding=binding)
    assert task["status"]["state"] == "TASK_STATE_REJECTED"
    error = error_of(task)
    assert error["code"] == "input_invalid"
    details = {d["instance_path"]: d for d in error["details"]}
    assert details["/condition/threshold"] == {
        "instance_path": "/condition/threshold",
        "schema_path": "/properties/condition/properties/threshold/type",
        "keyword": "type",
        "expected": "number",
        "actual": "string",
    }
    assert details["/condition/unit"]["keyword"] == "required"
    assert "artifacts" not in task


def test_sensitive_values_never_appear(base: str, registry: Registry) -> None:
    task = call(base, registry, "with_secret", {"password": "hunter2"})
    [detail] = error_of(task)["details"]
    assert detail["instance_path"] == "/password" and "actual" not in detail
    assert "hunter2" not in json.dumps(task["status"])


def test_constraint_rejected(base: str, registry: Registry) -> None:
    args = json.loads(json.dumps(DRAFT_ARGS))
    args["condition"]["unit"] = "fraction"
    task = call(base, registry, "evaluate_resource_condition", args)
    assert task["status"]["state"] == "TASK_STATE_REJECTED"
    assert error_of(task)["code"] == "constraint_rejected"


def test_authorization_failed_reveals_no_policy(base: str, registry: Registry) -> None:
    args = {**DRAFT_ARGS, "resource_id": "forbidden"}
    task = call(base, registry, "evaluate_resource_condition", args)
    assert task["status"]["state"] == "TASK_STATE_REJECTED"
    error = error_of(task)
    assert error["code"] == "authorization_failed"
    assert "rule 17" not in json.dumps(task) and "forbidden" not in error["message"]
    assert "artifacts" not in task  # the handler never ran


def test_policy_sees_operation_resources_and_constraints(base: str, registry: Registry) -> None:
    DenyForbidden.seen.clear()
    assert call(base, registry, "manage", {"operation": "read"})["status"]["state"] == (
        "TASK_STATE_COMPLETED"
    )
    denied = call(base, registry, "manage", {"operation": "delete"})
    assert error_of(denied)["code"] == "authorization_failed"
    # each call is decided twice: the skill alone before validation, then the call itself
    assert [(r.scope, r.operation) for r in DenyForbidden.seen] == [
        ("skill", None),
        ("invocation", "read"),
        ("skill", None),
        ("invocation", "delete"),
    ]
    assert all(
        not r.resources and not r.constraints and r.arguments is None
        for r in DenyForbidden.seen
        if r.scope == "skill"
    )
    call(base, registry, "evaluate_resource_condition", DRAFT_ARGS)
    last = DenyForbidden.seen[-1]
    assert last.resources == {"/resource_id": "network-resource-123"}
    assert last.constraints == {"/condition": DRAFT_ARGS["condition"]}
    assert last.authority == {"default_mode": "observe_only", "approval_may_be_required": False}


@pytest.mark.parametrize(
    "skill, fragment",
    [
        ("bad_output", "unusable"),
        ("crash", "failed before producing"),
        ("huge_number", "2^53"),
        ("bad_record", "supporting record"),
    ],
)
def test_failures_end_failed_without_leaks(
    base: str, registry: Registry, skill: str, fragment: str
) -> None:
    task = call(base, registry, skill, {})
    assert task["status"]["state"] == "TASK_STATE_FAILED"
    error = error_of(task)
    assert error["code"] == "output_invalid"
    assert fragment in error["message"]
    assert "hunter2" not in json.dumps(task) and "Traceback" not in json.dumps(task)


def test_output_invalid_details(base: str, registry: Registry) -> None:
    error = error_of(call(base, registry, "bad_output", {}))
    assert {(d["instance_path"], d["keyword"]) for d in error["details"]} >= {("/ok", "required")}


def test_progressive_results_end_with_one_complete_artifact(base: str, registry: Registry) -> None:
    task = call(base, registry, "progressive", {})
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    primary = [a for a in task["artifacts"] if a["name"] == "progressive"]
    assert len(primary) == 1 and len(primary[0]["parts"]) == 1
    assert primary[0]["parts"][0]["data"]["result"] == {"done": 3, "complete": True}
    assert [a["name"] for a in task["artifacts"]].count("step") == 3


# Input required, polling, cancellation, terminal tasks ------------------------------------------


@pytest.mark.parametrize("binding", BINDINGS)
def test_input_required_round_trip(base: str, registry: Registry, binding: str) -> None:
    task = call(base, registry, "ask_twice", {}, binding=binding)
    assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    [part] = task["status"]["message"]["parts"]
    assert part["data"] == {"needed": "maintenance_window"}
    window = {"start": "2026-12-01T01:00:00Z"}
    task = task_of(send(base, window, binding=binding, task_id=task["id"]), binding)
    assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    assert task["status"]["message"]["parts"][0]["data"] == {"needed": "confirmation"}
    task = task_of(
        send(base, None, parts=[{"text": "yes"}], task_id=task["id"], binding=binding), binding
    )
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    [primary] = [a for a in task["artifacts"] if a["name"] == "ask_twice"]
    assert primary["parts"][0]["data"]["result"] == {"window": window, "confirmation": "yes"}


def wait_for_state(base: str, task_id: str, states: set[str]) -> Any:
    def task_in_states() -> Any:
        task = rpc(base, "GetTask", {"id": task_id})["result"]
        return task if task["status"]["state"] in states else None

    return wait_until(task_in_states, f"task {task_id} in {sorted(states)}")


def test_polling_reaches_the_same_final_task(base: str, registry: Registry) -> None:
    task = call(
        base,
        registry,
        "evaluate_resource_condition",
        DRAFT_ARGS,
        configuration={"returnImmediately": True},
    )
    final = wait_for_state(base, task["id"], {"TASK_STATE_COMPLETED"})
    assert final["status"]["state"] == "TASK_STATE_COMPLETED"
    assert [a["name"] for a in final["artifacts"]] == [
        "resource-observation",
        "evaluate_resource_condition",
    ]


def test_cancel_cancellable_skill(base: str, registry: Registry) -> None:
    task = call(
        base,
        registry,
        "slow_cancellable",
        {"seconds": 20},
        configuration={"returnImmediately": True},
    )
    wait_for_state(base, task["id"], {"TASK_STATE_WORKING"})
    canceled = rpc(base, "CancelTask", {"id": task["id"]})
    assert canceled["result"]["status"]["state"] == "TASK_STATE_CANCELED"
    wait_for_state(base, task["id"], {"TASK_STATE_CANCELED"})  # GetTask agrees


def test_cancel_non_cancellable_skill_is_refused_and_task_finishes(
    base: str, registry: Registry
) -> None:
    task = call(
        base,
        registry,
        "slow_uncancellable",
        {"seconds": 0.5},
        configuration={"returnImmediately": True},
    )
    refused = rpc(base, "CancelTask", {"id": task["id"]})
    assert refused["error"]["code"] == -32002  # TaskNotCancelableError
    final = wait_for_state(base, task["id"], {"TASK_STATE_COMPLETED", "TASK_STATE_FAILED"})
    assert final["status"]["state"] == "TASK_STATE_COMPLETED"


def test_message_to_terminal_task_is_unsupported(base: str, registry: Registry) -> None:
    task = call(base, registry, "evaluate_resource_condition", DRAFT_ARGS)
    answer = send(base, {"more": True}, task_id=task["id"]).json()
    assert answer["error"]["code"] == -32004  # UnsupportedOperationError


def test_get_and_list_tasks(base: str, registry: Registry) -> None:
    task = call(base, registry, "evaluate_resource_condition", DRAFT_ARGS)
    assert rpc(base, "GetTask", {"id": task["id"]})["result"]["id"] == task["id"]
    listed = rpc(base, "ListTasks", {"pageSize": 100})["result"]
    assert task["id"] in [t["id"] for t in listed["tasks"]]


# Errors before any task exists ------------------------------------------------------------------


@pytest.mark.parametrize(
    "body, code",
    [
        (b'{"jsonrpc": "2.0", "method": ', "input_invalid"),
        (b"\xff\xfe\x00", "input_invalid"),
        (b"[" * 50 + b"]" * 50, "input_invalid"),
        (b'{"pad": "' + b"x" * 300_000 + b'"}', "resource_limit_exceeded"),
    ],
)
@pytest.mark.parametrize("binding", BINDINGS)
def test_unparseable_bodies_use_the_binding_error(
    base: str, body: bytes, code: str, binding: str
) -> None:
    path = "/" if binding == "JSONRPC" else "/message:send"
    response = httpx.post(base + path, content=body, headers=HEADERS)
    text = response.text
    assert "Traceback" not in text and "Error(" not in text
    payload = response.json()
    if binding == "JSONRPC":
        assert payload["error"]["code"] in (-32700, -32600)
        assert payload["error"]["data"][0]["metadata"]["code"] == code
    else:
        assert response.status_code in (400, 413)
        assert payload["error"]["details"][0]["reason"] == code.upper()


@pytest.mark.parametrize("version", [None, "0.3", "2.0"])
def test_unsupported_a2a_versions(base: str, version: str | None) -> None:
    headers = {"Content-Type": "application/json"}
    if version:
        headers["A2A-Version"] = version
    body = {"jsonrpc": "2.0", "id": "1", "method": "GetTask", "params": {"id": "x"}}
    answer = httpx.post(base + "/", json=body, headers=headers).json()
    assert answer["error"]["code"] == -32009  # VersionNotSupportedError


def test_logs_keep_no_exception_text_or_arguments(
    base: str, registry: Registry, caplog: pytest.LogCaptureFixture
) -> None:
    # INFO is skillrack serve's default; at DEBUG, a2a-sdk and aiosqlite log whole
    # request bodies themselves, which is why serve never runs them at DEBUG unasked.
    caplog.set_level("INFO")
    task = call(base, registry, "crash", {})
    call(base, registry, "with_secret", {"password": "hunter2-short"})
    assert task["status"]["state"] == "TASK_STATE_FAILED"
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert task["id"] in logged and "RuntimeError" in logged  # enough to find the bug
    assert "hunter2" not in logged  # neither the exception text nor the argument value


async def _answer(message: Any, context: Any) -> str:
    return "ok"


def test_every_card_skill_has_tags_a_skill_without_gets_its_mode(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A2A requires AgentSkill.tags: a skill declared without tags is advertised with one,
    its authority's default_mode; declared tags are kept as they are (issue 33, item 7)."""
    executing = Authority(default_mode="execute")
    registry = registry_of(
        [
            (
                "skills",
                SkillsPlugin(
                    simple_skill("untagged"),
                    simple_skill("untagged_execute", authority=executing),
                    simple_skill("tagged", tags=("assurance", "bgp")),
                    BaseSkill(id="chat", name="chat", description="talks", handler=_answer),
                ),
            ),
            ("allow", AllowAll()),
        ]
    )
    caplog.set_level(logging.WARNING, logger="a2a")
    with running_agent(registry) as url:
        card = httpx.get(url + "/.well-known/agent-card.json").json()
    tags = {entry["id"]: entry.get("tags") for entry in card["skills"]}
    assert tags == {
        "describe_skill": ["schema-interface", "describe_skill"],
        "untagged": ["observe_only"],
        "untagged_execute": ["execute"],
        "tagged": ["assurance", "bgp"],
        "chat": ["observe_only"],
    }
    assert not [r for r in caplog.records if "tags" in r.getMessage()]  # a2a-sdk is satisfied
