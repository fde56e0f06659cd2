"""Deep values: what A2A's protobuf carries is the depth that holds, on both bindings.

a2a-sdk holds a Data Part's value as a protobuf ``Value`` and parses every
Task and event it handles; protobuf stops at 100 nested messages, three per
JSON object level.  Before, arguments 20-22 levels deep in a legal recursive
schema (a tree) ended in HTTP 500 / JSON-RPC -32006 (the task was never
created), deeper ones in a2a-sdk's own "invalid request".  Now every depth
limit is lowered to what a Data Part carries
(:data:`skillrack.protocol.values.DATA_PART_DEPTH`), deeper requests are
refused by the body guard with ``resource_limit_exceeded`` before protobuf
sees them, and a handler's too-deep result, progress or record fails its task
with the same code.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from a2a.types import (
    Message,
    Role,
    StreamResponse,
    TaskStatus,
    TaskStatusUpdateEvent,
)
from google.protobuf import json_format, struct_pb2
from google.protobuf.message import DecodeError
from helpers.agent_harness import running_agent
from helpers.agent_skills import AllowAll
from helpers.builders import registry_of

from skillrack import DomainSchema, Skill, SupportingRecord, hookimpl
from skillrack.host.config import Config, ServerSettings
from skillrack.host.registry import Registry
from skillrack.interface.limits import (
    MAX_CARRIED_INSTANCE_DEPTH,
    MAX_CARRIED_SCHEMA_DEPTH,
    WIRE_DATA_DEPTH,
    Limits,
)
from skillrack.protocol.values import DATA_PART_DEPTH
from skillrack.testing.serve import HEADERS

BINDINGS = ["JSONRPC", "HTTP+JSON"]

NODE = {
    "type": "object",
    "properties": {
        "v": {"type": "integer"},
        "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}},
    },
}
TREE = {"$defs": {"node": NODE}, "$ref": "#/$defs/node"}


def tree(levels: int) -> dict[str, Any]:
    """A tree ``levels`` nodes deep: two JSON levels per node (the node, its kids)."""
    node: dict[str, Any] = {"v": 1, "kids": []}
    for _ in range(levels - 1):
        node = {"v": 1, "kids": [node]}
    return node


def objects(depth: int) -> Any:
    """``depth`` nested objects: the costliest nesting for protobuf (three levels each)."""
    value: Any = 1
    for _ in range(depth):
        value = {"k": value}
    return value


def deep_schema(depth: int) -> dict[str, Any]:
    """A schema exactly ``depth`` JSON levels deep."""
    schema: dict[str, Any] = {"enum": [1]} if depth % 2 == 0 else {"type": "object"}
    while _depth(schema) < depth:
        schema = {"type": "object", "properties": {"a": schema}}
    assert _depth(schema) == depth
    return schema


def _depth(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max((_depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((_depth(v) for v in value), default=0)
    return 0


async def echo(arguments: Any, context: Any) -> Any:
    return arguments


async def too_deep_result(arguments: Any, context: Any) -> Any:
    return objects(MAX_CARRIED_INSTANCE_DEPTH + 1)


async def too_deep_progress(arguments: Any, context: Any) -> Any:
    await context.publish_progress(objects(DATA_PART_DEPTH + 5))
    return {}


async def too_deep_record(arguments: Any, context: Any) -> Any:
    await context.publish_record("r", objects(MAX_CARRIED_INSTANCE_DEPTH + 1))
    return {}


def _skill(skill_id: str, handler: Any, schema: Any = None, **extra: Any) -> Skill:
    schema = {"type": "object"} if schema is None else schema
    return Skill(
        id=skill_id,
        version="1.0",
        name=skill_id,
        description="deep values",
        input_schema=DomainSchema.inline(schema, schema_uri=f"urn:t:{skill_id}:in", version="1.0"),
        output_schema=DomainSchema.inline(
            schema if handler is echo else {}, schema_uri=f"urn:t:{skill_id}:out", version="1.0"
        ),
        handler=handler,
        **extra,
    )


class DeepSkills:
    @hookimpl
    def register_skills(self, register: Any) -> None:
        register(_skill("tree", echo, TREE))
        register(_skill("deep_result", too_deep_result))
        register(_skill("deep_progress", too_deep_progress))
        register(
            _skill(
                "deep_record",
                too_deep_record,
                supporting_records=(
                    SupportingRecord(
                        "r", DomainSchema.inline({}, schema_uri="urn:t:r", version="1.0")
                    ),
                ),
            )
        )
        # The deepest schema there is room for, where it sits deepest in describe_skill.
        register(
            _skill(
                "deep_schema",
                echo,
                supporting_records=(
                    SupportingRecord(
                        "r",
                        DomainSchema.inline(
                            deep_schema(MAX_CARRIED_SCHEMA_DEPTH),
                            schema_uri="urn:t:deep",
                            version="1.0",
                        ),
                    ),
                ),
            )
        )
        register(
            _skill(
                "picky",
                echo,
                {"type": "object", "properties": {"x": {"not": {"type": "array"}}}},
            )
        )


@pytest.fixture(scope="module")
def registry() -> Registry:
    registry = registry_of([("deep", DeepSkills()), ("allow", AllowAll())])
    assert not registry.refused, registry.refused
    return registry


@pytest.fixture(scope="module")
def http(registry: Registry, tmp_path_factory: pytest.TempPathFactory) -> Iterator[httpx.Client]:
    # Configured deeper than the wire carries: the limits are lowered to what holds.
    config = Config(
        server=ServerSettings(max_json_depth=128, rate_per_minute=100_000),
        limits=Limits(max_instance_depth=64, max_schema_depth=64),
        base_dir=tmp_path_factory.mktemp("deep"),
    )
    with running_agent(registry, config) as url, httpx.Client(base_url=url, timeout=30) as client:
        yield client


def send(http: httpx.Client, binding: str, data: Any) -> httpx.Response:
    message = {"messageId": str(uuid.uuid4()), "role": "ROLE_USER", "parts": [{"data": data}]}
    headers = {**HEADERS, "Content-Type": "application/json"}
    if binding == "JSONRPC":
        body = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": message}}
        return http.post("/", content=json.dumps(body), headers=headers)
    return http.post("/message:send", content=json.dumps({"message": message}), headers=headers)


def call(http: httpx.Client, registry: Registry, binding: str, skill: str, args: Any) -> Any:
    registered = registry.get(skill)
    assert registered is not None
    data = {
        "skill": skill,
        "skill_version": "1.0",
        "interface_digest": registered.interface_digest,
        "arguments": args,
    }
    return send(http, binding, data)


def task_of(response: httpx.Response, binding: str) -> Any:
    assert response.status_code == 200, response.text[:500]
    body = response.json()
    assert "error" not in body, body
    return body["result"]["task"] if binding == "JSONRPC" else body["task"]


def error_code(task: Any) -> str:
    return str(task["status"]["message"]["parts"][0]["data"]["error"]["code"])


def assert_refused_too_deep(response: httpx.Response, binding: str) -> None:
    body = response.json()
    if binding == "JSONRPC":
        assert response.status_code == 200
        assert body["error"]["code"] == -32600, body
        infos = body["error"]["data"]
    else:
        assert response.status_code == 413, body
        infos = body["error"]["details"]
    [info] = [i for i in infos if i.get("domain") == "skillrack"]
    assert info["metadata"]["code"] == "resource_limit_exceeded"
    assert info["metadata"]["pointer"].endswith("/message/parts/0/data")
    assert "Traceback" not in response.text and "protobuf" not in response.text
    assert str(DATA_PART_DEPTH) not in body["error"]["message"]  # thresholds are not disclosed


# The derivation, checked against protobuf itself -------------------------------------------------


def _through_a2a(value: Any) -> None:
    """What a2a-sdk does to a user's Data Part at its deepest: a status event, parsed."""
    part_value = json_format.ParseDict(value, struct_pb2.Value(), max_recursion_depth=1_000)
    message = Message(message_id="m", role=Role.ROLE_USER)
    message.parts.add().data.CopyFrom(part_value)
    event = StreamResponse(status_update=TaskStatusUpdateEvent(status=TaskStatus(message=message)))
    StreamResponse.FromString(event.SerializeToString())


