"""proto_json writes the client's requests and answers exactly as json_format.MessageToDict does.

The SkillClient writes SendMessage and GetTask params with it (client/jsonrpc_answers.py).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from a2a.types import (
    GetTaskRequest,
    Message,
    Part,
    SendMessageConfiguration,
    SendMessageRequest,
    SendMessageResponse,
    Task,
    TaskState,
)
from google.protobuf import json_format
from hypothesis import given, settings
from test_proto_parse import PARAMS, completed_task, invocation

from skillrack.protocol.proto_json import message_to_dict
from skillrack.protocol.values import data_part


def assert_same(message: Any) -> None:
    """The same dict as MessageToDict, keys in the same order (so the same JSON text)."""
    theirs = json_format.MessageToDict(message)
    ours = message_to_dict(message)
    assert json.dumps(ours) == json.dumps(theirs)


@settings(max_examples=300, deadline=None)
@given(PARAMS)
def test_the_same_dict_as_message_to_dict(params: dict[str, Any]) -> None:
    assert_same(json_format.ParseDict(params, SendMessageRequest(), ignore_unknown_fields=True))


def test_a_skill_invocation() -> None:
    request = {"skill": "s", "arguments": {"n": 80, "x": [1.5, None, True, {"k": "v"}]}}
    message = Message(message_id="m", parts=[data_part(request)], extensions=["urn:x"])
    sent = SendMessageRequest(message=message, configuration=SendMessageConfiguration())
    assert_same(sent)
    assert message_to_dict(sent)["configuration"] == {}  # set, though empty: written
    assert message_to_dict(sent)["message"]["parts"][0]["data"]["arguments"]["n"] == 80.0


def test_answers_with_timestamps_and_enums() -> None:
    answer = json_format.ParseDict(completed_task(), SendMessageResponse())
    assert_same(answer)
    assert message_to_dict(answer)["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
    assert_same(GetTaskRequest(id="t", history_length=3))
    assert_same(json_format.ParseDict(invocation(), SendMessageRequest()))


def _non_finite() -> Message:
    part = Part()
    part.data.number_value = float("inf")
    return Message(message_id="m", parts=[part])


def _deep() -> Message:
    """60 nested lists, built in place (a parse would stop at upb's depth limit)."""
    message = Message(message_id="m")
    value = message.parts.add().data
    for _ in range(60):
        value = value.list_value.values.add()
    value.string_value = "leaf"
    return message


@pytest.mark.parametrize(
    "message",
    [
        Task(id="t", status={"state": 99}),  # an enum number without a name  # type: ignore[arg-type]
        Message(message_id="m", parts=[Part(raw=b"hi")]),  # bytes
        _deep(),  # nesting past the plan's depth
    ],
)
def test_what_it_leaves_to_message_to_dict(message: Any) -> None:
    assert_same(message)


def test_what_message_to_dict_refuses_it_still_refuses() -> None:
    with pytest.raises(json_format.SerializeToJsonError):
        message_to_dict(_non_finite())
    assert TaskState.Name(TaskState.TASK_STATE_WORKING) == "TASK_STATE_WORKING"
