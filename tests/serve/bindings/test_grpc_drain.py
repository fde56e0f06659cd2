"""A draining replica over gRPC: ``UNAVAILABLE`` with ``retry-after`` for a Message, reads go on.

A real ``skillrack serve`` with a gRPC port runs a long task; it gets SIGTERM
and, while it waits ``shutdown_grace`` for that task, a gRPC ``SendMessage``
is refused retryably (the HTTP bindings' 503), counted in
``skillrack_unavailable_refusals_total``, and ``GetTask`` still answers.
"""

from __future__ import annotations

import asyncio
import signal
import time
import uuid
from pathlib import Path

import grpc
import grpc.aio
import httpx
from a2a.types import GetTaskRequest, Message, Part, Role, SendMessageRequest, a2a_pb2_grpc
from a2a.utils.grpc_status import status_from_call
from google.protobuf import json_format, struct_pb2
from google.rpc import error_details_pb2
from helpers.scraped import refusals
from helpers.served_process import probe_request, send, start, write_config

from skillrack.protocol.messages import EXTENSION_URI
from skillrack.serve.bindings.operator_endpoints import READYZ_PATH
from skillrack.testing.serve import free_port, wait_for_state

METADATA = [("a2a-version", "1.0"), ("a2a-extensions", EXTENSION_URI)]


def _message(data: object) -> SendMessageRequest:
    value = struct_pb2.Value()
    json_format.ParseDict(data, value)
    return SendMessageRequest(
        message=Message(
            message_id=str(uuid.uuid4()),
            role=Role.ROLE_USER,
            parts=[Part(data=value)],
            extensions=[EXTENSION_URI],
        )
    )


def test_a_draining_replica_refuses_grpc_messages_retryably(tmp_path: Path) -> None:
    port = free_port()
    tmp_path.mkdir(exist_ok=True)
    config = write_config(tmp_path, f"grpc_port = {port}\nshutdown_grace = 4\n")
    agent = start(tmp_path / "agent", config=config).wait_ready()
    try:
        running = send(
            agent.url,
            probe_request(agent.url, "ticker", {"ticks": 1000, "interval": 0.1}),
            immediately=True,
        )
        wait_for_state(agent.url, running["id"], {"TASK_STATE_WORKING"})
        echo = probe_request(agent.url, "echo", {"text": "x"})
        agent.process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 5
        while httpx.get(agent.url + READYZ_PATH, timeout=5).status_code != 503:
            assert time.monotonic() < deadline
            time.sleep(0.02)

        async def over_grpc() -> tuple[grpc.aio.AioRpcError, str]:
            async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
                stub = a2a_pb2_grpc.A2AServiceStub(channel)
                try:
                    await stub.SendMessage(_message(echo), metadata=METADATA)
                except grpc.aio.AioRpcError as refused:
                    task = await stub.GetTask(GetTaskRequest(id=running["id"]), metadata=METADATA)
                    return refused, str(task.status.state)
            raise AssertionError("a draining replica accepted a gRPC message")

        assert refusals(agent.url, "draining") == 0
        refused, state = asyncio.run(over_grpc())
        assert refusals(agent.url, "draining") == 1
        assert refused.code() == grpc.StatusCode.UNAVAILABLE, refused
        assert "shutting down" in (refused.details() or "")
        assert dict(refused.trailing_metadata() or ())["retry-after"] == "1"
        status = status_from_call(refused)
        assert status is not None
        infos = []
        for detail in status.details:
            info = error_details_pb2.ErrorInfo()
            if detail.Unpack(info):
                infos.append(dict(info.metadata))
        assert infos == [{"code": "resource_limit_exceeded"}]
        assert state == str(2)  # TASK_STATE_WORKING: reads go on while draining
        assert agent.process.wait(timeout=30) is not None
    finally:
        agent.stop()
