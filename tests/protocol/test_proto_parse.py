"""proto_parse builds exactly what json_format.ParseDict builds, or leaves it to ParseDict."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from a2a.types import (
    CancelTaskRequest,
    GetTaskRequest,
    Message,
    SendMessageRequest,
    SendMessageResponse,
    TaskPushNotificationConfig,
)
from google.protobuf import json_format
from hypothesis import given, settings
from hypothesis import strategies as st
from test_proto_json import JSON  # the same JSON values proto_json is checked on

from skillrack.protocol.messages import EXTENSION_URI
from skillrack.protocol.proto_parse import parse_dict

#: What a SendMessage's params look like: every field a client sends, most of them optional.
PART = st.one_of(
    st.fixed_dictionaries(
        {"data": JSON.filter(lambda value: value is not None)},  # null: see DECLINED
        optional={"mediaType": st.text(max_size=5)},
    ),
    st.fixed_dictionaries({"text": st.text(max_size=8)}, optional={"filename": st.text()}),
    st.fixed_dictionaries({"url": st.text(max_size=8)}, optional={"metadata": st.dictionaries(
        st.text(max_size=4), JSON, max_size=2)}),
)  # fmt: skip
MESSAGE = st.fixed_dictionaries(
    {"messageId": st.text(max_size=8), "parts": st.lists(PART, max_size=3)},
    optional={
        "role": st.sampled_from(["ROLE_USER", "ROLE_AGENT", "ROLE_UNSPECIFIED"]),
        "contextId": st.text(max_size=4),
        "task_id": st.text(max_size=4),
        "extensions": st.lists(st.text(max_size=6), max_size=2),
        "referenceTaskIds": st.lists(st.text(max_size=4), max_size=2),
        "metadata": st.dictionaries(st.text(max_size=4), JSON, max_size=3),
    },
)
PARAMS = st.fixed_dictionaries(
    {"message": MESSAGE},
    optional={
        "configuration": st.fixed_dictionaries(
            {},
            optional={
                "historyLength": st.integers(-(2**31), 2**31 - 1),
                "returnImmediately": st.booleans(),
                "acceptedOutputModes": st.lists(st.text(max_size=4), max_size=2),
            },
        ),
        "metadata": st.dictionaries(st.text(max_size=4), JSON, max_size=3),
        "tenant": st.text(max_size=4),
    },
)


def parse_dict_of(params: Any, message_type: Any = SendMessageRequest) -> Any:
    return json_format.ParseDict(params, message_type(), ignore_unknown_fields=True)


def assert_same(params: Any, message_type: Any = SendMessageRequest) -> None:
    """parse_dict builds ParseDict's message (same bytes: same map layout), or declines."""
    before = copy.deepcopy(params)
    ours = parse_dict(params, message_type())
    assert params == before, "the value it read must not change"
    try:
        theirs = parse_dict_of(params, message_type)
    except json_format.ParseError:
        assert ours is None, "ParseDict refuses it: parse_dict must leave it to ParseDict"
        return
    if ours is not None:
        assert ours.SerializeToString() == theirs.SerializeToString()
        assert json_format.MessageToJson(ours) == json_format.MessageToJson(theirs)


@settings(max_examples=300, deadline=None)
@given(PARAMS)
def test_the_same_message_as_parse_dict(params: dict[str, Any]) -> None:
    assert_same(params)
    assert parse_dict(params, SendMessageRequest()) is not None, "an ordinary request is handled"


def invocation() -> dict[str, Any]:
    return {
        "message": {
            "messageId": "m-1",
            "role": "ROLE_USER",
            "extensions": [EXTENSION_URI],
            "parts": [
                {
                    "data": {
                        "skill": "evaluate_resource_condition",
                        "skill_version": "1.0",
                        "arguments": {"condition": {"threshold": 80, "unit": "percent"}},
                    }
                }
            ],
        }
    }


def test_an_invocation_is_handled() -> None:
    params = invocation()
    ours = parse_dict(params, SendMessageRequest())
    assert ours is not None
    assert ours.SerializeToString() == parse_dict_of(params).SerializeToString()
    assert ours.message.parts[0].data.struct_value.fields["skill"].string_value == (
        "evaluate_resource_condition"
    )


def _with(path: list[Any], value: Any) -> dict[str, Any]:
    params = invocation()
    node: Any = params
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return params


#: Shapes it leaves to ParseDict: what ParseDict ignores, clears, refuses or converts
#: in ways not handled here.  Each must come back None, whatever ParseDict then does.
DECLINED = {
    "an unknown member (ignored by ParseDict)": _with(["message", "color"], "red"),
    "an extension-looking member": _with(["message", "[a.b]"], 1),
    "null for a field (cleared by ParseDict)": _with(["message", "contextId"], None),
    "null for a part's data": _with(["message", "parts", 0, "data"], None),
    "an enum by number": _with(["message", "role"], 1),
    "an unknown enum name": _with(["message", "role"], "ROLE_NOBODY"),
    "a number for a string": _with(["message", "messageId"], 7),
    "a string for a bool": _with(["configuration"], {"returnImmediately": "true"}),
    "a float for an int32": _with(["configuration"], {"historyLength": 2.0}),
    "an int32 out of range": _with(["configuration"], {"historyLength": 2**31}),
    "a string for an int32": _with(["configuration"], {"historyLength": "3"}),
    "a field under both names": _with(["message", "message_id"], "m-2"),
    "two members of a oneof": _with(["message", "parts", 0, "text"], "hi"),
    "a list for a message": _with(["message"], [1]),
    "a string for a repeated field": _with(["message", "extensions"], "urn:x"),
    "null in a repeated field": _with(["message", "extensions"], [None]),
    "a string for a Struct": _with(["metadata"], "x"),
    "bytes (base64)": _with(["message", "parts", 0], {"raw": "aGk="}),
    "a lone surrogate": _with(["message", "messageId"], "\ud800"),
    "a lone surrogate in data": _with(["message", "parts", 0, "data"], {"k": "\udc00"}),
    "nesting near the recursion limit": _with(
        ["message", "parts", 0, "data"], json.loads("[" * 30 + "]" * 30)
    ),
    "a tuple, not a JSON array": _with(["message", "extensions"], ("urn:x",)),
}


