"""Agents that try to steer, flood or refuse a client, served for real on 127.0.0.1.

For the client's trust-boundary tests (issue 12): a wrapper that counts the
requests carrying a caller's credentials, a decoy whose card names another
server, redirects, bodies of hundreds of megabytes produced lazily (the
server holds one chunk), endless event streams, and an agent that answers
401.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from helpers.agent_harness import running_agent
from helpers.agent_skills import AllowAll, TestSkills
from helpers.builders import registry_of
from skillrack.testing.serve import serving_in_thread

CARD_PATH = "/.well-known/agent-card.json"
#: The credentials the tests hand the client; a server counts requests that carry them.
SECRET_KEY = "s3cret-api-key"
SECRET_TOKEN = "s3cret-bearer"
CREDENTIALS = {"X-API-Key": SECRET_KEY, "Authorization": f"Bearer {SECRET_TOKEN}"}
MB = 1 << 20


@contextmanager
def serving(app: ASGIApp, port: int | None = None) -> Iterator[str]:
    """Serve ``app`` with uvicorn on a loopback port (default: a free one) in a thread."""
    with serving_in_thread(app, port, lifespan="off", force_exit=True) as url:
        yield url  # force_exit: endless streams would otherwise hold the shutdown


@dataclass
class CredentialCounter:
    """ASGI wrapper: counts every request, and those carrying either secret of CREDENTIALS."""

    app: ASGIApp
    requests: int = 0
    with_credentials: list[str] = field(default_factory=list)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            self.requests += 1
            headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
            if headers.get("x-api-key") == SECRET_KEY or SECRET_TOKEN in headers.get(
                "authorization", ""
            ):
                self.with_credentials.append(f"{scope['method']} {scope['path']}")
        await self.app(scope, receive, send)

    def reset(self) -> None:
        self.requests = 0
        self.with_credentials.clear()


def card_of(base_url: str) -> dict[str, Any]:
    """The card an agent serves (fetched without credentials)."""
    card: dict[str, Any] = httpx.get(base_url + CARD_PATH, timeout=10).json()
    return card


def with_interfaces(card: dict[str, Any], url: str) -> dict[str, Any]:
    """``card`` with every interface URL replaced by ``url``."""
    copy = json.loads(json.dumps(card))
    for interface in copy["supportedInterfaces"]:
        interface["url"] = url
    return copy


def decoy(card: Callable[[], dict[str, Any]], post: Any = None) -> Starlette:
    """An agent that serves ``card()`` and answers any POST with ``post(request)``."""

    async def card_route(request: Request) -> Response:
        return JSONResponse(card())

    async def message(request: Request) -> Response:
        if post is None:
            return JSONResponse({"error": "not here"}, status_code=404)
        result: Response = await post(request)
        return result

    return Starlette(
        routes=[Route(CARD_PATH, card_route), Route("/{path:path}", message, methods=["POST"])]
    )


def redirect_to(url: str, status: int = 307) -> Starlette:
    """An agent that answers every GET and POST with a redirect to ``url`` (path kept)."""

    async def go(request: Request) -> Response:
        return RedirectResponse(url + request.url.path, status_code=status)

    return Starlette(routes=[Route("/{path:path}", go, methods=["GET", "POST"])])


def minimal_card(url: str, streaming: bool = False, binding: str = "JSONRPC") -> dict[str, Any]:
    """An A2A 1.0 card with one interface (``binding``) at ``url`` and nothing else."""
    return {
        "name": "hostile",
        "description": "a test agent",
        "version": "1.0",
        "supportedInterfaces": [{"url": url, "protocolBinding": binding, "protocolVersion": "1.0"}],
        "capabilities": {"streaming": streaming},
        "defaultInputModes": ["application/json"],
        "defaultOutputModes": ["application/json"],
        "skills": [],
    }


async def lazy_bytes(
    total: int, head: bytes = b"", chunk: bytes = b" " * MB
) -> AsyncIterator[bytes]:
    """``head`` then spaces up to ``total`` bytes, one shared chunk at a time (no memory)."""
    yield head
    sent = len(head)
    while sent < total:
        yield chunk
        sent += len(chunk)
        await asyncio.sleep(0)


def huge_card_app(total: int = 300 * MB) -> Starlette:
    """A card of ``total`` bytes (valid JSON start, then whitespace), no Content-Length."""

    async def card(request: Request) -> Response:
        return StreamingResponse(
            lazy_bytes(total, b'{"name": "huge"'), media_type="application/json"
        )

    return Starlette(routes=[Route(CARD_PATH, card)])


def _task(task_id: str, state: str = "TASK_STATE_WORKING") -> dict[str, Any]:
    return {"id": task_id, "contextId": "ctx", "status": {"state": state}}


def _rpc(result: dict[str, Any]) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": "1", "result": result}).encode()


def huge_response_app(total: int = 300 * MB, binding: str = "JSONRPC") -> Starlette:
    """A card of its own (one ``binding`` interface); a POST answers ``total`` bytes of JSON."""
    holder: dict[str, str] = {}

    async def post(request: Request) -> Response:
        head = (
            b'{"jsonrpc": "2.0", "id": "1", "result": {"task": '
            + json.dumps(_task("t-huge")).encode()
        )
        return StreamingResponse(lazy_bytes(total, head), media_type="application/json")

    app = decoy(lambda: minimal_card(holder["url"], binding=binding), post)
    app.state.holder = holder
    return app


def endless_stream_app(
    *, chunk_bytes: int = MB, interval: float = 0.0, append: bool = True
) -> Starlette:
    """POST / streams a task, then artifact updates of ``chunk_bytes`` forever."""
    holder: dict[str, str] = {}

    async def events() -> AsyncIterator[bytes]:
        yield b"data: " + _rpc({"task": _task("t-endless")}) + b"\n\n"
        text = "x" * chunk_bytes
        for n in itertools.count():
            update = {
                "artifactUpdate": {
                    "taskId": "t-endless",
                    "contextId": "ctx",
                    "artifact": {"artifactId": "a", "name": "flood", "parts": [{"text": text}]},
                    "append": append and n > 0,
                }
            }
            yield b"data: " + _rpc(update) + b"\n\n"
            await asyncio.sleep(interval)

    async def post(request: Request) -> Response:
        return StreamingResponse(events(), media_type="text/event-stream")

    app = decoy(lambda: minimal_card(holder["url"], streaming=True), post)
    app.state.holder = holder
    return app


def forever_working_app() -> Starlette:
    """Every JSON-RPC request is answered with a task that stays WORKING (polling never ends)."""
    holder: dict[str, str] = {}

    async def post(request: Request) -> Response:
        body = await request.json()
        result = {"task": _task("t-slow")} if body["method"] == "SendMessage" else _task("t-slow")
        return Response(_rpc(result), media_type="application/json")

    app = decoy(lambda: minimal_card(holder["url"]), post)
    app.state.holder = holder
    return app


CHALLENGE = (
    'Bearer realm="skillrack-test", error="invalid_token", '
    'error_description="key k-123 expired \x1b[31m"'
)


def refusing_app(
    status: int = 401, *, card_too: bool = True, binding: str = "JSONRPC"
) -> Starlette:
    """Answers ``status`` with a WWW-Authenticate challenge (the card too, unless ``card_too``)."""
    holder: dict[str, str] = {}

    def refuse() -> Response:
        return JSONResponse(
            {"error": "no"}, status_code=status, headers={"WWW-Authenticate": CHALLENGE}
        )

    async def card(request: Request) -> Response:
        return refuse() if card_too else JSONResponse(minimal_card(holder["url"], binding=binding))

    async def post(request: Request) -> Response:
        return refuse()

    app = Starlette(routes=[Route(CARD_PATH, card), Route("/{path:path}", post, methods=["POST"])])
    app.state.holder = holder
    return app


@contextmanager
def serving_self_described(app: Starlette) -> Iterator[str]:
    """Serve one of the apps above whose card names its own URL."""
    with serving(app) as url:
        app.state.holder["url"] = url
        yield url


@contextmanager
def counting_agent() -> Iterator[tuple[str, CredentialCounter]]:
    """A real agent (B) that counts the requests carrying the tests' credentials."""
    holder: list[CredentialCounter] = []

    def wrap(app: ASGIApp) -> ASGIApp:
        holder.append(CredentialCounter(app))
        return holder[0]

    registry = registry_of([("tests", TestSkills()), ("allow", AllowAll())])
    with running_agent(registry, wrap=wrap) as url:
        yield url, holder[0]


@contextmanager
def steering_decoy(agent_url: str) -> Iterator[str]:
    """A decoy (A) on another port whose card is the agent's: its interfaces name B."""
    card = card_of(agent_url)
    with serving(decoy(lambda: card)) as url:
        yield url
