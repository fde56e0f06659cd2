"""Integers a double would round are refused in requests, with a pointer, on both bindings.

A2A 1.0 carries Data Parts as protobuf values, where every number is a
double: 9007199254740993 would run as 9007199254740992.0 and the task
COMPLETE on a number the caller never sent.  The body guard refuses any
integer outside +/-(2^53-1) with ``input_invalid`` (JSON-RPC -32602, REST 400)
and the JSON Pointer of the number in the body, before any task exists.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from helpers.agent_harness import running_agent
from helpers.agent_skills import AllowAll
from helpers.builders import registry_of

from skillrack import DomainSchema, Skill, hookimpl
from skillrack.host.config import Config, ServerSettings
from skillrack.host.registry import Registry
from skillrack.protocol.values import SAFE_INTEGER
from skillrack.testing.serve import HEADERS

BINDINGS = ["JSONRPC", "HTTP+JSON"]
SCHEMA = {
    "type": "object",
    "properties": {
        "n": {"type": "integer"},
        "list": {"type": "array"},
        "a/b": {"type": "integer"},
        "s": {"type": "string"},
    },
}


async def echo(arguments: Any, context: Any) -> Any:
    return arguments


class Counters:
    @hookimpl
    def register_skills(self, register: Any) -> None:
        register(
            Skill(
                id="count",
                version="1.0",
                name="count",
                description="echoes its counters",
                input_schema=DomainSchema.inline(SCHEMA, schema_uri="urn:t:c:in", version="1.0"),
                output_schema=DomainSchema.inline({}, schema_uri="urn:t:c:out", version="1.0"),
                handler=echo,
            )
        )


@pytest.fixture(scope="module")
def registry() -> Registry:
    return registry_of([("counters", Counters()), ("allow", AllowAll())])


@pytest.fixture(scope="module")
def http(registry: Registry, tmp_path_factory: pytest.TempPathFactory) -> Iterator[httpx.Client]:
    config = Config(
        server=ServerSettings(rate_per_minute=100_000), base_dir=tmp_path_factory.mktemp("ints")
    )
    with running_agent(registry, config) as url, httpx.Client(base_url=url, timeout=30) as client:
        yield client


def send(http: httpx.Client, registry: Registry, binding: str, arguments_json: str) -> Any:
    """SendMessage with the arguments as literal JSON text (so that no encoder rounds them)."""
    registered = registry.get("count")
    assert registered is not None
    data = (
        '{"skill": "count", "skill_version": "1.0", "interface_digest": '
        f'"{registered.interface_digest}", "arguments": {arguments_json}}}'
    )
    message = (
        f'{{"messageId": "{uuid.uuid4()}", "role": "ROLE_USER", "parts": [{{"data": {data}}}]}}'
    )
    headers = {**HEADERS, "Content-Type": "application/json"}
    if binding == "JSONRPC":
        body = (
            '{"jsonrpc": "2.0", "id": 1, "method": "SendMessage", '
            f'"params": {{"message": {message}}}}}'
        )
        response = http.post("/", content=body, headers=headers)
    else:
        response = http.post("/message:send", content=f'{{"message": {message}}}', headers=headers)
    return response


def refusal(response: httpx.Response, binding: str) -> dict[str, Any]:
    """The skillrack ErrorInfo of a binding error, after checking the binding's form."""
    body = response.json()
    if binding == "JSONRPC":
        assert response.status_code == 200
        assert body["error"]["code"] == -32602, body
        infos = body["error"]["data"]
    else:
        assert response.status_code == 400, body
        assert body["error"]["code"] == 400, body
        infos = body["error"]["details"]
    [info] = [i for i in infos if i.get("domain") == "skillrack"]
    assert info["metadata"]["code"] == "input_invalid"
    message = body["error"]["message"]
    assert info["metadata"]["pointer"] in message
    return dict(info["metadata"])


def prefix(binding: str) -> str:
    return ("/params" if binding == "JSONRPC" else "") + "/message/parts/0/data/arguments"


@pytest.mark.parametrize(
    "arguments, at",
    [
        pytest.param('{"n": 9007199254740993}', "/n", id="2^53+1"),
        pytest.param('{"n": -9007199254740993}', "/n", id="-(2^53+1)"),
        pytest.param('{"n": 9007199254740992}', "/n", id="2^53"),
        pytest.param('{"n": 123456789012345678901234567890}', "/n", id="30-digits"),
        pytest.param('{"list": [1, 2, [3, 18446744073709551615]]}', "/list/2/1", id="in-a-list"),
        pytest.param('{"a/b": 9007199254740993}', "/a~1b", id="escaped-name"),
    ],
)
@pytest.mark.parametrize("binding", BINDINGS)
def test_unsafe_integer_in_arguments_is_refused_with_its_pointer(
    http: httpx.Client, registry: Registry, binding: str, arguments: str, at: str
) -> None:
    metadata = refusal(send(http, registry, binding, arguments), binding)
    assert metadata["pointer"] == prefix(binding) + at


@pytest.mark.parametrize("binding", BINDINGS)
def test_the_largest_safe_integer_runs_exactly(
    http: httpx.Client, registry: Registry, binding: str
) -> None:
    arguments = {"n": SAFE_INTEGER, "list": [-SAFE_INTEGER], "s": "90071992547409930000"}
    response = send(http, registry, binding, json.dumps(arguments))
    assert response.status_code == 200, response.text
    body = response.json()
    task = body["result"]["task"] if binding == "JSONRPC" else body["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED", task["status"]
    [result] = [a for a in task["artifacts"] if a["artifactId"] == "result"]
    assert result["parts"][0]["data"]["result"] == arguments


@pytest.mark.parametrize("binding", BINDINGS)
def test_unsafe_integer_in_metadata_is_refused(http: httpx.Client, binding: str) -> None:
    message = (
        f'{{"messageId": "{uuid.uuid4()}", "role": "ROLE_USER", "metadata": '
        '{"counter": 18446744073709551615}, "parts": [{"data": {"skill": "describe_skill", '
        '"arguments": {"skill_id": "count"}}}]}'
    )
    headers = {**HEADERS, "Content-Type": "application/json"}
    if binding == "JSONRPC":
        body = (
            '{"jsonrpc": "2.0", "id": 1, "method": "SendMessage", '
            f'"params": {{"message": {message}}}}}'
        )
        response = http.post("/", content=body, headers=headers)
    else:
        response = http.post("/message:send", content=f'{{"message": {message}}}', headers=headers)
    metadata = refusal(response, binding)
    assert metadata["pointer"].endswith("/message/metadata/counter")
