"""Drain on its own: an ``internal error`` caused by a store outage becomes the store's 503.

The application plays a2a-sdk failing a request because the task store went
away while it ran (the outage noticed during the request, as the engine's
error listener does); the answer is the retryable 503 naming the store.  The
same error with no outage, or a success during one, passes unchanged.  Each
answer turned into the store's error is counted once (``DrainState.on_refusal``).
"""

from __future__ import annotations

import json

import pytest
from helpers.asgi import Echo, request
from starlette.types import Receive, Scope, Send

from skillrack.serve.middleware.drain import Drain, DrainState
from skillrack.serve.stores.outages import server_gone

JSONRPC_INTERNAL = b'{"jsonrpc":"2.0","id":"1","error":{"code":-32603,"message":"x"}}'
REST_INTERNAL = b'{"error": {"code": 500, "status": "INTERNAL", "message": "x"}}'


def _watched(counted: list[str] | None = None) -> DrainState:
    state = DrainState()
    state.watched = True  # as on PostgreSQL, where the engine's errors are watched
    if counted is not None:
        state.on_refusal = counted.append  # what build_server wires to the metric
    return state


def _failing(state: DrainState, status: int, body: bytes, *, outage: bool) -> Echo:
    def during(scope: Scope) -> None:
        if outage:
            state.store_down("ConnectionRefusedError: refused")
            state.store_up()  # back already: the request still failed because of it

    return Echo(status=status, body=body, before=during)


@pytest.mark.parametrize(
    ("path", "status", "body"),
    [("/", 200, JSONRPC_INTERNAL), ("/message:send", 500, REST_INTERNAL)],
)
async def test_an_internal_error_during_an_outage_is_the_stores_503(
    path: str, status: int, body: bytes
) -> None:
    counted: list[str] = []
    state = _watched(counted)
    app = Drain(_failing(state, status, body, outage=True), state=state)
    answer = await request(app, path=path, body=b'{"method": "SendMessage"}')
    assert answer.status == 503 and answer.headers["retry-after"] == "2"
    assert counted == ["task_store_unavailable"]
    error = answer.json()["error"]
    assert error["message"].startswith("the task store is unreachable (ConnectionRefusedError")
    assert answer.code() == "resource_limit_exceeded"


@pytest.mark.parametrize(
    ("status", "body", "outage"),
    [(200, JSONRPC_INTERNAL, False), (200, b'{"result": {"task": {}}}', True)],
)
async def test_other_answers_pass_unchanged(status: int, body: bytes, outage: bool) -> None:
    counted: list[str] = []
    state = _watched(counted)
    app = Drain(_failing(state, status, body, outage=outage), state=state)
    answer = await request(app, path="/", body=b"{}")
    assert (answer.status, answer.body) == (status, body)
    assert counted == []


def test_a_server_going_away_is_an_outage_and_a_statement_error_is_not() -> None:
    class DriverError(Exception):
        def __init__(self, sqlstate: str) -> None:
            self.sqlstate = sqlstate

    assert server_gone(DriverError("57P01")) and server_gone(DriverError("08006"))
    assert not server_gone(DriverError("23505")) and not server_gone(ValueError())


async def test_an_unwatched_store_leaves_answers_alone() -> None:
    """On SQLite no outage is watched: nothing is wrapped, an internal error stays one."""
    state = DrainState()
    app = Drain(Echo(status=200, body=JSONRPC_INTERNAL), state=state)
    answer = await request(app, path="/", body=b"{}")
    assert (answer.status, answer.body) == (200, JSONRPC_INTERNAL)


async def test_a_streams_internal_error_event_becomes_the_stores_error() -> None:
    """A stream's 200 is sent before the outage: its last event carries the store's error."""
    counted: list[str] = []
    state = _watched(counted)
    failed = (
        b'event: error\ndata: {"error": {"code": -32603, "message": "[Errno 111]"}, "id": "1", '
    )
    failed += b'"jsonrpc": "2.0"}\n\n'

    async def streaming(scope: Scope, receive: Receive, send: Send) -> None:
        headers = [(b"content-type", b"text/event-stream")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send(
            {"type": "http.response.body", "body": b'data: {"result": {}}\n\n', "more_body": True}
        )
        state.store_down("ConnectionRefusedError: refused")
        await send({"type": "http.response.body", "body": failed})

    answer = await request(Drain(streaming, state=state), path="/", body=b"{}")
    assert answer.status == 200
    events = [
        json.loads(line[5:]) for line in answer.body.split(b"\n") if line.startswith(b"data:")
    ]
    assert events[0] == {"result": {}}
    assert counted == ["task_store_unavailable"]  # the one event rewritten, not the first
    assert events[1]["error"]["code"] == -32000 and events[1]["id"] == "1"
    assert events[1]["error"]["message"].startswith("the task store is unreachable")
    assert events[1]["error"]["data"][0]["metadata"]["code"] == "resource_limit_exceeded"