def test_protobuf_carries_exactly_the_data_part_depth() -> None:
    assert DATA_PART_DEPTH == WIRE_DATA_DEPTH == MAX_CARRIED_INSTANCE_DEPTH + 1
    _through_a2a(objects(DATA_PART_DEPTH))
    with pytest.raises(DecodeError):
        _through_a2a(objects(DATA_PART_DEPTH + 1))


def test_configured_depths_are_lowered_to_what_the_wire_carries() -> None:
    limits = Limits(max_instance_depth=64, max_schema_depth=128)
    assert limits.max_instance_depth == MAX_CARRIED_INSTANCE_DEPTH
    assert limits.max_schema_depth == MAX_CARRIED_SCHEMA_DEPTH
    assert Limits(max_instance_depth=5).max_instance_depth == 5


# Against a real server ---------------------------------------------------------------------------


@pytest.mark.parametrize("binding", BINDINGS)
def test_forty_level_tree_is_refused_with_resource_limit_exceeded(
    http: httpx.Client, registry: Registry, binding: str
) -> None:
    assert_refused_too_deep(call(http, registry, binding, "tree", tree(40)), binding)


@pytest.mark.parametrize("levels", [20, 21, 22, 23, 24])
@pytest.mark.parametrize("binding", BINDINGS)
def test_trees_that_once_failed_inside_a2a_are_refused(
    http: httpx.Client, registry: Registry, binding: str, levels: int
) -> None:
    assert_refused_too_deep(call(http, registry, binding, "tree", tree(levels)), binding)


