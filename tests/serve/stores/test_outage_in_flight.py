"""Requests in flight when the task store goes away get the retryable 503, never ``internal error``.

A real ``skillrack serve`` on a PostgreSQL of the test's own
(:mod:`helpers.own_postgres`) runs one blocking ``SendMessage`` of a slow skill
and a streaming one in each binding (JSON-RPC, HTTP+JSON, gRPC) while clients keep sending
``describe_skill``; the database is stopped under them.  Every request that
does not complete is answered as the later ones are: HTTP 503 with
``Retry-After`` and the draft's error object naming the store (gRPC
``UNAVAILABLE`` with ``retry-after``; a stream's last event), never a
traceback or ``internal error``,
and no task whose end could not be saved is reported done.  Each such answer,
and a gRPC call refused up front, counts once in
``skillrack_unavailable_refusals_total``.  The replica stays
up and serves again once the database is back.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import grpc.aio
import httpx
import pytest
from a2a.types import Message, Part, Role, SendMessageRequest, a2a_pb2_grpc
from google.protobuf import json_format, struct_pb2
from helpers.own_postgres import OwnPostgres, own_postgres
from helpers.scraped import refusals
from helpers.served_process import probe_request, send, start, write_config

from skillrack.protocol.messages import EXTENSION_URI
from skillrack.serve.bindings.operator_endpoints import READYZ_PATH
from skillrack.testing.serve import HEADERS, free_port, message, rpc

pytestmark = pytest.mark.slow

LEASE_S = 1.5
#: How long the slow skill runs: it ends while the database is down.
TICKS, INTERVAL = 12, 0.25
STORE_NAMED = "the task store is unreachable"
GRPC_METADATA = [("a2a-version", "1.0"), ("a2a-extensions", EXTENSION_URI)]


@pytest.fixture
def postgres() -> Iterator[OwnPostgres]:
    with own_postgres() as server:
        yield server


def _jsonrpc(url: str, request: dict[str, Any]) -> httpx.Response:
    body = {
        "jsonrpc": "2.0",
        "id": "1",
        "method": "SendMessage",
        "params": {"message": message(request)},
    }
    return httpx.post(url + "/", json=body, headers=HEADERS, timeout=60)


def _rest(url: str, request: dict[str, Any]) -> httpx.Response:
    body = {"message": message(request)}
    return httpx.post(url + "/message:send", json=body, headers=HEADERS, timeout=60)


def _events(url: str, request: dict[str, Any], binding: str) -> list[Any]:
    """Every event of a streaming Message (JSON-RPC or HTTP+JSON), as JSON."""
    if binding == "JSONRPC":
        path, body = "/", {"jsonrpc": "2.0", "id": "1", "method": "SendStreamingMessage"}
        body["params"] = {"message": message(request)}
    else:
        path, body = "/message:stream", {"message": message(request)}
    headers = {**HEADERS, "Accept": "text/event-stream"}
    with httpx.stream("POST", url + path, json=body, headers=headers, timeout=60) as response:
        assert response.status_code == 200, response.read()
        return [
            json.loads(line.removeprefix("data:"))
            for line in response.iter_lines()
            if line.startswith("data:")
        ]


def _assert_stream_ends_with_store_error(events: list[Any], binding: str) -> None:
    """A stream's status is sent: its last event is the store's error, and nothing said done."""
    assert events, binding
    text = json.dumps(events)
    assert "-32603" not in text and "INTERNAL" not in text, text
    assert "TASK_STATE_COMPLETED" not in text, text
    error = events[-1]["error"]
    assert error["message"].startswith(STORE_NAMED), (binding, error)
    details = error["data"] if binding == "JSONRPC" else error["details"]
    assert details[0]["metadata"]["code"] == "resource_limit_exceeded", (binding, error)


def _grpc(port: int, request: dict[str, Any], *, streaming: bool = False) -> Any:
    """The Task's state (or every event's kind, ``streaming``), or the status that ended it."""
    value = struct_pb2.Value()
    json_format.ParseDict(request, value)
    sent = SendMessageRequest(
        message=Message(
            message_id=str(uuid.uuid4()),
            role=Role.ROLE_USER,
            parts=[Part(data=value)],
            extensions=[EXTENSION_URI],
        )
    )

    async def call() -> Any:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = a2a_pb2_grpc.A2AServiceStub(channel)
            try:
                if streaming:
                    events = stub.SendStreamingMessage(sent, metadata=GRPC_METADATA, timeout=60)
                    return [str(event) async for event in events]
                answer = await stub.SendMessage(sent, metadata=GRPC_METADATA, timeout=60)
            except grpc.aio.AioRpcError as refused:
                return refused
            return str(answer.task.status.state)

    return asyncio.run(call())


def _assert_store_refusal(answer: httpx.Response, binding: str) -> None:
    """The 503 the later requests get, in the binding's form: retryable, naming the store."""
    assert answer.status_code == 503, (binding, answer.status_code, answer.text)
    assert answer.headers.get("retry-after") == "2", (binding, answer.headers)
    assert "internal error" not in answer.text and "Traceback" not in answer.text, answer.text
    error = answer.json()["error"]
    assert error["message"].startswith(STORE_NAMED), (binding, error)
    details = error["data"] if binding == "JSONRPC" else error["details"]
    assert details[0]["metadata"]["code"] == "resource_limit_exceeded", (binding, error)
    if binding == "HTTP+JSON":
        assert error["status"] == "UNAVAILABLE", error


