"""The operator endpoints under ``/-/``: the delegation hops an agent made, per tenant.

Who may read them, and what each tenant sees, is
:class:`~skillrack.serve.security.operator_access.OperatorGuard`'s rule.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

from starlette.requests import Request
from starlette.responses import JSONResponse

from skillrack.serve.security.operator_access import OperatorGuard, RecordedHop

#: The prefix of every operator endpoint.
OPERATOR_PREFIX = "/-/"
#: Diagnostics: the most recent delegation hops (upstream/downstream agents and task ids).
HOPS_PATH = "/-/hops"

Endpoint = Callable[[Request], Awaitable[JSONResponse]]


def hops_endpoint(recent: Callable[[], Sequence[RecordedHop]], guard: OperatorGuard) -> Endpoint:
    """``GET /-/hops``: the recent delegation hops of the caller's tenant."""

    async def hops(request: Request) -> JSONResponse:
        refusal = guard.refusal(request)
        if refusal is not None:
            return refusal
        owner = guard.owner(request)
        shown = [hop.to_json() for hop in recent() if owner is None or hop.owner == owner]
        return JSONResponse({"hops": shown})

    return hops