@pytest.mark.parametrize("binding", BINDINGS)
def test_the_deepest_carried_tree_completes(
    http: httpx.Client, registry: Registry, binding: str
) -> None:
    arguments = tree(MAX_CARRIED_INSTANCE_DEPTH // 2)  # 30 JSON levels
    assert _depth(arguments) == MAX_CARRIED_INSTANCE_DEPTH
    task = task_of(call(http, registry, binding, "tree", arguments), binding)
    assert task["status"]["state"] == "TASK_STATE_COMPLETED", task["status"]
    [result] = [a for a in task["artifacts"] if a["artifactId"] == "result"]
    assert result["parts"][0]["data"]["result"] == arguments


@pytest.mark.parametrize("binding", BINDINGS)
def test_deep_metadata_is_refused(http: httpx.Client, binding: str) -> None:
    message = {
        "messageId": str(uuid.uuid4()),
        "role": "ROLE_USER",
        "parts": [{"data": {"skill": "describe_skill", "arguments": {"skill_id": "tree"}}}],
        "metadata": objects(DATA_PART_DEPTH + 1),
    }
    headers = {**HEADERS, "Content-Type": "application/json"}
    if binding == "JSONRPC":
        body = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": message}}
        response = http.post("/", content=json.dumps(body), headers=headers)
    else:
        response = http.post("/message:send", json={"message": message}, headers=headers)
    body = response.json()
    infos = body["error"]["data"] if binding == "JSONRPC" else body["error"]["details"]
    [info] = [i for i in infos if i.get("domain") == "skillrack"]
    assert info["metadata"] == {
        "code": "resource_limit_exceeded",
        "pointer": ("/params" if binding == "JSONRPC" else "") + "/message/metadata",
    }


@pytest.mark.parametrize("skill", ["deep_result", "deep_progress", "deep_record"])
def test_too_deep_outputs_fail_the_task_with_resource_limit_exceeded(
    http: httpx.Client, registry: Registry, skill: str
) -> None:
    task = task_of(call(http, registry, "HTTP+JSON", skill, {}), "HTTP+JSON")
    assert task["status"]["state"] == "TASK_STATE_FAILED", task["status"]
    assert error_code(task) == "resource_limit_exceeded"


@pytest.mark.parametrize("binding", BINDINGS)
def test_the_deepest_schema_is_described(
    http: httpx.Client, registry: Registry, binding: str
) -> None:
    data = {"skill": "describe_skill", "arguments": {"skill_id": "deep_schema"}}
    task = task_of(send(http, binding, data), binding)
    assert task["status"]["state"] == "TASK_STATE_COMPLETED", task["status"]


@pytest.mark.parametrize("binding", BINDINGS)
def test_a_deep_invalid_value_is_reported_without_its_value(
    http: httpx.Client, registry: Registry, binding: str
) -> None:
    """The detail's ``actual`` would not fit in the error's Data Part: it is left out."""
    value: Any = 1
    for _ in range(MAX_CARRIED_INSTANCE_DEPTH - 1):
        value = [value]
    task = task_of(call(http, registry, binding, "picky", {"x": value}), binding)
    assert task["status"]["state"] == "TASK_STATE_REJECTED", task["status"]
    error = task["status"]["message"]["parts"][0]["data"]["error"]
    assert error["code"] == "input_invalid"
    [detail] = error["details"]
    assert detail["instance_path"] == "/x" and "actual" not in detail
