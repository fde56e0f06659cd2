"""An agent that says "not now": HTTP 429 and 503 as ``resource_limit_exceeded``, and retrying.

(On gRPC, ``RESOURCE_EXHAUSTED`` and ``UNAVAILABLE`` are the same refusals,
:func:`skillrack.client.grpc_channel.grpc_busy`, retried the same way.)

An agent over its rate limit answers HTTP 429 with ``resource_limit_exceeded``
and ``Retry-After`` (skillrack's :mod:`~skillrack.serve.middleware.rate_limit`
does); one overloaded or restarting answers 503.  Either way the request was
refused before any task existed, so the client reports the draft's
``resource_limit_exceeded`` locally (no task state), with the agent's own
message when it sent one and the wait it asked for, instead of a transport
error holding httpx's text.

:func:`retrying` sends such a request again, at most ``retries`` times, each
time after the wait the agent asked for (``Retry-After``: seconds or an HTTP
date) plus a random jitter, so that many clients refused at once do not all
come back in the same instant; without ``Retry-After``, after a randomized
exponential backoff.  It is built on ``tenacity``, the retry library of
record (async-native, composable wait strategies), rather than a loop of our
own.  A wait that would pass the call's deadline, or exceed ``max_wait``, is
not waited: the refusal is reported at once, with the wait it asked for.
Only these refusals are retried: a request that may have been acted on
(a connection lost mid-answer, a refusal after a stream's first event, a
task that failed) never is.
"""

from __future__ import annotations

import email.utils
import json
import random
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

import httpx

if TYPE_CHECKING:  # imported on the first retry: a client that never retries tracks none of it
    from tenacity import RetryCallState

from skillrack.errors import ErrorCode, SkillCallError, parse_error_object

T = TypeVar("T")

#: HTTP statuses that mean "refused for now, try later".
BUSY = frozenset({429, 503})
#: The longest wait a retry honours; a longer Retry-After is reported, not waited.
MAX_WAIT = 300.0
#: Without Retry-After: randomized exponential backoff from 0.5 s up to this.
BACKOFF_MAX = 30.0


def retry_after(headers: Mapping[str, str], now: float | None = None) -> float | None:
    """``Retry-After`` in seconds (delta-seconds or an HTTP date), None when absent or bad.

    ``headers``: HTTP headers, or gRPC trailing metadata (lower-case names).
    """
    value = headers.get("retry-after", "").strip()
    if not value:
        return None
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def _agent_message(content: bytes | None) -> str | None:
    """The message of the agent's error answer (JSON-RPC, HTTP+JSON or the draft's object)."""
    try:
        body = json.loads(content) if content else None
    except ValueError:
        return None
    parsed = parse_error_object(body)
    if parsed is not None:
        return parsed[1]
    error = body.get("error") if isinstance(body, dict) else None
    message = error.get("message") if isinstance(error, dict) else None
    return message[:200] if isinstance(message, str) else None


#: What a busy refusal's message ends with: nothing happened, so it can be sent again.
ADVICE = "; nothing was done: try again later, or give --retry N"
#: What a refusal that came after the answer began ends with instead.
BEGUN = "; it came after the agent's answer began, so the message was not sent again"


class AgentBusy(SkillCallError):
    """An HTTP 429 or 503 (gRPC ``RESOURCE_EXHAUSTED``, ``UNAVAILABLE``):
    ``resource_limit_exceeded`` before any task, safe to send again."""


def busy_error(response: httpx.Response, what: str, body: bytes | None = None) -> AgentBusy:
    """The refusal ``response`` (429 or 503) as a local ``resource_limit_exceeded``.

    ``body``: what was read of it (default: its content, when it was read).
    """
    if body is None:
        try:
            body = response.content
        except httpx.ResponseNotRead:  # a stream the SDK did not read: no message then
            body = None
    wait = retry_after(response.headers)
    said = _agent_message(body)
    told = f" ({said})" if said else ""
    when = f"; it asks to retry after {wait:g} s" if wait is not None else ""
    return AgentBusy(
        ErrorCode.RESOURCE_LIMIT_EXCEEDED,
        f"{what}: the agent answered HTTP {response.status_code}{told}{when}{ADVICE}",
        retry_after=wait,
    )


def busy_in(exc: BaseException, what: str) -> AgentBusy | None:
    """A 429 or 503 found in ``exc``'s causes (a2a-sdk wraps httpx's), as :func:`busy_error`."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, httpx.HTTPStatusError):
            if current.response.status_code in BUSY:
                return busy_error(current.response, what)
            return None
        current = current.__cause__ or current.__context__
    return None


class _Wait:
    """Retry-After plus jitter when the agent gave one, else randomized exponential backoff."""

    def __init__(self, remaining: Callable[[], float | None], max_wait: float) -> None:
        from tenacity import wait_random_exponential

        self._remaining = remaining
        self._max_wait = max_wait
        self._backoff = wait_random_exponential(multiplier=0.5, max=BACKOFF_MAX)

    def __call__(self, state: RetryCallState) -> float:
        outcome = state.outcome
        error = outcome.exception() if outcome is not None else None
        asked = error.retry_after if isinstance(error, SkillCallError) else None
        if asked is not None:
            # Never earlier than asked; up to 10 % (at least 1 s) later, at random.
            wait = asked + random.uniform(0.0, max(1.0, asked * 0.1))
        else:
            wait = float(self._backoff(state))
        left = self._remaining()
        if wait > self._max_wait or (left is not None and wait >= left):
            assert error is not None
            raise error  # not worth waiting for: report the refusal as it came
        return wait


async def retrying(
    attempt: Callable[[], Awaitable[T]],
    retries: int,
    remaining: Callable[[], float | None] = lambda: None,
    max_wait: float = MAX_WAIT,
) -> T:
    """``attempt()``, sent again up to ``retries`` times while the agent answers 429 or 503.

    ``remaining`` says how many seconds the caller's deadline leaves (None:
    no deadline); a wait that does not fit is not begun.
    """
    if retries <= 0:
        return await attempt()
    from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt

    retryer: Any = AsyncRetrying(
        stop=stop_after_attempt(retries + 1),
        wait=_Wait(remaining, max_wait),
        retry=retry_if_exception(lambda exc: isinstance(exc, AgentBusy)),
        reraise=True,
    )

    async def once() -> T:  # a coroutine function: tenacity awaits only those
        return await attempt()

    result: T = await retryer(once)
    return result
