"""A cap on failed authentications per client address: guessing keys costs time.

Without it, a client may try credentials as fast as the server answers 401
(700 wrong keys, 700 answers).  :class:`FailedAuthenticationLimit` sits just
outside the authentication gate and counts, per client address, the requests
the gate answered 401 (wrong, expired or missing credentials, a repeated
credential header) in a sliding one-minute window
(:class:`~skillrack.serve.stores.sliding_window.SlidingWindow`).  Once an
address reaches ``per_minute`` failures, every request from it that needs
authentication is answered HTTP 429 with ``resource_limit_exceeded`` and a
``Retry-After`` until the oldest failure leaves the window, **before** any
authentication plugin runs: a guess made while blocked is never checked, so
a correct guess cannot be told from a wrong one.  Successful requests never
count, and public paths (the Agent Card) are never refused.

The gRPC binding (:mod:`skillrack.serve.bindings.grpc_server`) counts its refusals
in the same window, so failures on one binding block the address on every binding.

The address is the one uvicorn reports: the peer, or the client a proxy
listed in ``[server] forwarded_allow_ips`` names in ``X-Forwarded-For``
(nobody by default; uvicorn's own default, loopback peers and the
``FORWARDED_ALLOW_IPS`` environment variable, is not used, so a local client
cannot spread its failures over addresses it makes up).  Callers behind one
NAT share it.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from skillrack.serve.middleware.rate_limit import too_many
from skillrack.serve.observability.metrics import Metrics
from skillrack.serve.stores.sliding_window import SlidingWindow


class FailedAuthenticationLimit:
    """Counts 401 answers per client address; answers 429 once there were too many."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        per_minute: int,
        public: set[str],
        metrics: Metrics | None = None,
        failures: SlidingWindow | None = None,
    ) -> None:
        self.app = app
        self.public = public
        self.metrics = metrics
        #: Given when another binding (gRPC) counts into the same window.
        self._failures = failures if failures is not None else SlidingWindow(per_minute)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in self.public:
            await self.app(scope, receive, send)
            return
        client = scope.get("client")
        address = client[0] if client else "?"
        retry_after = self._failures.retry_after(address)
        if retry_after is not None:
            if self.metrics is not None:
                self.metrics.limit_refused("failed_authentication")
            await too_many(scope, send, "too many failed authentications", retry_after)
            return

        async def counting(message: Message) -> None:
            if message["type"] == "http.response.start" and message["status"] == 401:
                self._failures.record(address)
            await send(message)

        await self.app(scope, receive, counting)
