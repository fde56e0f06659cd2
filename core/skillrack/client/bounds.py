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
``timeout``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass

import httpx

from skillrack.errors import ErrorCode, SkillCallError


@dataclass(frozen=True)
class ReadBounds:
    """The client's read limits; each has a default and a ``SkillClient(bounds=...)`` setting."""

    #: Bytes of the Agent Card.
    max_card_bytes: int = 4_000_000
    #: Bytes of one response body (a JSON-RPC or HTTP+JSON answer, a polled task).
    max_response_bytes: int = 16_000_000
    #: Bytes of one server-sent event stream, all events together.
    max_stream_bytes: int = 32_000_000
    #: Events of one stream.
    max_stream_events: int = 10_000

    def __post_init__(self) -> None:
        for name, value in vars(self).items():
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"ReadBounds.{name} must be a positive integer")


DEFAULT_BOUNDS = ReadBounds()


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


class BoundedStream(httpx.AsyncByteStream):
    """A response body that raises ``resource_limit_exceeded`` once it passes ``limit`` bytes."""

    def __init__(self, inner: httpx.AsyncByteStream, limit: int, what: str) -> None:
        self._inner = inner
        self._limit = limit
        self._what = what

    async def __aiter__(self) -> AsyncIterator[bytes]:
        total = 0
        async for chunk in self._inner:
            total += len(chunk)
            if total > self._limit:
                raise exceeded(self._what, self._limit)
            yield chunk

    async def aclose(self) -> None:
        await self._inner.aclose()
