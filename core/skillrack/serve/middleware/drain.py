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
error``; the card, metrics, health and console answer as ever.

The JSON-RPC error keeps HTTP 503 too (``binding_errors``): proxies and
clients act on it whatever the body says.  Nothing is read while the
replica is not draining: the check is one attribute.
"""

from __future__ import annotations

import json
import re

from starlette.types import ASGIApp, Receive, Scope, Send

from skillrack.errors import ErrorCode
from skillrack.serve.middleware.binding_errors import JSONRPC_PATH, binding_error
from skillrack.serve.middleware.body_guard import replaying

#: What a client is told to wait before it tries again (another replica by then).
RETRY_AFTER_S = 1
#: JSON-RPC methods that start or continue a task (A2A 1.0 and 0.3 names).
MESSAGE_METHODS = frozenset(
    {"SendMessage", "SendStreamingMessage", "message/send", "message/stream"}
)
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

    def begin(self) -> None:
        self.draining = True

    def store_down(self, reason: str) -> None:
        self.unavailable = reason

    def store_up(self) -> None:
        self.unavailable = None


def store_unreachable(reason: str) -> str:
    """The error message while the task store is unreachable."""
    return f"the task store is unreachable ({reason}); retry shortly"


async def refuse_draining(scope: Scope, send: Send) -> None:
    """HTTP 503 with ``Retry-After`` and ``resource_limit_exceeded``, in the binding's form."""
    await binding_error(
        scope,
        send,
        status=503,
        jsonrpc_code=-32000,
        code=ErrorCode.RESOURCE_LIMIT_EXCEEDED,
        message=DRAINING,
        # Closed after the answer: a connection kept alive would be cut when the replica
        # stops, possibly under the client's next request.
        headers=[(b"retry-after", str(RETRY_AFTER_S).encode()), (b"connection", b"close")],
    )


class Drain:
    """Refuses Messages while ``state`` is draining (after the body guard: the body is JSON)."""

    def __init__(self, app: ASGIApp, *, state: DrainState) -> None:
        self.app = app
        self.state = state

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.state.unavailable is not None and scope["type"] == "http":
            path = scope["path"]
            if path == JSONRPC_PATH or (not path.startswith("/-/") and _A2A_ROUTE.fullmatch(path)):
                await binding_error(
                    scope,
                    send,
                    status=503,
                    jsonrpc_code=-32000,
                    code=ErrorCode.RESOURCE_LIMIT_EXCEEDED,
                    message=store_unreachable(self.state.unavailable),
                    headers=[(b"retry-after", str(STORE_RETRY_AFTER_S).encode())],
                )
                return
        if not self.state.draining or scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        path = scope["path"]
        if path != JSONRPC_PATH:
            if _MESSAGE_ROUTE.fullmatch(path):
                await refuse_draining(scope, send)
                return
            await self.app(scope, receive, send)
            return
        body = bytearray()
        more = True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            body += message.get("body", b"")
            more = message.get("more_body", False)
        try:
            value = json.loads(body)
        except ValueError:
            value = None
        if isinstance(value, dict) and value.get("method") in MESSAGE_METHODS:
            await refuse_draining(scope, send)
            return
        await self.app(scope, replaying(bytes(body), receive), send)
