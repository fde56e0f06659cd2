"""One connection pool per origin, a bounded number of them: the client's connecting transport.

httpcore's pool hands a connection to a waiting request by scanning every
connection it holds and every request waiting for one, on each request and
each release.  With one pool for all agents, a client calling 100 agents at
once made that scan over a hundred connections and requests a hundred times
per round (quadratic): in ``benchmarks/fanout.py`` a ``SkillClient`` spent
three times a2a-sdk's CPU per call there, where a2a-sdk's own client (one
``httpx.AsyncClient``, so one pool, per agent) did not.  :class:`OriginPools`
keeps one small pool per origin instead (:data:`PER_ORIGIN_LIMITS`, a few
idle connections each, kept :data:`KEEPALIVE_EXPIRY` seconds), so each
request looks only at its own origin's connections, and every origin keeps
its connections between calls (httpx's single pool kept 20 idle connections
across all origins: past 20 agents, most were closed after each answer).

The number of pools is bounded (:data:`MAX_TRANSPORTS`): callers may choose
origins (a push notification's webhook is any ``host:port``) and a client
may live as long as the process, so past the bound the least recently used
*idle* pool is closed; a busy one (a request or a response body still in
flight) is closed once it is idle again.  The address guard
(:mod:`skillrack.client.address_guard`) keeps its per-origin pools here too;
:class:`PerOrigin` is the transport a :class:`SkillClient` makes when given
none.
"""

from __future__ import annotations

import functools
import ssl
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from typing import Any

import httpx

from skillrack.client.origin import Origin

#: Origins one client (or guard) keeps a pool for.  256: an orchestrator delegating to a
#: hundred or two peers at once keeps every peer's connections open between calls.
MAX_TRANSPORTS = 256
#: Seconds an idle connection is kept (servers close theirs after a few seconds anyway).
KEEPALIVE_EXPIRY = 30.0
#: The pool of one origin: a few idle connections kept (httpx keeps 20 per pool by
#: default), so that a client with :data:`MAX_TRANSPORTS` pools holds at most
#: ``4 * MAX_TRANSPORTS`` idle sockets; 64 open at once at most.
PER_ORIGIN_LIMITS = httpx.Limits(
    max_connections=64, max_keepalive_connections=4, keepalive_expiry=KEEPALIVE_EXPIRY
)


def origin_transport(verify: Any = True, **options: Any) -> httpx.AsyncHTTPTransport:
    """httpx's transport for one origin's requests, with :data:`PER_ORIGIN_LIMITS`.

    ``verify=True`` (the system's CAs, as httpx's default) shares one ``ssl``
    context between every origin: httpx would build one per transport, loading
    the CA bundle each time (about 25 ms of CPU and most of a megabyte of RSS
    per origin, measured in ``benchmarks/fanout.py``).
    """
    if verify is True:
        verify = default_ssl_context()
    transport = httpx.AsyncHTTPTransport(verify=verify, limits=PER_ORIGIN_LIMITS, **options)
    if not options.get("http2"):
        # Imported here, with the first transport (httpx defers httpcore so too):
        # an agent that never calls out starts without httpcore (about 20 ms).
        from skillrack.client.network_streams import coalesce_writes

        coalesce_writes(transport)  # a request's head and body in one write
    return transport


@functools.cache
def default_ssl_context() -> ssl.SSLContext:
    """httpx's default context (its CA bundle, certificates verified), built once."""
    return httpx.create_ssl_context()


