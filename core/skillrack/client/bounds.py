"""How much the client reads from an agent, bounded while reading rather than after.

A remote agent chooses how many bytes it sends and for how long; a client
that reads a whole body before measuring it has already spent the memory
(a 300 MB card, an endless event stream).  So every body is read through a
:class:`BoundedStream` that counts bytes as they arrive and stops the
exchange the moment one more byte would cross the bound, raising
``resource_limit_exceeded`` (local); the connection is closed and what was
buffered is dropped.  The draft asks an implementation to enforce limits on
payload size and report ``resource_limit_exceeded``; these are the client's.
The duration of a whole call (streams and polling included) is the client's
``timeout``.  The limits themselves (``ReadBounds``, re-exported here) live in
:mod:`skillrack.client.readbounds`, which the command line reads without httpx.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx

from skillrack.client.readbounds import DEFAULT_BOUNDS, ReadBounds
from skillrack.errors import ErrorCode, SkillCallError


def exceeded(what: str, limit: int, unit: str = "bytes") -> SkillCallError:
    """The local ``resource_limit_exceeded`` for ``what`` crossing ``limit``."""
    return SkillCallError.local(
        ErrorCode.RESOURCE_LIMIT_EXCEEDED,
        f"{what} exceeds the client's limit of {limit} {unit}; the call was stopped",
    )


def declared_length(response: httpx.Response) -> int | None:
    """The ``Content-Length`` an answer declares, when it is a number."""
    value = response.headers.get("content-length", "")
    return int(value) if value.isdigit() else None


def where(request: httpx.Request) -> str:
    """``METHOD url`` without its query, for an error's message."""
    return f"{request.method} {request.url.copy_with(query=None)}"


#: What a closed response's body is replaced with (empty, immutable, shared).
_CLOSED = httpx.ByteStream(b"")


class BoundedStream(httpx.AsyncByteStream):
    """A response body that raises ``resource_limit_exceeded`` once it passes ``limit`` bytes.

    ``what`` names what is read in the error, followed by ``request``'s
    :func:`where` when one is given: the URL is formatted only then, and no
    closure is made per response (with the response, a closure and its
    cells would form one more cycle per exchange for the garbage collector).

    ``response``, the response whose body this is, gets an empty body in
    place of its stream once this one is closed.  httpx's client wraps every
    body in a stream that refers back to its response: a reference cycle per
    exchange, which held the response, its request, headers, URL and pool
    objects (about 50 tracked objects) until the garbage collector found
    them.  Broken once the body is closed (httpx reads nothing from a closed
    response's stream), the whole exchange is freed when its last reference
    goes.
    """

    def __init__(
        self,
        inner: httpx.AsyncByteStream,
        limit: int,
        what: str,
        request: httpx.Request | None = None,
        response: httpx.Response | None = None,
    ) -> None:
        self._inner = inner
        self._limit = limit
        self._what = what
        self._request = request
        self._response = response

    async def __aiter__(self) -> AsyncIterator[bytes]:
        total = 0
        async for chunk in self._inner:
            total += len(chunk)
            if total > self._limit:
                raise exceeded(self.what(), self._limit)
            yield chunk

    def what(self) -> str:
        """What is read, as the error names it."""
        request = self._request
        return self._what if request is None else f"{self._what} {where(request)}"

    async def aclose(self) -> None:
        try:
            await self._inner.aclose()
        finally:
            response, self._response = self._response, None
            if response is not None:
                response.stream = _CLOSED


__all__ = [
    "DEFAULT_BOUNDS",
    "BoundedStream",
    "ReadBounds",
    "declared_length",
    "exceeded",
    "where",
]
