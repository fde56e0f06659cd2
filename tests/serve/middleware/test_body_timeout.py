"""BodyTimeout on its own: a body that does not arrive in time is answered 408, once."""

from __future__ import annotations

import asyncio
from typing import Any

from helpers.asgi import Echo, request

from skillrack.serve.middleware.body_timeout import BodyTimeout


async def test_a_stalled_body_is_answered_408_and_the_connection_closed() -> None:
    sent: list[dict[str, Any]] = []
    scope = {"type": "http", "method": "POST", "path": "/message:send", "headers": []}

    async def stalled() -> dict[str, Any]:
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    echo = Echo()
    await asyncio.wait_for(BodyTimeout(echo, seconds=0.05)(scope, stalled, send), timeout=5)
    start = sent[0]
    assert start["status"] == 408
    assert (b"connection", b"close") in start["headers"]
    assert b"resource_limit_exceeded" in sent[1]["body"]
    assert echo.seen == [(scope, b"")]  # the application saw a disconnect, nothing more
    assert len([m for m in sent if m["type"] == "http.response.start"]) == 1


async def test_a_body_that_arrives_in_time_passes() -> None:
    echo = Echo()
    answer = await request(BodyTimeout(echo, seconds=5.0), body=b'{"a": 1}')
    assert answer.status == 200 and echo.seen[0][1] == b'{"a": 1}'
