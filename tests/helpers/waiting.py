"""Waiting for state in tests: poll a condition until a deadline, never a bare fixed sleep.

A fixed ``sleep`` that waits for state (a commit written behind, a push delivered, a
worker started) is too long on an idle machine and too short on a loaded one: both the
suite's wall time and its flakiness come from it. :func:`wait_until` and
:func:`eventually` return as soon as the condition holds and fail, naming what was
awaited, only after a deadline generous enough for a loaded 2-core runner under xdist.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")

#: Long enough for a loaded 2-core machine running two xdist workers; a condition that
#: holds returns at once, so only a failing test ever waits this long.
DEADLINE_S = 15.0
#: How often the condition is asked again.
INTERVAL_S = 0.02


class NeverHappened(AssertionError):
    """The awaited condition did not hold before the deadline."""


def wait_until(
    condition: Callable[[], T],
    what: str,
    *,
    timeout: float = DEADLINE_S,
    interval: float = INTERVAL_S,
) -> T:
    """Call ``condition`` until it returns a truthy value, and return that value.

    Raises :class:`NeverHappened` naming ``what`` after ``timeout`` seconds. For threads
    and processes seen from a synchronous test.
    """
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise NeverHappened(f"waited {timeout:g} s for {what}; it did not happen")
        time.sleep(interval)


async def eventually(
    condition: Callable[[], T | Awaitable[T]],
    what: str,
    *,
    timeout: float = DEADLINE_S,
    interval: float = INTERVAL_S,
) -> T:
    """:func:`wait_until` for a coroutine test: the event loop runs while it waits.

    ``condition`` may be a plain callable or return an awaitable (an async lambda's
    coroutine), which is awaited each time.
    """
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if inspect.isawaitable(value):
            value = await value
        if value:
            return value
        if time.monotonic() >= deadline:
            raise NeverHappened(f"waited {timeout:g} s for {what}; it did not happen")
        await asyncio.sleep(interval)
