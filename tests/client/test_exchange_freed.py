"""An exchange of the client is freed by reference counting, not left to the garbage collector.

httpx's client wraps every response body in a stream that refers back to
its response, a cycle that kept each exchange's response, request, headers
and pool objects alive until a collection found them; with a hundred calls
a round, that garbage was a third of what set the collector off.  The
guard's bounded body breaks the cycle once it is closed
(:class:`~skillrack.client.bounds.BoundedStream`).
"""

from __future__ import annotations

import gc
import weakref
from collections.abc import AsyncIterator

import httpx

from skillrack.client.origin import Origin, OriginPolicy
from skillrack.client.readbounds import DEFAULT_BOUNDS
from skillrack.client.transport import http_client, origin_scope


class Body(httpx.AsyncByteStream):
    """A body read from the network, as a connecting transport gives it."""

    async def __aiter__(self) -> AsyncIterator[bytes]:
        yield b'{"ok": true}'


def answer(request: httpx.Request) -> httpx.Response:
    return httpx.Response(200, headers={"content-type": "application/json"}, stream=Body())


async def test_a_read_response_is_freed_without_a_collection() -> None:
    client = http_client(
        headers={}, timeout=5, bounds=DEFAULT_BOUNDS, transport=httpx.MockTransport(answer)
    )
    async with client:
        with origin_scope(OriginPolicy(Origin.of("http://agent.test"))):
            await client.get("http://agent.test/")  # warm-up: imports, caches
            gc.disable()
            try:
                response = await client.get("http://agent.test/")
                assert response.json() == {"ok": True}
                assert response.is_closed
                gone = weakref.ref(response)
                del response
                assert gone() is None  # no cycle held it: freed at once
            finally:
                gc.enable()
