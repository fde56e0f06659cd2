"""The client's JSON-RPC answers parsed by proto_parse: the same messages, a2a-sdk's otherwise."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from a2a.client import ClientConfig
from a2a.client.transports.jsonrpc import JsonRpcTransport
from a2a.types import AgentCard, AgentInterface, SendMessageResponse, Task
from a2a.utils.proto_utils import parse_lenient
from google.protobuf.json_format import ParseError
from helpers.agent_harness import running_agent
from helpers.agent_skills import AllowAll
from helpers.builders import SkillsPlugin, registry_of, simple_skill

from skillrack.client.jsonrpc_answers import (
    LeanClientFactory,
    LeanJsonRpcTransport,
    parse_answer,
)
from skillrack.client.skill_client import SkillClient

ANSWER: dict[str, Any] = {
    "task": {
        "id": "t-1",
        "contextId": "c-1",
        "status": {"state": "TASK_STATE_COMPLETED", "timestamp": "2026-12-04T20:37:53.8Z"},
        "artifacts": [
            {"artifactId": "a", "name": "probe", "parts": [{"data": {"skill": "probe"}}]}
        ],
    }
}


@pytest.fixture(scope="module")
def agent() -> Iterator[str]:
    registry = registry_of([("probe", SkillsPlugin(simple_skill("probe"))), ("allow", AllowAll())])
    with running_agent(registry) as url:
        yield url


def test_an_answer_is_the_message_parse_lenient_builds() -> None:
    ours = parse_answer(ANSWER, SendMessageResponse())
    assert (
        ours.SerializeToString() == parse_lenient(ANSWER, SendMessageResponse()).SerializeToString()
    )


def test_what_proto_parse_declines_is_parsed_by_parse_lenient_from_scratch() -> None:
    """An unknown member (ignored by ParseDict) declines part-way: nothing half-filled is kept."""
    odd = {"task": {**ANSWER["task"], "colour": "red"}}
    ours = parse_answer(odd, SendMessageResponse())
    assert ours == parse_lenient(odd, SendMessageResponse())
    assert ours.task.status.timestamp.ToJsonString() == "2026-12-04T20:37:53.800Z"
    late = {"id": "t", "status": {"state": "TASK_STATE_WORKING"}, "x": 1}  # declined at "x"
    assert parse_answer(late, Task()) == parse_lenient(late, Task())


def test_what_parse_lenient_refuses_it_still_refuses() -> None:
    bad = {"id": "t", "status": {"timestamp": "not a time"}}
    with pytest.raises(ParseError, match="timestamp"):
        parse_answer(bad, Task())


def test_only_a_plain_jsonrpc_transport_is_replaced() -> None:
    card = AgentCard(name="a", version="1")
    for binding, version in (("JSONRPC", "1.0"), ("JSONRPC", "0.3"), ("HTTP+JSON", "1.0")):
        del card.supported_interfaces[:]
        card.supported_interfaces.append(
            AgentInterface(url="http://127.0.0.1:1/", protocol_binding=binding,
                           protocol_version=version)
        )  # fmt: skip
        config = ClientConfig(supported_protocol_bindings=[binding])
        transport = LeanClientFactory(config).create(card)._transport  # type: ignore[attr-defined]
        lean = binding == "JSONRPC" and version == "1.0"
        assert isinstance(transport, LeanJsonRpcTransport) is lean, (binding, version)
        if binding == "JSONRPC" and not lean:
            assert type(transport) is not JsonRpcTransport  # protocol 0.3's own transport


async def test_a_call_goes_through_the_lean_transport(agent: str) -> None:
    async with SkillClient() as client:
        result = await client.call(agent, "probe", {"text": "hi"})
        assert result.state == "TASK_STATE_COMPLETED"
        sdk_client = await client.a2a(agent, "a look", lambda made, _: _returning(made))
        assert isinstance(sdk_client._transport, LeanJsonRpcTransport)


async def _returning(value: Any) -> Any:
    return value
