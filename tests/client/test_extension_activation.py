"""The client activates the extension on every request it sends (issue 14, item 6).

The draft's example: "The client activates the extension.  With the HTTP
binding, the request includes: A2A-Extensions: <the extension URI>" and "The
A2A Message also lists that URI in extensions".  A real agent on 127.0.0.1
records every request the client makes (describe_skill, a call in each
response mode, polling, a follow-up answer), on both bindings.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from helpers.agent_harness import running_wrapped
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from skillrack.client.skill_client import SkillClient
from skillrack.host.registry import Registry
from skillrack.protocol.messages import EXTENSION_URI

ARGS = {
    "resource_id": "network-resource-123",
    "condition": {"metric": "utilization", "operator": "gte", "threshold": 80, "unit": "percent"},
}


@dataclass(frozen=True)
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    body: Any


class Recorder:
    """ASGI middleware that records every HTTP request (headers and JSON body) it passes on."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.seen: list[Seen] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        messages: list[Message] = []
        body = b""
        if scope["method"] == "POST":
            more = True
            while more:
                message = await receive()
                messages.append(message)
                body += message.get("body", b"")
                more = message.get("more_body", False)
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        try:
            parsed = json.loads(body) if body else None
        except ValueError:
            parsed = None
        self.seen.append(Seen(scope["method"], scope["path"], headers, parsed))
        replay = iter(messages)

        async def receive_again() -> Message:
            return next(replay, None) or await receive()

        await self.app(scope, receive_again, send)


@pytest.fixture(scope="module")
def agent(registry: Registry) -> Iterator[tuple[str, Recorder]]:
    with running_wrapped(registry, Recorder) as served:
        yield served


@pytest.fixture(params=["JSONRPC", "HTTP+JSON"])
async def client(request: pytest.FixtureRequest) -> AsyncIterator[SkillClient]:
    async with SkillClient(binding=request.param, poll_interval=0.05) as c:
        yield c


def messages_of(seen: Seen) -> list[Any]:
    """The A2A Messages a request body carries (JSON-RPC params or the REST body)."""
    body = seen.body
    if not isinstance(body, dict):
        return []
    params = body.get("params", body)
    message = params.get("message") if isinstance(params, dict) else None
    return [message] if isinstance(message, dict) else []


async def test_extension_activated_on_every_request(
    agent: tuple[str, Recorder], client: SkillClient
) -> None:
    base, recorder = agent
    recorder.seen.clear()
    await client.describe(base, "evaluate_resource_condition")
    for mode in ("sync", "stream", "poll"):
        await client.call(base, "evaluate_resource_condition", ARGS, mode=mode)  # type: ignore[arg-type]
    await client.call(base, "slow_cancellable", {"seconds": 0.3}, mode="poll")
    asked = await client.call(base, "ask_twice", {})
    assert asked.task_id
    await client.respond(base, "ask_twice", asked.task_id, {"window": "now"})

    a2a = [s for s in recorder.seen if not s.path.endswith("agent-card.json")]
    # describe, 3 calls, a polled call (send + at least one GetTask), ask, answer
    assert len(a2a) >= 7
    assert any(s.method == "GET" or "GetTask" in json.dumps(s.body) for s in a2a)  # polling
    for seen in a2a:
        activated = [u.strip() for u in seen.headers.get("a2a-extensions", "").split(",")]
        assert EXTENSION_URI in activated, (seen.method, seen.path)
    sent = [m for s in a2a for m in messages_of(s)]
    assert len(sent) >= 6
    for message in sent:
        assert message.get("extensions") == [EXTENSION_URI], message
