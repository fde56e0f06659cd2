"""A bound on the time a request's body may take to arrive: slow bodies do not hold a slot.

uvicorn bounds the time between requests (``timeout_keep_alive``) but not the
time a client takes to send a body it announced: 100 clients that send their
headers and then one byte a minute hold 100 connections and 100 waiting
requests for as long as they like.  :class:`BodyTimeout` gives the body
``seconds`` from the moment the request reaches it (just before the body
guard reads the body); when they run out it answers HTTP 408 in the binding's
error form (``resource_limit_exceeded``) with ``Connection: close``, so
uvicorn drops the connection, and tells the application the client is gone.
Once the body is complete the deadline no longer applies: a streaming
response waits for a disconnect with ``receive()`` for as long as it streams.
The time to send the headers themselves is bounded by the connection
(:mod:`skillrack.serve.bindings.connections`).
"""

from __future__ import annotations

import asyncio
import time

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from skillrack.errors import ErrorCode
from skillrack.serve.middleware.binding_errors import binding_error


class BodyTimeout:
    """Answers 408 when the request body has not arrived within ``seconds``."""

    def __init__(self, app: ASGIApp, *, seconds: float) -> None:
        self.app = app
        self.seconds = seconds

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        deadline = time.monotonic() + self.seconds
        complete = False  # the whole body has arrived: no deadline any more
        started = False  # a response has started: too late for a 408
        answered = False  # we answered 408: the application's answer goes nowhere

        async def bounded_receive() -> Message:
            nonlocal complete, answered
            if answered:
                return {"type": "http.disconnect"}
            if complete:
                return await receive()
            try:
                async with asyncio.timeout(max(0.0, deadline - time.monotonic())):
                    message = await receive()
            except TimeoutError:
                if not started:
                    answered = True
                    await binding_error(
                        scope,
                        send,
                        status=408,
                        jsonrpc_code=-32000,
                        code=ErrorCode.RESOURCE_LIMIT_EXCEEDED,
                        message="the request body did not arrive in time",
                        headers=[(b"connection", b"close")],
                    )
                return {"type": "http.disconnect"}
            if message["type"] != "http.request" or not message.get("more_body", False):
                complete = True
            return message

        async def tracked_send(message: Message) -> None:
            nonlocal started
            if answered:
                return
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        await self.app(scope, bounded_receive, tracked_send)
