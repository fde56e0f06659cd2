"""The operator endpoints under ``/-/``: delegation hops, liveness and readiness.

``/-/hops`` lists the delegation hops an agent made, per tenant; who may read
them, and what each tenant sees, is
:class:`~skillrack.serve.security.operator_access.OperatorGuard`'s rule.
``/-/livez`` and ``/-/readyz`` are for orchestrators' probes and need no
credentials: they say only whether the process lives and whether it should
get traffic (the task store and the limits store answer, the plugins are
loaded, the replica is not draining), never any task or caller.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence

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


#: Liveness for orchestrators: the process answers HTTP (public, no credentials).
LIVEZ_PATH = "/-/livez"
#: Readiness: the process should be sent traffic now (public, no credentials).
READYZ_PATH = "/-/readyz"
#: How long one readiness check (the task store, the limits store) may take.
CHECK_TIMEOUT_S = 2.0

#: A readiness check: None when it passes, else one line saying what is wrong.
Check = Callable[[], Awaitable[str | None]]


async def livez(request: Request) -> JSONResponse:
    """``GET /-/livez``: 200 while the process serves HTTP at all (restart it otherwise)."""
    return JSONResponse({"status": "alive"})


def readyz_endpoint(checks: Mapping[str, Check], draining: Callable[[], bool]) -> Endpoint:
    """``GET /-/readyz``: 200 when every check passes and the replica is not draining, else 503.

    The body names each check and its outcome, so an operator reading the
    probe's failure learns which part is missing; no check takes more than
    ``CHECK_TIMEOUT_S``, so a database that hangs makes the probe fail, not hang.
    """

    async def one(check: Check) -> str | None:
        try:
            return await asyncio.wait_for(check(), CHECK_TIMEOUT_S)
        except TimeoutError:
            return f"no answer within {CHECK_TIMEOUT_S:g} s"
        except Exception as exc:
            text = str(exc).splitlines()[0] if str(exc) else ""
            return f"{type(exc).__name__}: {text}"[:200]

    async def readyz(request: Request) -> JSONResponse:
        results = await asyncio.gather(*(one(check) for check in checks.values()))
        report = {name: problem or "ok" for name, problem in zip(checks, results, strict=True)}
        if draining():
            report["shutdown"] = "draining: finishing running tasks, taking no new messages"
        ready = all(value == "ok" for value in report.values())
        return JSONResponse(
            {"status": "ready" if ready else "unready", "checks": report},
            status_code=200 if ready else 503,
        )

    return readyz
