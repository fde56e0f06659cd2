"""proto_json writes exactly what json_format.MessageToDict writes, or lets json_format do it."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from a2a.types import (
    AgentCard,
    Artifact,
    Message,
    Part,
    Role,
    SendMessageResponse,
    Task,
    TaskPushNotificationConfig,
    TaskState,
    TaskStatus,
)
from google.protobuf import json_format, struct_pb2, timestamp_pb2
from hypothesis import given, settings
from hypothesis import strategies as st

from skillrack.protocol import proto_json
from skillrack.protocol.proto_json import message_to_dict, remember

JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.integers(-(2**53), 2**53)
    | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=20,
)


def part_of(value: Any, kind: int) -> Part:
    if kind == 0:
        part = Part(media_type="application/json")
        part.data.CopyFrom(json_format.ParseDict(value, struct_pb2.Value()))
        return part
    if kind == 1:
        return Part(text=json.dumps(value), filename="a.txt")
    if kind == 2:
        return Part(raw=json.dumps(value).encode(), media_type="application/octet-stream")
    return Part(url="https://example.com/x")


@st.composite
def tasks(draw: st.DrawFn) -> Task:
    parts = [part_of(draw(JSON), draw(st.integers(0, 3))) for _ in range(draw(st.integers(0, 3)))]
    message = Message(message_id="m", role=Role.ROLE_USER, parts=parts, extensions=["urn:x"])
    task = Task(
        id="t",
        context_id="c",
        status=TaskStatus(state=draw(st.sampled_from(list(TaskState.values())))),
        history=[message] * draw(st.integers(0, 2)),
        artifacts=[Artifact(artifact_id="a", name="n", parts=parts)],
    )
    if draw(st.booleans()):
        task.status.timestamp.FromNanoseconds(draw(st.integers(0, 2**62)))
        task.status.message.CopyFrom(message)
    metadata = draw(st.dictionaries(st.text(max_size=5), JSON, max_size=3))
    if metadata:
        task.metadata.update(metadata)
    return task


@settings(max_examples=200, deadline=None)
@given(tasks())
def test_the_same_dict_in_the_same_order(task: Task) -> None:
    for message in (task, SendMessageResponse(task=task)):
        ours, theirs = message_to_dict(message), json_format.MessageToDict(message)
        assert json.dumps(ours) == json.dumps(theirs)


def test_other_messages_too() -> None:
    card = AgentCard(name="a", version="1")
    card.capabilities.streaming = False
    config = TaskPushNotificationConfig(url="https://h/", task_id="t")
    for message in (card, config, Task(), SendMessageResponse(task=Task())):
        theirs = json_format.MessageToDict(message)
        assert json.dumps(message_to_dict(message)) == json.dumps(theirs)


@pytest.mark.parametrize("number", [math.inf, -math.inf, math.nan])
def test_what_json_format_refuses_it_refuses_the_same_way(number: float) -> None:
    task = Task(id="t", artifacts=[Artifact(artifact_id="a", parts=[Part()])])
    task.artifacts[0].parts[0].data.number_value = number
    with pytest.raises(json_format.SerializeToJsonError) as theirs:
        json_format.MessageToDict(task)
    with pytest.raises(json_format.SerializeToJsonError) as ours:
        message_to_dict(task)
    assert str(ours.value) == str(theirs.value)


#: A prebuilt document with many keys, unicode ones among them: copies list them in other orders.
MANY_KEYS = {
    "skill": "describe_skill",
    "result": {
        "interface_digest": "sha256:0",
        "interface": {
            f"k{i}-\u00e9\u2713{chr(0x4E00 + i)}": {
                "n": i,
                "s": "\u00fc" * i,
                "l": [i, {"b": True}],
            }
            for i in range(120)
        },
    },
}


def _carried(part: Part) -> Task:
    return Task(id="t", context_id="c", artifacts=[Artifact(artifact_id="a", parts=[part])])


def _data(converted: Any) -> Any:
    return converted["artifacts"][0]["parts"][0]["data"]


def test_a_remembered_value_in_the_key_order_of_each_copy() -> None:
    """Each layout of a remembered Value is converted once, never answered with another's."""
    first = Part()
    first.data.CopyFrom(json_format.ParseDict(MANY_KEYS, struct_pb2.Value()))
    remember(first.data)
    copies = [first]
    for _ in range(5):
        copy = Part()
        copy.CopyFrom(copies[-1])
        copies.append(copy)
    # The same document in a larger map: one left with room by members added and removed.
    roomy = Part()
    roomy.CopyFrom(first)
    interface = roomy.data.struct_value.fields["result"].struct_value.fields["interface"]
    for i in range(400):
        interface.struct_value.fields[f"spare-{i}"].null_value = 0
    for i in range(400):
        del interface.struct_value.fields[f"spare-{i}"]
    copies.append(roomy)
    tasks = [_carried(part) for part in copies]
    orders = {json.dumps(json_format.MessageToDict(task), ensure_ascii=False) for task in tasks}
    assert len(orders) > 1  # the layouts differ: their key orders do
    for task in tasks * 2:  # converted, then remembered
        theirs = json.dumps(json_format.MessageToDict(task), ensure_ascii=False)
        assert json.dumps(message_to_dict(task), ensure_ascii=False) == theirs
    assert _data(message_to_dict(tasks[1])) is _data(message_to_dict(tasks[1]))


