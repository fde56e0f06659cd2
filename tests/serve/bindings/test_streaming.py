"""The agent driven with a2a-sdk's own client: describe_skill, streaming order, cancel."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
from a2a.client import ClientConfig, ClientFactory
from a2a.client.client import ClientCallContext
from a2a.client.service_parameters import ServiceParametersFactory, with_a2a_extensions
from a2a.types import (
    AgentCard,
    CancelTaskRequest,
    Message,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    StreamResponse,
    SubscribeToTaskRequest,
    TaskState,
)
from a2a.utils.constants import TransportProtocol
from a2a.utils.errors import TaskNotCancelableError
from google.protobuf import json_format
from helpers.agent_harness import running_agent
from helpers.builders import VECTOR_DIGEST

from skillrack.host.registry import Registry
from skillrack.protocol.messages import EXTENSION_URI
from skillrack.protocol.values import data_part, from_value

BINDINGS = [TransportProtocol.JSONRPC, TransportProtocol.HTTP_JSON]


@pytest.fixture(scope="module")
def base(registry: Registry) -> Iterator[str]:
    with running_agent(registry) as url:
        yield url


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=30) as client:
        yield client


async def card_of(http: httpx.AsyncClient, base: str) -> AgentCard:
    response = await http.get(base + "/.well-known/agent-card.json")
    return json_format.ParseDict(response.json(), AgentCard(), ignore_unknown_fields=True)


def skill_message(data: Any, task_id: str = "") -> Message:
    return Message(
        message_id=str(uuid.uuid4()),
        role=Role.ROLE_USER,
        parts=[data_part(data)],
        extensions=[EXTENSION_URI],
        task_id=task_id,
    )


CONTEXT = ClientCallContext(
    service_parameters=ServiceParametersFactory.create([with_a2a_extensions([EXTENSION_URI])])
)


async def collect(
    http: httpx.AsyncClient, base: str, binding: str, data: Any, *, streaming: bool
) -> list[StreamResponse]:
    config = ClientConfig(
        streaming=streaming, supported_protocol_bindings=[binding], httpx_client=http
    )
    client = ClientFactory(config).create(await card_of(http, base))
    request = SendMessageRequest(message=skill_message(data))
    return [event async for event in client.send_message(request, context=CONTEXT)]


def domain_request(registry: Registry, skill: str, arguments: Any) -> dict[str, Any]:
    registered = registry.skills[skill]
    return {
        "skill": skill,
        "skill_version": registered.skill.version,
        "interface_digest": registered.interface_digest,
        "arguments": arguments,
    }


@pytest.mark.parametrize("binding", BINDINGS)
async def test_describe_skill_with_the_sdk_client(
    http: httpx.AsyncClient, base: str, binding: str
) -> None:
    data = {"skill": "describe_skill", "arguments": {"skill_id": "evaluate_resource_condition"}}
    [event] = await collect(http, base, binding, data, streaming=False)
    task = event.task
    assert task.status.state == TaskState.TASK_STATE_COMPLETED
    [artifact] = task.artifacts
    result = from_value(artifact.parts[0].data)
    assert result["result"]["interface_digest"] == VECTOR_DIGEST


@pytest.mark.parametrize("binding", BINDINGS)
async def test_streaming_order(
    http: httpx.AsyncClient, base: str, registry: Registry, binding: str
) -> None:
    events = await collect(
        http, base, binding, domain_request(registry, "progressive", {}), streaming=True
    )
    kinds = [e.WhichOneof("payload") for e in events]
    assert kinds[0] == "task"
    assert kinds[-1] == "status_update"
    assert events[-1].status_update.status.state == TaskState.TASK_STATE_COMPLETED
    updates = [e.artifact_update for e in events if e.HasField("artifact_update")]
    names = [u.artifact.name for u in updates]
    final = updates[-1]
    assert final.artifact.name == "progressive" and final.last_chunk and not final.append
    assert from_value(final.artifact.parts[0].data)["result"] == {"done": 3, "complete": True}
    last_record = max(i for i, n in enumerate(names) if n == "step")
    assert last_record < len(names) - 1  # records before the final result
    partials = [u for u in updates[:-1] if u.artifact.name == "progressive"]
    assert partials and all(not u.last_chunk and not u.append for u in partials)


async def test_cancel_while_streaming(
    http: httpx.AsyncClient, base: str, registry: Registry
) -> None:
    config = ClientConfig(streaming=True, httpx_client=http)
    client = ClientFactory(config).create(await card_of(http, base))
    request = SendMessageRequest(
        message=skill_message(domain_request(registry, "slow_cancellable", {"seconds": 20})),
        configuration=SendMessageConfiguration(return_immediately=True),
    )
    events = client.send_message(request, context=CONTEXT)
    first = await anext(events)
    task_id = first.task.id
    await asyncio.sleep(0.2)
    canceled = await client.cancel_task(CancelTaskRequest(id=task_id))
    assert canceled.status.state == TaskState.TASK_STATE_CANCELED
    states = [e.status_update.status.state async for e in events if e.HasField("status_update")]
    assert not states or states[-1] == TaskState.TASK_STATE_CANCELED


async def test_subscribe_and_refused_cancel(
    http: httpx.AsyncClient, base: str, registry: Registry
) -> None:
    config = ClientConfig(streaming=False, httpx_client=http)
    client = ClientFactory(config).create(await card_of(http, base))
    request = SendMessageRequest(
        message=skill_message(domain_request(registry, "slow_uncancellable", {"seconds": 0.6})),
        configuration=SendMessageConfiguration(return_immediately=True),
    )
    [first] = [e async for e in client.send_message(request, context=CONTEXT)]
    with pytest.raises(TaskNotCancelableError):
        await client.cancel_task(CancelTaskRequest(id=first.task.id))
    streaming = ClientFactory(ClientConfig(streaming=True, httpx_client=http)).create(
        await card_of(http, base)
    )
    subscription = streaming.subscribe(SubscribeToTaskRequest(id=first.task.id))
    streamed = [e async for e in subscription]
    states = [e.status_update.status.state for e in streamed if e.HasField("status_update")]
    assert states[-1] == TaskState.TASK_STATE_COMPLETED
