"""A replica that cannot take work answers a retryable 503: it is draining, or its store is down.

When ``skillrack serve`` is asked to stop (``SIGTERM``, what an orchestrator
sends before it replaces a replica), it drains first
(:mod:`skillrack.serve.server`): its readiness endpoint answers 503, so the
load balancer stops sending it traffic, and every Message (``SendMessage``,
``SendStreamingMessage``, in every binding) is refused with HTTP 503,
``Retry-After`` and ``resource_limit_exceeded``, gRPC ``UNAVAILABLE`` with the
same ``retry-after`` in its trailing metadata.  A client retrying lands on
another replica.  Everything else goes on: ``GetTask``, ``ListTasks``,
``CancelTask``, ``SubscribeToTask``, the card, metrics, so callers can follow
and collect the tasks still running here until they end.

While the task store is unreachable (:attr:`DrainState.unavailable`, set by
the store's connection errors and by the lease keeper, cleared when it
reaches the database again) every A2A request is refused the same way at
once, naming the store, instead of failing slowly or with ``internal
error``; the card, metrics, health and console answer as ever.  A request
already in flight when the store went away fails inside a2a-sdk, which
answers ``internal error`` (JSON-RPC ``-32603``, HTTP+JSON 500): when the
store was noticed unreachable while that request ran, :class:`Drain` answers
it with the same 503 instead (a stream, whose 200 is sent, gets it as its
last event), so a caller sees one retryable error for one outage and never
reads an unsaved end as done.

The MCP endpoint (``/mcp``, :data:`MCP_PATH`) is served the same way, told
apart by its JSON-RPC method: a ``tools/call`` (every tool starts a task,
``skillrack_resume`` continues one) is a Message, refused while draining and
while the store is down; ``initialize``, ``tools/list``, pings and the rest
are reads and go on.  Its refusals are JSON-RPC errors that keep the 503
(``binding_errors``), which MCP clients surface as they are.

Each such answer counts once in ``skillrack_unavailable_refusals_total``
(``reason`` ``draining`` or ``task_store_unavailable``), through
:meth:`DrainState.refused`: here, in the gRPC binding's steps, and for a
stream's rewritten last event.

The JSON-RPC error keeps HTTP 503 too (``binding_errors``): proxies and
clients act on it whatever the body says.  Nothing is read while the
replica is not draining and its store answers: the check is one attribute.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from skillrack.errors import ErrorCode
from skillrack.serve.middleware.binding_errors import (
    JSONRPC_PATH,
    MCP_PATH,
    binding_error,
    error_info,
    status_name,
)
from skillrack.serve.middleware.body_guard import replaying
from skillrack.serve.middleware.error_sanitizer import is_error_body
from skillrack.serve.observability.metrics import REFUSED_DRAINING, REFUSED_TASK_STORE

#: What a client is told to wait before it tries again (another replica by then).
RETRY_AFTER_S = 1
#: JSON-RPC methods that start or continue a task (A2A 1.0 and 0.3 names).
MESSAGE_METHODS = frozenset(
    {"SendMessage", "SendStreamingMessage", "message/send", "message/stream"}
)
#: MCP methods that do the same: every tool call starts a task, ``skillrack_resume``
#: continues one (:mod:`skillrack.serve.bindings.mcp_server`).
MCP_TASK_METHODS = frozenset({"tools/call"})
#: HTTP+JSON routes that do the same, under any tenant prefix (and 0.3's ``/v1``).
_MESSAGE_ROUTE = re.compile(r".*/message:(send|stream)")
#: Every HTTP+JSON A2A route (what needs the task store).
_A2A_ROUTE = re.compile(r".*/(message:(send|stream)|tasks(/.*)?|extendedAgentCard)")
#: What a client is told to wait while the task store is unreachable.
STORE_RETRY_AFTER_S = 2
DRAINING = "this agent replica is shutting down and takes no new messages; send it again"


class DrainState:
    """Whether this process is draining (set once), and whether its task store is reachable."""

    def __init__(self) -> None:
        self.draining = False
        #: Why the task store is unreachable now (one line); None while it answers.
        self.unavailable: str | None = None
        #: Whether the task store's outages are watched (cluster mode, PostgreSQL): only
        #: then are A2A requests refused or their answers looked at (none on SQLite).
        self.watched = False
        #: How many times the store was noticed unreachable: a request that saw it move
        #: failed because of the outage, even if the store is back by its answer.
        self.outages = 0
        #: Why the store was last unreachable (kept once it is back, for those answers).
        self.last_outage = ""
        #: Called once when the store goes from reachable to unreachable (the metric
        #: ``skillrack_task_store_outages_total``), not at each error of the same outage.
        self.on_outage: Callable[[], None] | None = None
        #: Called with the reason of each retryable refusal (the metric
        #: ``skillrack_unavailable_refusals_total``), by every binding.
        self.on_refusal: Callable[[str], None] | None = None

    def begin(self) -> None:
        self.draining = True

    def store_down(self, reason: str) -> None:
        if self.unavailable is None and self.on_outage is not None:
            self.on_outage()
        self.watched = True
        self.unavailable = reason
        self.last_outage = reason
        self.outages += 1

    def outage_since(self, seen: int) -> str | None:
        """Why the store is or was unreachable since ``outages`` read ``seen``; else None."""
        if self.unavailable is not None:
            return self.unavailable
        return self.last_outage if self.outages != seen else None

    def store_up(self) -> None:
        self.unavailable = None

    def refused(self, reason: str) -> None:
        """A request answered with the retryable error for ``reason`` (counted)."""
        if self.on_refusal is not None:
            self.on_refusal(reason)


def store_unreachable(reason: str) -> str:
    """The error message while the task store is unreachable."""
    return f"the task store is unreachable ({reason}); retry shortly"


async def _unavailable(
    state: DrainState,
    reason: str,
    scope: Scope,
    send: Send,
    message: str,
    headers: list[tuple[bytes, bytes]],
) -> None:
    """HTTP 503 and ``resource_limit_exceeded`` (JSON-RPC -32000), in the binding's form.

    Counted for ``reason`` (``state``'s :meth:`DrainState.refused`) as it is written.
    """
    state.refused(reason)
    await binding_error(
        scope,
        send,
        status=503,
        jsonrpc_code=-32000,
        code=ErrorCode.RESOURCE_LIMIT_EXCEEDED,
        message=message,
        headers=headers,
    )


async def refuse_unreachable(state: DrainState, scope: Scope, send: Send, reason: str) -> None:
    """HTTP 503 with ``Retry-After`` naming the task store, in the binding's form."""
    retry = [(b"retry-after", str(STORE_RETRY_AFTER_S).encode())]
    await _unavailable(state, REFUSED_TASK_STORE, scope, send, store_unreachable(reason), retry)


def _internal_error(status: int, body: bytes) -> bool:
    """Whether an answer is a2a-sdk's ``internal error``: HTTP 500, or JSON-RPC ``-32603``."""
    if status == 500:
        return True
    return is_error_body(body) and (b'"code": -32603' in body or b'"code":-32603' in body)


def _store_event(body: bytes, reason: str) -> bytes:
    """An SSE chunk with a2a-sdk's ``internal error`` event turned into the store's error.

    A stream's HTTP status is long sent; its last event carries the error, in
    the binding's form (JSON-RPC's, or HTTP+JSON's with ``UNAVAILABLE``).
    """
    lines = body.split(b"\n")
    for index, line in enumerate(lines):
        if not line.startswith(b"data:"):
            continue
        try:
            payload = json.loads(line[5:])
        except ValueError:
            continue
        error = payload.get("error") if isinstance(payload, dict) else None
        if not isinstance(error, dict) or error.get("code") not in (-32603, 500):
            continue
        info = [error_info(ErrorCode.RESOURCE_LIMIT_EXCEEDED)]
        if "jsonrpc" in payload:
            payload["error"] = {"code": -32000, "message": store_unreachable(reason), "data": info}
        else:
            payload["error"] = {
                "code": 503,
                "status": status_name(503),
                "message": store_unreachable(reason),
                "details": info,
            }
        lines[index] = b"data: " + json.dumps(payload).encode()
    return b"\n".join(lines)


def _in_flight(scope: Scope, send: Send, state: DrainState) -> Send:
    """``send``, answering the store's 503 for an ``internal error`` caused by an outage.

    Nothing is held while the store stays up: the check at the answer's start
    is one comparison.  Otherwise the start waits for the first body chunk,
    whose error code tells whether a2a-sdk failed.  A stream's status is sent
    before the outage; its ``internal error`` event becomes the store's error.
    """
    seen = state.outages
    start: Message | None = None
    replaced = streaming = False

    async def sending(message: Message) -> None:
        nonlocal start, replaced, streaming
        if replaced:
            return
        if message["type"] == "http.response.start":
            streaming = (
                dict(message["headers"]).get(b"content-type", b"").startswith(b"text/event-stream")
            )
            if streaming or state.outage_since(seen) is None or message["status"] not in (200, 500):
                await send(message)
            else:
                start = message
            return
        if start is not None and message["type"] == "http.response.body":
            held, start = start, None
            reason = state.outage_since(seen)
            if reason is not None and _internal_error(held["status"], message.get("body", b"")):
                replaced = True
                await refuse_unreachable(state, scope, send, reason)
                return
            await send(held)
        elif streaming and message["type"] == "http.response.body":
            reason = state.outage_since(seen)
            if reason is not None and b"error" in message.get("body", b""):
                body = _store_event(message["body"], reason)
                if body != message["body"]:  # the stream's last event: its one refusal
                    state.refused(REFUSED_TASK_STORE)
                message = {**message, "body": body}
        await send(message)

    return sending


async def refuse_draining(state: DrainState, scope: Scope, send: Send) -> None:
    """HTTP 503 with ``Retry-After`` and ``resource_limit_exceeded``, in the binding's form."""
    # Closed after the answer: a connection kept alive would be cut when the replica
    # stops, possibly under the client's next request.
    headers = [(b"retry-after", str(RETRY_AFTER_S).encode()), (b"connection", b"close")]
    await _unavailable(state, REFUSED_DRAINING, scope, send, DRAINING, headers)


def _a2a(path: str) -> bool:
    """Whether ``path`` is an A2A request (needs the task store)."""
    return path == JSONRPC_PATH or (not path.startswith("/-/") and bool(_A2A_ROUTE.fullmatch(path)))


class Drain:
    """Refuses Messages while ``state`` is draining (after the body guard: the body is JSON)."""

    def __init__(self, app: ASGIApp, *, state: DrainState) -> None:
        self.app = app
        self.state = state

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = scope["path"]
        if path == MCP_PATH:
            await self._mcp(scope, receive, send)
            return
        if self.state.watched and _a2a(path):
            if self.state.unavailable is not None:
                await refuse_unreachable(self.state, scope, send, self.state.unavailable)
                return
            send = _in_flight(scope, send, self.state)
        if not self.state.draining or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        if path != JSONRPC_PATH:
            if _MESSAGE_ROUTE.fullmatch(path):
                await refuse_draining(self.state, scope, send)
                return
            await self.app(scope, receive, send)
            return
        read = await _method(receive)
        if read is None:
            return
        method, body = read
        if method in MESSAGE_METHODS:
            await refuse_draining(self.state, scope, send)
            return
        await self.app(scope, replaying(body, receive), send)

    async def _mcp(self, scope: Scope, receive: Receive, send: Send) -> None:
        """An MCP request: a ``tools/call`` is a Message; listing, pings and the rest are reads.

        The body is read only while the replica drains or its store is down; a
        batch or a body that is not JSON goes on, as on the JSON-RPC path.
        """
        state = self.state
        if scope["method"] == "POST" and (state.draining or state.unavailable is not None):
            read = await _method(receive)
            if read is None:
                return
            method, body = read
            if method in MCP_TASK_METHODS:
                if state.unavailable is not None:
                    await refuse_unreachable(state, scope, send, state.unavailable)
                else:
                    await refuse_draining(state, scope, send)
                return
            receive = replaying(body, receive)
        if state.watched:
            send = _in_flight(scope, send, state)
        await self.app(scope, receive, send)


async def _method(receive: Receive) -> tuple[object, bytes] | None:
    """The JSON-RPC method of the request body (None for a batch or no JSON), and the body.

    ``None`` when the client went away before its body arrived.  The body guard
    replays what it read, so this is one message, parsed again only on these paths.
    """
    body = bytearray()
    more = True
    while more:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        body += message.get("body", b"")
        more = message.get("more_body", False)
    try:
        value = json.loads(body)
    except ValueError:
        value = None
    return (value.get("method") if isinstance(value, dict) else None), bytes(body)
