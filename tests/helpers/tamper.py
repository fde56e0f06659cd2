"""A deliberately broken agent: ASGI middleware that rewrites a real agent's JSON answers.

Tests wrap a real skillrack app with :class:`Tamper` to make it lie in one
precise way (a changed advertised digest, an embedded schema edited without
its digest, another skill's document, an invalid result after completion)
and to count what clients send, so that "nothing was sent" can be asserted.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

JsonEdit = Callable[[Any], Any]


class Tamper:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.card: JsonEdit | None = None
        self.describe: JsonEdit | None = None  # edits the describe_skill result object
        self.result: JsonEdit | None = None  # edits a completed domain Task
        self.rejected: JsonEdit | None = None  # edits a REJECTED or FAILED Task
        self.sent: list[Any] = []  # request objects received (Data Part values)

    def clear(self) -> None:
        self.card = self.describe = self.result = self.rejected = None
        self.sent.clear()

    def describes(self) -> int:
        return sum(
            1 for r in self.sent if isinstance(r, dict) and r.get("skill") == "describe_skill"
        )

    def domain_calls(self) -> int:
        return sum(1 for r in self.sent if isinstance(r, dict) and "interface_digest" in r)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        body = b""
        more = True
        messages: list[Message] = []
        if scope["method"] == "POST":
            while more:
                message = await receive()
                messages.append(message)
                body += message.get("body", b"")
                more = message.get("more_body", False)
            self._record(body)
        replay = iter(messages)

        async def receive_again() -> Message:
            return next(replay, None) or await receive()

        start: Message | None = None
        chunks: list[bytes] = []

        async def capture(message: Message) -> None:
            nonlocal start
            if message["type"] == "http.response.start":
                start = message
                return
            chunks.append(message.get("body", b""))
            if message.get("more_body"):
                if start is not None:  # streaming: pass through untouched
                    await send(start)
                    start = None
                    for chunk in chunks:
                        await send({"type": "http.response.body", "body": chunk, "more_body": True})
                    chunks.clear()
                return
            if start is None:
                await send(message)
                return
            payload = self._edit(scope["path"], b"".join(chunks))
            drop = {b"content-length", b"etag"}
            headers = [(k, v) for k, v in start["headers"] if k.lower() not in drop]
            status = start["status"]
            if scope["path"].endswith("agent-card.json") and status == 200:
                # The ETag follows the (edited) bytes, so clients notice a changed card.
                etag = '"' + hashlib.sha256(payload).hexdigest()[:32] + '"'
                headers.append((b"etag", etag.encode()))
                if dict(scope["headers"]).get(b"if-none-match", b"").decode() == etag:
                    status, payload = 304, b""
            headers.append((b"content-length", str(len(payload)).encode()))
            await send({**start, "status": status, "headers": headers})
            await send({"type": "http.response.body", "body": payload})

        await self.app(scope, receive_again if scope["method"] == "POST" else receive, capture)

    def _record(self, body: bytes) -> None:
        try:
            request = json.loads(body)
            message = request.get("params", request)["message"]
            self.sent.append(message["parts"][0].get("data"))
        except (ValueError, KeyError, IndexError, TypeError, AttributeError):
            pass

    def _edit(self, path: str, body: bytes) -> bytes:
        try:
            value = json.loads(body)
        except ValueError:
            return body
        if path.endswith("agent-card.json"):
            if self.card is not None:
                value = self.card(value)
            return json.dumps(value).encode()
        task = value.get("result", value).get("task") if isinstance(value, dict) else None
        state = task.get("status", {}).get("state") if isinstance(task, dict) else None
        if state in ("TASK_STATE_REJECTED", "TASK_STATE_FAILED") and self.rejected is not None:
            self.rejected(task)
        if isinstance(task, dict) and task.get("status", {}).get("state") == "TASK_STATE_COMPLETED":
            artifacts = task.get("artifacts", [])
            if artifacts and artifacts[0].get("name") == "describe_skill" and self.describe:
                data = artifacts[0]["parts"][0]["data"]
                artifacts[0]["parts"][0]["data"] = self.describe(data)
            elif self.result is not None and not (
                artifacts and artifacts[0].get("name") == "describe_skill"
            ):
                self.result(task)
        return json.dumps(value).encode()
