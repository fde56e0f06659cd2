"""Transport and protocol failures of one exchange, as the client's one-line errors.

Every request of :class:`~skillrack.client.skill_client.SkillClient` runs
inside :func:`mapped_failures`: an HTTP 429 or 503 (a JSON-RPC, HTTP+JSON or
gRPC refusal) is the draft's ``resource_limit_exceeded`` with the wait the
agent asked for; a gRPC status grpcio made itself is the client's own error;
anything else a2a-sdk or httpx raises is ``transport_error`` or
``protocol_error``, naming what was being done.  A :class:`SkillCallError`
raised inside (a bound, the origin rule) passes through unchanged.
"""

from __future__ import annotations

from collections.abc import Callable
from types import TracebackType

import httpx
from a2a.utils.errors import A2AError

from skillrack.client.busy import busy_in
from skillrack.client.grpc_channel import grpc_failure
from skillrack.errors import ClientCode, SkillCallError


class mapped_failures:
    """Turn transport and protocol failures into SkillCallError with the client's codes.

    ``hint`` adds what to do to a transport error's message (a TLS refusal's).
    A class rather than an ``asynccontextmanager``: every exchange enters one
    and holds it while the answer comes, and a generator with its wrapper are
    two more objects per call in flight for the garbage collector to walk.
    """

    __slots__ = ("_hint", "_what")

    def __init__(self, what: str, hint: Callable[[Exception], str] | None = None) -> None:
        self._what = what
        self._hint = hint

    async def __aenter__(self) -> None:
        return None

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if exc is None or isinstance(exc, SkillCallError):
            return  # nothing raised, or already the client's own error: passes unchanged
        what = self._what
        if isinstance(exc, A2AError):
            busy = busy_in(exc, what)  # HTTP 429 or 503: the draft's resource_limit_exceeded
            if busy is not None:
                raise busy from None
            mapped = grpc_failure(exc, what)
            if mapped is not None:
                raise mapped from None
            name = type(exc).__name__
            if name.startswith("A2AClient") or name == "AgentCardResolutionError":
                raise SkillCallError(ClientCode.TRANSPORT_ERROR, f"{what}: {exc}") from None
            raise SkillCallError(ClientCode.PROTOCOL_ERROR, f"{what}: {name}: {exc}") from None
        if isinstance(exc, httpx.HTTPError):
            busy = busy_in(exc, what)
            if busy is not None:
                raise busy from None
            more = self._hint(exc) if self._hint is not None else ""
            raise SkillCallError(
                ClientCode.TRANSPORT_ERROR, f"{what}: {type(exc).__name__}: {exc}{more}"
            ) from None
