"""A base skill speaks full A2A: any state directly, protocol errors, never an empty part.

Issue 33, item 6.  The A2A TCK's scenarios are played here by a plugin on the
public base-skill API, routed as the TCK's reference agent routes them (by
the ``messageId`` prefix), against a real agent over JSON-RPC and HTTP+JSON:
``input-required`` without a message, ``completed`` straight from
``submitted``, an Artifact then ``completed``, a direct Message, a request
refused with an A2A protocol error.  A handler that sends a Message or an
Artifact without parts fails its task, and the log says in one line what to
write instead.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from helpers.agent_harness import running_agent
from helpers.agent_skills import AllowAll
from helpers.builders import SkillsPlugin, registry_of

from skillrack import (
    BaseSkill,
    BaseSkillContext,
    DataPart,
    FilePart,
    IncomingMessage,
    ProtocolCode,
    ProtocolError,
    TextPart,
)
from skillrack.host.registry import Registry
from skillrack.testing.serve import stream

HEADERS = {"A2A-Version": "1.0"}


async def plays(message: IncomingMessage, context: BaseSkillContext) -> str | None:
    """The TCK's scenarios, by messageId prefix, as its reference agent plays them."""
    scenario = message.message_id
    if scenario.startswith("tck-input-required"):
        if context.history:  # the caller answered: done
            await context.set_state("completed", "thanks")
            return None
        await context.set_state("input-required")
        return None
    if scenario.startswith("tck-complete-task"):
        await context.set_state("completed", "Hello from TCK")
        return None
    if scenario.startswith("tck-stream-002"):
        await context.set_state("completed")
        return None
    if scenario.startswith("tck-artifact-file-url"):
        url = "https://example.com/output.txt"
        await context.artifact(FilePart(url=url, media_type="text/plain", name="output.txt"))
        await context.set_state("completed")
        return None
    if scenario.startswith("tck-artifact-file"):
        content = b"Generated file content"
        await context.artifact(FilePart(data=content, media_type="text/plain", name="output.txt"))
        await context.set_state("completed")
        return None
    if scenario.startswith("tck-artifact-data"):
        await context.artifact(DataPart({"key": "value", "count": 42}))
        await context.set_state("completed")
        return None
    if scenario.startswith("tck-artifact-text"):
        await context.artifact(TextPart("Generated text content"))
        await context.set_state("completed")
        return None
    if scenario.startswith("tck-message-response"):
        await context.reply("Direct message response")
        return None
    if scenario.startswith("tck-reject-task"):
        raise ProtocolError(ProtocolCode.UNSUPPORTED_OPERATION, "rejected")
    if scenario.startswith("tck-rejected-state"):
        await context.set_state("rejected", "not for this agent")
        return None
    if scenario.startswith("empty-status"):
        await context.status()
    if scenario.startswith("empty-artifact"):
        await context.artifact()
    return "Unhandled messageId prefix: " + scenario


def tck_registry() -> Registry:
    """The TCK's system under test: one cancellable base skill playing every scenario.

    ``python tests/helpers/tck_agent.py PORT`` serves it for a run of the A2A TCK
    (docs/conformance.md, "The A2A TCK").
    """
    skill = BaseSkill(
        id="tck",
        name="TCK Conformance",
        description="plays the A2A TCK's scenarios",
        tags=("tck",),
        handler=plays,
        matches=lambda message: True,
        cancellable=True,
    )
    return registry_of([("tck", SkillsPlugin(skill)), ("allow", AllowAll())])


@pytest.fixture(scope="module")
def registry() -> Registry:
    return tck_registry()


@pytest.fixture(scope="module")
def base(registry: Registry) -> Iterator[str]:
    with running_agent(registry) as url:
        yield url