@pytest.mark.parametrize("name", sorted(DECLINED))
def test_what_it_leaves_to_parse_dict(name: str) -> None:
    params = DECLINED[name]
    assert parse_dict(params, SendMessageRequest()) is None
    assert_same(params)


def test_the_first_of_two_names_is_not_merged_with_the_second() -> None:
    """ParseDict lets a field's second spelling win; parse_dict declines rather than guess."""
    params = _with(["message", "message_id"], "m-2")
    assert parse_dict_of(params).message.message_id == "m-2"
    assert parse_dict(params, SendMessageRequest()) is None


@pytest.mark.parametrize(
    ("message_type", "params"),
    [
        (GetTaskRequest, {"id": "t-1", "historyLength": 3}),
        (CancelTaskRequest, {"id": "t-1", "metadata": {"why": ["x", 1.5, None]}}),
        (Message, {"messageId": "m", "parts": [{"data": {}}, {"data": []}, {"text": ""}]}),
        (TaskPushNotificationConfig, {"url": "https://h/", "taskId": "t"}),
        (SendMessageRequest, {}),
    ],
)
def test_other_request_types(message_type: Any, params: dict[str, Any]) -> None:
    assert_same(params, message_type)


def completed_task() -> dict[str, Any]:
    """A skillrack agent's answer to a SendMessage: a Task with timestamps, records, history."""
    data = {"unit": "percent", "value": 26.0, "observed_at": "2026-12-04T20:37:53Z"}
    return {
        "task": {
            "id": "t-1",
            "contextId": "c-1",
            "status": {"state": "TASK_STATE_COMPLETED", "timestamp": "2026-12-04T20:37:53.824095Z"},
            "artifacts": [
                {
                    "artifactId": "observation-1",
                    "name": "resource-observation",
                    "parts": [{"data": data, "mediaType": "application/json"}],
                    "extensions": [EXTENSION_URI],
                },
            ],
            "history": [invocation()["message"] | {"taskId": "t-1", "contextId": "c-1"}],
        }
    }


def test_an_answer_with_timestamps_is_handled() -> None:
    answer = completed_task()
    ours = parse_dict(answer, SendMessageResponse())
    assert ours is not None
    assert_same(answer, SendMessageResponse)
    assert ours.task.status.timestamp.ToJsonString() == "2026-12-04T20:37:53.824095Z"


@pytest.mark.parametrize(
    "stamp",
    ["2026-12-04T20:37:53Z", "2026-12-04T20:37:53.5+02:00", "1970-01-01T00:00:00Z",
     "0001-01-01T00:00:00Z", "9999-12-31T23:59:59.999999999Z"],
)  # fmt: skip
def test_timestamps_as_parse_dict_reads_them(stamp: str) -> None:
    answer = completed_task()
    answer["task"]["status"]["timestamp"] = stamp
    assert parse_dict(answer, SendMessageResponse()) is not None
    assert_same(answer, SendMessageResponse)


@pytest.mark.parametrize(
    "stamp", ["yesterday", "2026-13-04T20:37:53Z", "2026-12-04 20:37:53", 1700000000, ""]
)
def test_a_timestamp_parse_dict_refuses_is_left_to_it(stamp: Any) -> None:
    answer = completed_task()
    answer["task"]["status"]["timestamp"] = stamp
    assert parse_dict(answer, SendMessageResponse()) is None
    assert_same(answer, SendMessageResponse)


#: Strings near the UTC form: every digit position, the fraction and the zone varied.
_NEAR_UTC = st.builds(
    "{:04d}-{:02d}-{:02d}T{:02d}:{:02d}:{:02d}{}{}".format,
    st.integers(0, 10_000),
    st.integers(0, 13),
    st.integers(0, 32),
    st.integers(0, 25),
    st.integers(0, 61),
    st.integers(0, 62),
    st.one_of(
        st.just(""), st.just("."), st.text("0123456789", min_size=1, max_size=11).map(".{}".format)
    ),
    st.sampled_from(["Z", "z", "+00:00", "-05:30", "Zx", ""]),
)


@settings(max_examples=500)
@given(_NEAR_UTC)
def test_the_utc_fast_path_reads_as_from_json_string(stamp: str) -> None:
    """_utc_seconds sets what Timestamp.FromJsonString sets, or leaves the string to it."""
    from google.protobuf.timestamp_pb2 import Timestamp

    from skillrack.protocol.proto_parse import _utc_seconds

    expected = Timestamp()
    try:
        expected.FromJsonString(stamp)
    except ValueError:
        assert _utc_seconds(stamp) is None
        return
    read = _utc_seconds(stamp)
    if read is not None:
        assert read == (expected.seconds, expected.nanos)
    answer = completed_task()
    answer["task"]["status"]["timestamp"] = stamp
    assert_same(answer, SendMessageResponse)
