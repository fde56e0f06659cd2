"""The client's connection pool: one bounded pool, connections kept alive and reused per origin.

A client that fans out to many agents (an orchestrator delegating to a
hundred peers at once) sends each agent one request after another: every
request that finds no idle connection to its origin pays a TCP (and TLS)
handshake, and the agent pays it too.  httpx's default pool keeps only 20
idle connections across *all* origins, so past 20 agents most connections
were closed after each answer and opened again for the next call.
:data:`POOL_LIMITS` keeps up to :data:`KEEPALIVE` idle connections (one or
more per origin for a few hundred agents) and bounds the open ones at
:data:`MAX_CONNECTIONS`, so the sockets (file descriptors) a long-lived client
holds stay bounded whatever the agents do.  Every transport the client makes
itself uses it (:func:`connecting_transport`); a transport the caller passes
is the caller's.
"""

from __future__ import annotations

import ssl
from typing import Any

import httpx

#: Open connections of one pool, busy and idle together; a request past it waits for one.
MAX_CONNECTIONS = 512
#: Idle connections kept for reuse (least recently used closed first past it).
KEEPALIVE = 256
#: Seconds an idle connection is kept (servers close theirs after a few seconds anyway).
KEEPALIVE_EXPIRY = 30.0

POOL_LIMITS = httpx.Limits(
    max_connections=MAX_CONNECTIONS,
    max_keepalive_connections=KEEPALIVE,
    keepalive_expiry=KEEPALIVE_EXPIRY,
)

#: The pool of one origin's own transport (the address guard keeps one per origin,
#: :data:`~skillrack.client.address_guard.MAX_TRANSPORTS` of them): a few idle connections
#: each, so that a guard full of origins holds at most ``4 * MAX_TRANSPORTS`` idle sockets.
PER_ORIGIN_LIMITS = httpx.Limits(
    max_connections=64, max_keepalive_connections=4, keepalive_expiry=KEEPALIVE_EXPIRY
)


def origin_transport(
    verify: ssl.SSLContext | bool = True, **options: Any
) -> httpx.AsyncHTTPTransport:
    """httpx's transport for one origin's requests, with :data:`PER_ORIGIN_LIMITS`."""
    return httpx.AsyncHTTPTransport(verify=verify, limits=PER_ORIGIN_LIMITS, **options)


def connecting_transport(
    verify: ssl.SSLContext | bool = True, **options: Any
) -> httpx.AsyncHTTPTransport:
    """httpx's transport with :data:`POOL_LIMITS` (``options``: the transport's others)."""
    return httpx.AsyncHTTPTransport(verify=verify, limits=POOL_LIMITS, **options)