def test_only_the_remembered_value_is_answered_with_its_dict() -> None:
    """A Value of the same size but other content, or of a layout not kept, is converted anew."""
    kept, other = Part(), Part()
    kept.data.struct_value.update({"skill": "describe_skill", "a": "x"})
    other.data.struct_value.update({"skill": "describe_skill", "b": "x"})
    assert kept.data.ByteSize() == other.data.ByteSize()
    remember(kept.data)
    assert _data(message_to_dict(_carried(kept))) == {"skill": "describe_skill", "a": "x"}
    assert _data(message_to_dict(_carried(other))) == {"skill": "describe_skill", "b": "x"}


def test_at_most_max_remembered_layouts_are_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(proto_json, "_REMEMBERED", {})
    monkeypatch.setattr(proto_json, "MAX_REMEMBERED", 2)
    parts = []
    for letter in "abc":
        part = Part()
        part.data.struct_value.update({"bound": letter})
        remember(part.data)
        parts.append(part)
    for part in parts:
        assert _data(message_to_dict(_carried(part))) == json_format.MessageToDict(part.data)
    assert len(proto_json._REMEMBERED) == 2


def test_a_callers_value_of_a_remembered_size_is_never_kept(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Found by review: a caller's Data Part of a document's size filled the cache for good."""
    monkeypatch.setattr(proto_json, "_REMEMBERED", {})
    monkeypatch.setattr(proto_json, "_SIZES", set())
    monkeypatch.setattr(proto_json, "_CONTENTS", set())
    document = Part()
    document.data.struct_value.update({"skill": "describe_skill", "k": "d" * 60})
    remember(document.data)
    for i in range(proto_json.MAX_REMEMBERED):
        caller = Part()
        caller.data.struct_value.update({"skill": "describe_skill", "k": f"{i:060d}"})
        assert caller.data.ByteSize() == document.data.ByteSize()
        converted = _data(message_to_dict(_carried(caller)))
        assert converted == {"skill": "describe_skill", "k": f"{i:060d}"}
        assert not isinstance(converted, proto_json.Remembered)  # never spliced from a cache
    assert not any(b"0000" in key for key in proto_json._REMEMBERED)
    assert _data(message_to_dict(_carried(document))) is _data(message_to_dict(_carried(document)))


@settings(max_examples=400)
@given(
    seconds=st.integers(min_value=-62135596800, max_value=253402300799),
    nanos=st.one_of(
        st.just(0),
        st.integers(0, 999).map(lambda n: n * 1_000_000),
        st.integers(0, 999_999).map(lambda n: n * 1_000),
        st.integers(0, 999_999_999),
    ),
)
def test_a_timestamp_is_written_as_to_json_string_writes_it(seconds: int, nanos: int) -> None:
    """The fast path (a cached second, integer fractions) writes protobuf's own text."""
    stamp = timestamp_pb2.Timestamp(seconds=seconds, nanos=nanos)
    assert proto_json._timestamp(stamp) == stamp.ToJsonString()
    assert proto_json._timestamp(stamp) == stamp.ToJsonString()  # the second from the cache


@pytest.mark.parametrize("seconds,nanos", [(253402300800, 0), (-62135596801, 0), (0, -1)])
def test_a_timestamp_out_of_range_is_refused_as_to_json_string_refuses_it(
    seconds: int, nanos: int
) -> None:
    stamp = timestamp_pb2.Timestamp(seconds=seconds, nanos=nanos)
    with pytest.raises(ValueError):
        stamp.ToJsonString()
    with pytest.raises(ValueError):
        proto_json._timestamp(stamp)
