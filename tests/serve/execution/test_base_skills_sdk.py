"""The example vendor's base-A2A help skill through a2a-sdk's own client, on all three bindings.

A real ``skillrack serve`` (the example vendor plugin, gRPC on its own port)
answers the text "help" with one agent Message and no Task, whether the
client speaks JSON-RPC, HTTP+JSON or gRPC, streaming or not; the text is the
same everywhere.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc.aio
import httpx
import pytest
from a2a.client import ClientConfig, ClientFactory
from a2a.types import AgentCard, Message, Part, Role, SendMessageRequest
from a2a.utils.constants import TransportProtocol
from google.protobuf import json_format
from helpers.example_vendor import example_vendor_env

from skillrack.testing.serve import CARD_PATH, free_port, subprocess_agent

BINDINGS = [TransportProtocol.JSONRPC, TransportProtocol.HTTP_JSON, TransportProtocol.GRPC]


@pytest.fixture(scope="module")
def card(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AgentCard]:
    workdir: Path = tmp_path_factory.mktemp("base-sdk")
    args = ["--grpc-port", str(free_port()), "--store", f"sqlite:///{workdir / 'tasks.db'}"]
    env = example_vendor_env(workdir / "site")  # tox's core env holds only the host
    with subprocess_agent(workdir, env=env, args=args) as agent:
        value = httpx.get(agent.url + CARD_PATH, timeout=10).json()
        yield json_format.ParseDict(value, AgentCard(), ignore_unknown_fields=True)


async def _events(card: AgentCard, binding: str, streaming: bool) -> list[Any]:
    async with httpx.AsyncClient(timeout=30) as http:
        config = ClientConfig(
            streaming=streaming,
            supported_protocol_bindings=[binding],
            httpx_client=http,
            grpc_channel_factory=grpc.aio.insecure_channel,
        )
        client = ClientFactory(config).create(card)
        message = Message(
            message_id=str(uuid.uuid4()), role=Role.ROLE_USER, parts=[Part(text="help")]
        )
        try:
            return [e async for e in client.send_message(SendMessageRequest(message=message))]
        finally:
            await client.close()


@pytest.mark.parametrize("streaming", [False, True], ids=["send", "stream"])
@pytest.mark.parametrize("binding", BINDINGS)
async def test_help_answers_with_one_message_on_every_binding(
    card: AgentCard, binding: str, streaming: bool
) -> None:
    [event] = await _events(card, binding, streaming)
    assert event.HasField("message"), event
    reply = event.message
    assert reply.role == Role.ROLE_AGENT and not reply.task_id
    [part] = reply.parts
    assert "evaluate_resource_condition 1.0" in part.text
    assert "skillrack call URL --text help" in part.text
