"""describe_skill's answer, built and converted once, is byte for byte what it was built anew.

The Artifact of each describe_skill answer is built at start-up
(:func:`skillrack.serve.execution.artifacts.describe_artifact`) and its document's JSON
dict is kept after the first answer (:func:`skillrack.protocol.proto_json.remember`,
keyed by the layout of the answer's own maps).  These tests hold both to
what they stand in for: the event ``TaskUpdater.add_artifact`` sends, and the
JSON-RPC answer ``json_format.MessageToDict`` writes for the very Task
answered, key order included, for every skill of the example vendor.
"""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from a2a.server.events import EventQueue
from a2a.server.tasks import TaskUpdater
from a2a.types import TaskArtifactUpdateEvent
from google.protobuf import json_format
from google.protobuf.message import Message
from helpers.agent_harness import running_agent
from helpers.builders import registry_of
from jsonrpc.jsonrpc2 import JSONRPC20Response
from starlette.responses import JSONResponse

from skillrack.host.registry import Registry
from skillrack.interface.document import DESCRIBE_SKILL
from skillrack.protocol.messages import EXTENSION_URI
from skillrack.protocol.proto_json import Remembered
from skillrack.serve.bindings import jsonrpc as jsonrpc_route
from skillrack.serve.bindings.jsonrpc import PLACEHOLDER, Answer
from skillrack.serve.execution.artifacts import ArtifactPublisher, describe_artifact
from skillrack.serve.execution.describe import describe_payloads
from skillrack.testing.serve import HEADERS

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def registry() -> Registry:
    """The example vendor's skills, from its source when it is not installed (tox's core env)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.syspath_prepend(str(ROOT / "example_vendor_plugin" / "src"))
        vendor = importlib.import_module("skillrack_example_vendor")
        return registry_of([("example_vendor", vendor)])


def _dumps(value: Any) -> str:
    """As Starlette's JSONResponse writes a JSON-RPC answer."""
    return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))


class Recorded(EventQueue):
    def __init__(self) -> None:
        self.events: list[Any] = []

    async def enqueue_event(self, event: Any) -> None:
        self.events.append(event)


async def test_the_prebuilt_artifact_event_is_add_artifacts(registry: Registry) -> None:
    """The same event, byte for byte (map layout included), as ``add_artifact`` of the payload."""
    payloads = describe_payloads(registry)
    assert payloads
    for payload in payloads.values():
        assert not isinstance(payload, Exception)
        built, prebuilt = Recorded(), Recorded()
        await TaskUpdater(built, "t", "c").add_artifact(
            [payload],
            artifact_id="result",
            name=DESCRIBE_SKILL,
            append=False,
            extensions=[EXTENSION_URI],
        )
        publisher = ArtifactPublisher(TaskUpdater(prebuilt, "t", "c"))
        await publisher.describe(describe_artifact(payload))
        [old], [new] = built.events, prebuilt.events
        assert isinstance(new, TaskArtifactUpdateEvent)
        assert new.SerializeToString() == old.SerializeToString()


def test_answers_are_json_formats_of_the_task_answered(
    registry: Registry, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every example skill described twice: the wire answer is json_format's, the dict kept."""
    converted: list[tuple[Any, Any]] = []
    real = jsonrpc_route.message_to_dict

    def recording(message: Message) -> Any:
        fast = real(message)
        converted.append((fast, json_format.MessageToDict(message)))
        return fast

    monkeypatch.setattr(jsonrpc_route, "message_to_dict", recording)
    skills = sorted(describe_payloads(registry))
    with running_agent(registry) as base, httpx.Client(base_url=base, headers=HEADERS) as client:
        for skill_id in skills * 2:
            request = {"skill": "describe_skill", "arguments": {"skill_id": skill_id}}
            message = {"messageId": f"m-{len(converted)}", "role": "ROLE_USER"}
            message["parts"] = [{"data": request}]  # type: ignore[assignment]
            body = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage"}
            body["params"] = {"message": message}  # type: ignore[assignment]
            answer = client.post("/", json=body, timeout=30)
            fast, slow = converted[-1]
            assert slow["status"]["state"] == "TASK_STATE_COMPLETED", slow
            assert _dumps(fast) == _dumps(slow)
            envelope = JSONRPC20Response(result={"task": slow}, _id=1).data  # a2a-sdk's
            assert answer.text == _dumps(envelope)
    data = [fast["artifacts"][0]["parts"][0]["data"] for fast, _ in converted]
    half = len(skills)
    for first, again in zip(data[:half], data[half:], strict=True):
        assert again is first  # the second answer of each skill reused the first's conversion
        assert isinstance(first, Remembered) and first.text is not None  # and its JSON text


def test_a_placeholder_the_caller_sent_is_written_as_sent() -> None:
    """The remembered document's text goes where it was, and only there."""
    document = Remembered({"interface": {"\u00e9": [1, 2.5, None, "x\u2028"]}})
    echoed = {"parts": [{"text": PLACEHOLDER}, {"data": {"said": PLACEHOLDER}}]}
    for history, text in (([], "plain"), ([echoed], "plain"), ([], PLACEHOLDER)):
        task = {
            "id": "t",
            "history": history,
            "artifacts": [
                {"artifactId": "r", "parts": [{"data": document}, {"text": text}]},
                {"artifactId": "s", "parts": [{"data": {"plain": True}}]},
            ],
        }
        content = {"jsonrpc": "2.0", "id": 1, "result": {"task": task}}
        assert Answer(content).body == JSONResponse(content).body


def test_an_artifact_without_parts_is_written_as_it_is() -> None:
    """Found by review: the spliced answer gave such an artifact a ``parts`` it did not have."""
    document = Remembered({"skill": "describe_skill"})
    task = {
        "id": "t",
        "artifacts": [
            {"artifactId": "r", "parts": [{"data": document}]},
            {"artifactId": "empty", "name": "no parts"},
        ],
    }
    content = {"jsonrpc": "2.0", "id": 1, "result": {"task": task}}
    assert Answer(content).body == JSONResponse(content).body
