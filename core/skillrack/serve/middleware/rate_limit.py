"""A cap on requests per minute per caller, before any work is done for them.

:class:`RateLimit` counts per caller (the authenticated identity, else the
client address) and answers HTTP 429 with ``resource_limit_exceeded`` and a
``Retry-After``; the threshold itself is not disclosed.  It runs after
authentication, so that a caller is counted as who it is.  The counting
itself is a :class:`~skillrack.serve.stores.counters.LimitCounter`: this
process's :class:`~skillrack.serve.stores.sliding_window.SlidingWindow` (which
the failed-authentication limit,
:mod:`skillrack.serve.middleware.failed_auth_limit`, counts with too), or
Redis shared by every replica when ``[server] limits_store`` names one.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send

from skillrack.errors import ErrorCode
from skillrack.serve.middleware.binding_errors import binding_error
from skillrack.serve.observability.metrics import REFUSED_LIMITS_STORE, Metrics
from skillrack.serve.scope import CALLER_KEY
from skillrack.serve.security.caller import Caller, qualified_identity
from skillrack.serve.stores.counters import OUTAGE_RETRY_AFTER_S, LimitCounter, LimitsUnavailable


def rate_key(caller: Caller | None, client_host: str | None) -> str:
    """Whom a request counts against: the authenticated caller, else the client's address.

    Every binding counts with this key, so a caller's JSON-RPC, HTTP+JSON and
    gRPC requests share one budget.
    """
    if caller is not None and caller.authenticated:
        return f"id:{caller.tenant}/{qualified_identity(caller)}"
    return f"ip:{client_host or '?'}"


#: Paths of operator reads, served uncounted while the limits store is down under "deny".
OPERATOR_PATHS = ("/-/", "/metrics")


async def too_many(scope: Scope, send: Send, message: str, retry_after: int) -> None:
    """HTTP 429 with ``resource_limit_exceeded`` and ``Retry-After``, in the binding's form."""
    await binding_error(
        scope,
        send,
        status=429,
        jsonrpc_code=-32000,
        code=ErrorCode.RESOURCE_LIMIT_EXCEEDED,
        message=message,
        headers=[(b"retry-after", str(retry_after).encode())],
    )


class RateLimit:
    """A sliding one-minute window per caller, counted by ``counter``."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        per_minute: int,
        public: set[str],
        counter: LimitCounter,
        metrics: Metrics | None = None,
    ) -> None:
        self.app = app
        self.public = public
        self.metrics = metrics
        self.per_minute = per_minute
        self._counter = counter

    def _key(self, scope: Scope) -> str:
        client = scope.get("client")
        return rate_key(scope.get(CALLER_KEY), client[0] if client else None)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in self.public:
            await self.app(scope, receive, send)
            return
        try:
            retry_after = await self._counter.rate(self._key(scope), self.per_minute, 60.0)
        except LimitsUnavailable as exc:  # Redis down, limits_on_outage = "deny"
            if scope["path"].startswith(OPERATOR_PATHS):
                # Operators must see the outage (metrics, console, health): not A2A work.
                await self.app(scope, receive, send)
                return
            if self.metrics is not None:
                self.metrics.unavailable_refused(REFUSED_LIMITS_STORE)
            await binding_error(
                scope,
                send,
                status=503,
                jsonrpc_code=-32000,
                code=exc.code,
                message=exc.message,
                headers=[(b"retry-after", str(OUTAGE_RETRY_AFTER_S).encode())],
            )
            return
        if retry_after is not None:
            if self.metrics is not None:
                self.metrics.limit_refused("rate")
            await too_many(scope, send, "too many requests", retry_after)
            return
        await self.app(scope, receive, send)
