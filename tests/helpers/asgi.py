"""One middleware at a time, in process: an echo application behind it, and one request.

The served tests hold the middleware to the wire; these helpers let a test hold
one class to its contract without a server, a store or a plugin: what reached
the application behind it (:class:`Echo`), and what the caller was answered.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
from starlette.types import ASGIApp, Message, Receive, Scope, Send


@dataclass
class Echo:
    """An ASGI app that records each request it is handed and answers with a fixed body."""

    status: int = 200
    body: bytes = b'{"result": "ok"}'
    headers: list[tuple[bytes, bytes]] = field(
        default_factory=lambda: [(b"content-type", b"application/json")]
    )
    #: Called with the scope before answering (to play a part of the application).
    before: Callable[[Scope], None] | None = None
    seen: list[tuple[Scope, bytes]] = field(default_factory=list)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        body = b""
        more = True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        self.seen.append((scope, body))
        if self.before is not None:
            self.before(scope)
        await send({"type": "http.response.start", "status": self.status, "headers": self.headers})
        await send({"type": "http.response.body", "body": self.body})


@dataclass(frozen=True)
class Answer:
    status: int
    headers: httpx.Headers
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)

    def code(self) -> str:
        """The draft's code in the error's ErrorInfo, whichever binding answered."""
        payload = self.json()
        error = payload["error"]
        details = error.get("details") or error.get("data") or []
        return str(details[0]["metadata"]["code"])


async def request(
    app: ASGIApp,
    method: str = "POST",
    path: str = "/message:send",
    body: bytes = b"{}",
    headers: dict[str, str] | None = None,
    client: tuple[str, int] = ("127.0.0.1", 5000),
) -> Answer:
    """Send one request to ``app`` over httpx's ASGI transport."""
    transport = httpx.ASGITransport(app=app, client=client)
    async with httpx.AsyncClient(transport=transport, base_url="http://agent.test") as http:
        response = await http.request(method, path, content=body, headers=headers or {})
        return Answer(response.status_code, response.headers, response.content)


def never_sending() -> Callable[[], Awaitable[Message]]:
    """A ``receive`` whose body never arrives (a client that stalls after its headers)."""
    import asyncio

    async def receive() -> Message:
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    return receive
