"""A cap on requests per minute per caller, before any work is done for them.

:class:`RateLimit` counts per caller (the authenticated identity, else the
client address) and answers HTTP 429 with ``resource_limit_exceeded`` and a
``Retry-After``; the threshold itself is not disclosed.  It runs after
authentication, so that a caller is counted as who it is.
"""

from __future__ import annotations

import time
from collections import deque

from starlette.types import ASGIApp, Receive, Scope, Send

from skillrack.errors import ErrorCode
from skillrack.serve.context import Caller
from skillrack.serve.middleware.authentication import CALLER_SCOPE_KEY
from skillrack.serve.middleware.binding_errors import binding_error


class RateLimit:
    """A sliding one-minute window per caller; cheap enough to run on every request."""

    def __init__(self, app: ASGIApp, *, per_minute: int, public: set[str]) -> None:
        self.app = app
        self.per_minute = per_minute
        self.public = public
        self._seen: dict[str, deque[float]] = {}

    def _key(self, scope: Scope) -> str:
        caller: Caller | None = scope.get(CALLER_SCOPE_KEY)
        if caller is not None and caller.authenticated:
            return f"id:{caller.tenant}/{caller.identity}"
        client = scope.get("client")
        return f"ip:{client[0] if client else '?'}"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in self.public:
            await self.app(scope, receive, send)
            return
        now = time.monotonic()
        window = self._seen.setdefault(self._key(scope), deque())
        while window and now - window[0] > 60:
            window.popleft()
        if len(window) >= self.per_minute:
            await binding_error(
                scope,
                send,
                status=429,
                jsonrpc_code=-32000,
                code=ErrorCode.RESOURCE_LIMIT_EXCEEDED,
                message="too many requests",
                headers=[(b"retry-after", str(int(61 - (now - window[0]))).encode())],
            )
            return
        window.append(now)
        if len(self._seen) > 100_000:  # bound memory: forget idle callers
            for key in [k for k, w in self._seen.items() if not w or now - w[-1] > 60]:
                del self._seen[key]
        await self.app(scope, receive, send)