class OriginPools:
    """Transports by origin, made by ``make(origin)``, at most ``limit`` kept."""

    def __init__(
        self, make: Callable[[Origin], httpx.AsyncBaseTransport], limit: int = MAX_TRANSPORTS
    ) -> None:
        self._make = make
        self.limit = limit
        # Least recently used first; ``_busy`` counts each one's requests and open bodies.
        self._transports: OrderedDict[Origin, httpx.AsyncBaseTransport] = OrderedDict()
        self._busy: dict[httpx.AsyncBaseTransport, int] = {}
        #: Each kept transport's origin (a released one is still kept when it is found there).
        self._origins: dict[httpx.AsyncBaseTransport, Origin] = {}

    async def send(
        self,
        origin: Origin,
        request: httpx.Request,
        send: Callable[[httpx.AsyncBaseTransport], Awaitable[httpx.Response]] | None = None,
    ) -> httpx.Response:
        """The response to ``request`` from the transport of ``origin`` (or ``send(transport)``'s),
        its body holding the transport busy.

        ``send`` defaults to the transport's own ``handle_async_request``: no closure per
        request, and none for the release either (a closure and its cells, with the
        response, make one more cycle per request for the garbage collector).
        """
        inner = self._transports.get(origin)
        if inner is None:
            inner = self._transports[origin] = self._make(origin)
            self._origins[inner] = origin
        self._transports.move_to_end(origin)
        # Taken before the first await below, so no eviction can close it under this request.
        self._busy[inner] = self._busy.get(inner, 0) + 1
        try:
            await self._evict()
            if send is None:
                response = await inner.handle_async_request(request)
            else:
                response = await send(inner)
        except BaseException:
            await self._release(inner)
            raise
        response.stream = _Released(response.stream, self, inner)
        return response

    async def _release(self, inner: httpx.AsyncBaseTransport) -> None:
        """One request on ``inner`` is over (its body closed); close what is now evictable."""
        left = self._busy.pop(inner) - 1
        if left:
            self._busy[inner] = left
        elif (origin := self._origins.get(inner)) is None or self._transports.get(
            origin
        ) is not inner:
            self._origins.pop(inner, None)
            await inner.aclose()  # evicted (or closed) while it was busy
        await self._evict()

    async def _evict(self) -> None:
        """Close the least recently used idle transports until at most ``limit`` stay."""
        excess = len(self._transports) - self.limit
        if excess <= 0:
            return
        idle = [o for o, t in self._transports.items() if t not in self._busy][:excess]
        # Dropped from the map before any await: nothing can pick them up again meanwhile.
        closing = [self._transports.pop(origin) for origin in idle]
        for transport in closing:
            self._origins.pop(transport, None)
            await transport.aclose()

    async def aclose(self) -> None:
        transports = list(self._transports.values())
        self._transports = OrderedDict()
        for transport in transports:
            if transport not in self._busy:
                self._origins.pop(transport, None)
        for transport in transports:
            if transport not in self._busy:  # a busy one closes when its last body does
                await transport.aclose()


class PerOrigin(httpx.AsyncBaseTransport):
    """httpx's transport, one pool per origin (:class:`OriginPools`), ``verify`` for all."""

    def __init__(self, verify: Any = True, limit: int = MAX_TRANSPORTS) -> None:
        self._pools = OriginPools(lambda _: origin_transport(verify=verify), limit)

    def handle_async_request(self, request: httpx.Request) -> Coroutine[Any, Any, httpx.Response]:
        """The pools' coroutine itself (httpx awaits it): no frame of this one per request."""
        return self._pools.send(Origin.of(request.url), request)

    async def aclose(self) -> None:
        await self._pools.aclose()


class _Released(httpx.AsyncByteStream):
    """A response body that says when it is closed: its transport is idle again."""

    def __init__(self, stream: Any, pools: OriginPools, inner: httpx.AsyncBaseTransport) -> None:
        self._stream = stream
        self._pools: OriginPools | None = pools
        self._inner = inner

    def __aiter__(self) -> AsyncIterator[bytes]:
        inner: AsyncIterator[bytes] = self._stream.__aiter__()
        return inner  # the body's own iterator: no generator in between

    async def aclose(self) -> None:
        try:
            await self._stream.aclose()
        finally:
            pools, self._pools = self._pools, None
            if pools is not None:
                await pools._release(self._inner)
