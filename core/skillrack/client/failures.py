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

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import httpx
from a2a.utils.errors import A2AError

from skillrack.client.busy import busy_in
from skillrack.client.grpc_channel import grpc_failure
from skillrack.errors import ClientCode, SkillCallError


@asynccontextmanager
async def mapped_failures(
    what: str, hint: Callable[[Exception], str] | None = None
) -> AsyncIterator[None]:
    """Turn transport and protocol failures into SkillCallError with the client's codes.

    ``hint`` adds what to do to a transport error's message (a TLS refusal's).
    """
    try:
        yield
    except SkillCallError:
        raise
    except A2AError as exc:
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
    except httpx.HTTPError as exc:
        busy = busy_in(exc, what)
        if busy is not None:
            raise busy from None
        more = hint(exc) if hint is not None else ""
        raise SkillCallError(
            ClientCode.TRANSPORT_ERROR, f"{what}: {type(exc).__name__}: {exc}{more}"
        ) from None