def _message(prefix: str, task_id: str | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {
        "role": "ROLE_USER",
        "parts": [{"text": "Hello from the TCK"}],
        "messageId": f"{prefix}-{uuid.uuid4()}",
    }
    if task_id:
        message["taskId"] = task_id
    return message


def send(base: str, prefix: str, binding: str, task_id: str | None = None) -> Any:
    """SendMessage; the JSON-RPC ``result`` or ``error``, or the HTTP+JSON body."""
    params = {"message": _message(prefix, task_id)}
    if binding == "JSONRPC":
        body = {"jsonrpc": "2.0", "id": "1", "method": "SendMessage", "params": params}
        return httpx.post(base + "/", json=body, headers=HEADERS, timeout=30).json()
    answer = httpx.post(base + "/message:send", json=params, headers=HEADERS, timeout=30)
    return {"status_code": answer.status_code, **answer.json()}


def task_in(answer: Any) -> Any:
    return answer["result"]["task"] if "result" in answer else answer["task"]


BINDINGS = ["JSONRPC", "HTTP+JSON"]


@pytest.mark.parametrize("binding", BINDINGS)
def test_input_required_without_a_message_then_an_answer(base: str, binding: str) -> None:
    task = task_in(send(base, "tck-input-required", binding))
    assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    assert "message" not in task["status"]
    again = task_in(send(base, "tck-input-required", binding, task_id=task["id"]))
    assert again["id"] == task["id"]
    assert again["status"]["state"] == "TASK_STATE_COMPLETED"
    assert again["status"]["message"]["parts"] == [{"text": "thanks"}]


@pytest.mark.parametrize("binding", BINDINGS)
def test_completed_directly_with_and_without_a_message(base: str, binding: str) -> None:
    task = task_in(send(base, "tck-complete-task", binding))
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert task["status"]["message"]["parts"] == [{"text": "Hello from TCK"}]
    bare = task_in(send(base, "tck-stream-002", binding))
    assert bare["status"]["state"] == "TASK_STATE_COMPLETED" and "message" not in bare["status"]


def test_states_are_set_directly_never_through_working(base: str) -> None:
    """The stream shows exactly what the handler set: no ``TASK_STATE_WORKING`` first."""
    for prefix, final in [
        ("tck-input-required", "TASK_STATE_INPUT_REQUIRED"),
        ("tck-complete-task", "TASK_STATE_COMPLETED"),
        ("tck-rejected-state", "TASK_STATE_REJECTED"),
    ]:
        events = list(stream(base, "SendStreamingMessage", {"message": _message(prefix)}))
        states = [
            e["statusUpdate"]["status"]["state"]
            if "statusUpdate" in e
            else e["task"]["status"]["state"]
            for e in events
            if "statusUpdate" in e or "task" in e
        ]
        assert states == ["TASK_STATE_SUBMITTED", final], (prefix, states)


@pytest.mark.parametrize("binding", BINDINGS)
def test_an_artifact_then_completed(base: str, binding: str) -> None:
    task = task_in(send(base, "tck-artifact-text", binding))
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    [artifact] = task["artifacts"]
    assert artifact["parts"] == [{"text": "Generated text content"}]


@pytest.mark.parametrize("binding", BINDINGS)
def test_a_direct_message(base: str, binding: str) -> None:
    answer = send(base, "tck-message-response", binding)
    message = answer["result"]["message"] if binding == "JSONRPC" else answer["message"]
    assert message["role"] == "ROLE_AGENT" and message["parts"] == [
        {"text": "Direct message response"}
    ]


def test_a_protocol_error_is_the_bindings_own_error(base: str) -> None:
    """JSON-RPC: A2A's UnsupportedOperationError code; HTTP+JSON: an error status, no task."""
    answer = send(base, "tck-reject-task", "JSONRPC")
    assert "result" not in answer
    assert answer["error"]["code"] == -32004 and "rejected" in answer["error"]["message"]
    rest = send(base, "tck-reject-task", "HTTP+JSON")
    assert rest["status_code"] >= 400 and "task" not in rest
    assert "rejected" in str(rest)


@pytest.mark.parametrize(
    "prefix, method", [("empty-status", "status"), ("empty-artifact", "artifact")]
)
def test_empty_parts_are_refused_with_one_line_for_the_author(
    base: str, caplog: pytest.LogCaptureFixture, prefix: str, method: str
) -> None:
    caplog.set_level(logging.ERROR)
    task = task_in(send(base, prefix, "JSONRPC"))
    assert task["status"]["state"] == "TASK_STATE_FAILED"
    assert "artifacts" not in task  # nothing without parts went out
    [line] = [
        r.getMessage()
        for r in caplog.records
        if f"context.{method}() needs at least one part" in r.getMessage()
    ]
    assert "\n" not in line  # one line: what to write, which skill, which plugin
    assert "base skill 'tck'" in line and "write e.g." in line and "(plugin tck)" in line


@pytest.mark.parametrize("binding", BINDINGS)
def test_file_and_data_artifacts_then_completed(base: str, binding: str) -> None:
    with_bytes = task_in(send(base, "tck-artifact-file", binding))
    [artifact] = with_bytes["artifacts"]
    [part] = artifact["parts"]
    assert part["mediaType"] == "text/plain" and part["filename"] == "output.txt"
    assert "raw" in part and with_bytes["status"]["state"] == "TASK_STATE_COMPLETED"
    with_url = task_in(send(base, "tck-artifact-file-url", binding))
    assert with_url["artifacts"][0]["parts"][0]["url"] == "https://example.com/output.txt"
    data = task_in(send(base, "tck-artifact-data", binding))
    assert data["artifacts"][0]["parts"][0]["data"] == {"key": "value", "count": 42}


def test_a_waiting_task_is_cancelled(base: str) -> None:
    task = task_in(send(base, "tck-input-required", "JSONRPC"))
    body = {"jsonrpc": "2.0", "id": "2", "method": "CancelTask", "params": {"id": task["id"]}}
    cancelled = httpx.post(base + "/", json=body, headers=HEADERS, timeout=30).json()
    assert cancelled["result"]["status"]["state"] == "TASK_STATE_CANCELED"
