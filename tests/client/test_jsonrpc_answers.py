"""The client's JSON-RPC answers parsed by proto_parse: the same messages, a2a-sdk's otherwise."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from a2a.client import ClientConfig
from a2a.client.transports.jsonrpc import JsonRpcTransport
from a2a.types import (
    AgentCard,
    AgentInterface,
    GetTaskRequest,
    SendMessageRequest,
    SendMessageResponse,
    Task,
)
from a2a.utils.proto_utils import parse_lenient
from google.protobuf.json_format import ParseError
from helpers.agent_harness import running_agent
from helpers.agent_skills import AllowAll
from helpers.builders import SkillsPlugin, registry_of, simple_skill
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from skillrack.client.jsonrpc_answers import (
    LeanClientFactory,
    LeanJsonRpcTransport,
    parse_answer,
    recording,
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


def _answering(answer: dict[str, Any]) -> httpx.AsyncClient:
    def reply(request: httpx.Request) -> httpx.Response:
        rpc = json.loads(request.content)
        return httpx.Response(200, json={"jsonrpc": "2.0", "id": rpc["id"], "result": answer})

    return httpx.AsyncClient(transport=httpx.MockTransport(reply))


@pytest.mark.parametrize("installed", [True, False])
async def test_a2a_sdks_spans_are_opened_only_when_they_can_be_recorded(
    installed: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a tracer provider: a2a-sdk's CLIENT spans under its own names; without: none opened."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    if installed:  # the global provider, as an embedder's set_tracer_provider installs it
        monkeypatch.setattr(trace, "get_tracer_provider", lambda: provider)
    else:  # the traced methods must not even be entered

        def refuse(*args: Any) -> Any:
            raise AssertionError("a span opened that nothing could record")

        monkeypatch.setattr(LeanJsonRpcTransport, "_traced_send_message", refuse)
        monkeypatch.setattr(LeanJsonRpcTransport, "_traced_get_task", refuse)
    assert recording() is installed
    card = AgentCard(name="a", version="1")
    async with _answering(ANSWER) as http:
        lean = LeanJsonRpcTransport(http, card, "http://127.0.0.1:1/")
        sent = await lean.send_message(SendMessageRequest())
        assert sent.task.id == "t-1"
    async with _answering(ANSWER["task"]) as http:
        lean = LeanJsonRpcTransport(http, card, "http://127.0.0.1:1/")
        assert (await lean.get_task(GetTaskRequest(id="t-1"))).id == "t-1"
    names = {span.name: span.kind for span in exporter.get_finished_spans()}
    base = "a2a.client.transports.jsonrpc.JsonRpcTransport"
    if installed:
        assert names[f"{base}.send_message"] == SpanKind.CLIENT
        assert names[f"{base}.get_task"] == SpanKind.CLIENT
    else:
        assert names == {}