def _stored(server: OwnPostgres) -> list[str]:
    """Every task's state as the database holds it."""
    import asyncpg  # type: ignore[import-untyped]

    async def read() -> list[Any]:
        connection = await asyncpg.connect(server.url.replace("+asyncpg", ""), timeout=5)
        try:
            return list(await connection.fetch("SELECT status FROM tasks"))
        finally:
            await connection.close()

    return [
        (json.loads(row["status"]) if isinstance(row["status"], str) else row["status"])["state"]
        for row in asyncio.run(read())
    ]


def _states(url: str) -> list[str]:
    answer = rpc(url, "ListTasks", {})
    return [task["status"]["state"] for task in answer.get("result", {}).get("tasks", [])]


def _working(url: str) -> int:
    return _states(url).count("TASK_STATE_WORKING")


def test_requests_in_flight_when_the_database_goes_away_are_refused_retryably(
    postgres: OwnPostgres, tmp_path: Path
) -> None:
    port = free_port()
    config = write_config(tmp_path, f"task_lease_seconds = {LEASE_S}\ngrpc_port = {port}\n")
    agent = start(tmp_path / "replica", args=("--store", postgres.url), config=config)
    agent.wait_ready()
    try:
        slow = probe_request(agent.url, "ticker", {"ticks": TICKS, "interval": INTERVAL})
        describe = {"skill": "describe_skill", "arguments": {"skill_id": "echo"}}
        answers: dict[str, Any] = {}
        described: list[httpx.Response] = []
        stop = threading.Event()

        def blocking(binding: str) -> None:
            if binding in ("JSONRPC stream", "HTTP+JSON stream"):
                answers[binding] = _events(agent.url, slow, binding.split()[0])
            elif binding == "JSONRPC":
                answers[binding] = _jsonrpc(agent.url, slow)
            elif binding == "HTTP+JSON":
                answers[binding] = _rest(agent.url, slow)
            else:
                answers[binding] = _grpc(port, slow, streaming=binding == "gRPC stream")

        def describing() -> None:
            with httpx.Client(timeout=60) as http:
                while not stop.is_set():
                    body = {
                        "jsonrpc": "2.0",
                        "id": "1",
                        "method": "SendMessage",
                        "params": {"message": message(describe)},
                    }
                    described.append(http.post(agent.url + "/", json=body, headers=HEADERS))

        plain = ("JSONRPC", "HTTP+JSON", "gRPC")
        bindings = (*plain, *(f"{b} stream" for b in plain))
        threads = [threading.Thread(target=blocking, args=(b,)) for b in bindings]
        threads += [threading.Thread(target=describing) for _ in range(2)]
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + 15
        while _working(agent.url) < len(bindings):
            assert time.monotonic() < deadline, "the slow requests did not start"
            time.sleep(0.05)
        ran_before = len(described)

        postgres.stop()
        for thread in threads[: len(bindings)]:
            thread.join(timeout=TICKS * INTERVAL + 15)
        stop.set()
        for thread in threads[len(bindings) :]:
            thread.join(timeout=30)
        assert all(not thread.is_alive() for thread in threads), "a request hung"

        # The slow skill ended while the database was down: its end could not be saved,
        # so no binding may report it done; each says what the later requests say.
        _assert_store_refusal(answers["JSONRPC"], "JSONRPC")
        _assert_store_refusal(answers["HTTP+JSON"], "HTTP+JSON")
        for binding in ("gRPC", "gRPC stream"):
            refused = answers[binding]
            assert isinstance(refused, grpc.aio.AioRpcError), f"{binding} reported {refused}"
            assert refused.code() == grpc.StatusCode.UNAVAILABLE, refused
            assert (refused.details() or "").startswith(STORE_NAMED), refused.details()
            assert dict(refused.trailing_metadata() or ())["retry-after"] == "2"
        _assert_stream_ends_with_store_error(answers["JSONRPC stream"], "JSONRPC")
        _assert_stream_ends_with_store_error(answers["HTTP+JSON stream"], "HTTP+JSON")

        # describe_skill in flight as the database went, and after: done or the same 503.
        assert len(described) > ran_before, "no describe_skill ran across the outage"
        for answer in described:
            if answer.status_code == 200 and "result" in answer.json():
                state = answer.json()["result"]["task"]["status"]["state"]
                assert state == "TASK_STATE_COMPLETED", answer.text
            else:
                _assert_store_refusal(answer, "JSONRPC")
        assert any(answer.status_code == 503 for answer in described[ran_before:])
        # A gRPC call once the outage is known is refused up front, as the HTTP ones are.
        upfront = _grpc(port, describe)
        assert isinstance(upfront, grpc.aio.AioRpcError), upfront
        assert upfront.code() == grpc.StatusCode.UNAVAILABLE, upfront
        # Every answer a client got as the store's error counted once: the six slow
        # requests (two of them streams ended by it), the describe_skill 503s, that call.
        refused = sum(1 for answer in described if answer.status_code == 503)
        assert refusals(agent.url, "task_store_unavailable") == len(bindings) + refused + 1
        assert agent.process.poll() is None  # the process stays up
        # A task whose end failed to save is not failed again (nor audited as failed).
        assert "already in a terminal state" not in agent.output(), agent.output()[-3000:]

        postgres.start()
        back = time.monotonic()
        while httpx.get(agent.url + READYZ_PATH, timeout=10).status_code != 200:
            assert time.monotonic() - back < LEASE_S + 5, "not ready after the store returned"
            time.sleep(0.1)
        echoed = send(agent.url, probe_request(agent.url, "echo", {"text": "after"}))
        assert echoed["status"]["state"] == "TASK_STATE_COMPLETED", echoed
        # The slow tasks' ends, held in memory while the database was down, are written
        # now (a client reads them with GetTask before retrying): every task that any
        # answer reported done, the slow ones and the echo are stored completed,
        # and none is left running.
        done = sum(1 for answer in described if answer.status_code == 200)
        deadline = time.monotonic() + 15
        while True:
            stored = _stored(postgres)
            if (
                stored.count("TASK_STATE_COMPLETED") > done + len(bindings)
                or time.monotonic() > deadline
            ):
                break
            time.sleep(0.1)
        assert stored.count("TASK_STATE_COMPLETED") >= done + len(bindings) + 1, (done, stored)
        assert not {"TASK_STATE_SUBMITTED", "TASK_STATE_WORKING"} & set(stored), stored
    finally:
        agent.stop()
