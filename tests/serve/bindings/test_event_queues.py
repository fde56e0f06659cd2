"""``ClosableQueue`` behaves as the queue a2a-sdk makes without it (``culsans``), step for step.

a2a-sdk relies on its queues' ``shutdown`` semantics (Python 3.13's
``asyncio.Queue``, which ``culsans`` implements before 3.13): a consumer ends on
``QueueShutDown``, ``join()`` returns once an immediate shutdown dropped what was
left, a waiting producer is refused.  Each test runs the same steps on both
queues and compares what every step observed.
"""

from __future__ import annotations

import asyncio
import functools
import subprocess
import sys
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

import culsans
import pytest
from a2a.utils._async_queue_compat import QueueShutDown
from hypothesis import given, settings
from hypothesis import strategies as st

from skillrack.serve.bindings.event_queues import ClosableQueue

Queue = Any
Factory = Callable[[int], Queue]


def with_culsans(maxsize: int) -> Queue:
    return culsans.Queue(maxsize=maxsize).async_q


def with_asyncio(maxsize: int) -> Queue:
    return ClosableQueue(maxsize)


def outcome(step: Callable[[], Any]) -> Any:
    try:
        return ("value", step())
    except QueueShutDown:  # culsans raises a subclass of the class a2a-sdk catches
        return ("raised", "QueueShutDown")
    except (asyncio.QueueEmpty, asyncio.QueueFull, ValueError) as exc:
        return ("raised", type(exc).__name__)
    except culsans.QueueEmpty:
        return ("raised", "QueueEmpty")
    except culsans.QueueFull:
        return ("raised", "QueueFull")


def state(queue: Queue) -> tuple[int, bool, bool]:
    return queue.qsize(), queue.empty(), queue.full()


STEPS = st.lists(
    st.one_of(
        st.tuples(st.just("put"), st.integers(0, 9)),
        st.tuples(st.just("get")),
        st.tuples(st.just("task_done")),
        st.tuples(st.just("shutdown"), st.booleans()),
    ),
    max_size=30,
)


def run_steps(factory: Factory, maxsize: int, steps: list[tuple[Any, ...]]) -> list[Any]:
    async def run() -> list[Any]:
        queue = factory(maxsize)
        seen: list[Any] = []
        for step in steps:
            if step[0] == "put":
                seen.append(outcome(functools.partial(queue.put_nowait, step[1])))
            elif step[0] == "get":
                seen.append(outcome(queue.get_nowait))
            elif step[0] == "task_done":
                seen.append(outcome(queue.task_done))
            else:
                seen.append(outcome(functools.partial(queue.shutdown, immediate=step[1])))
            seen.append(state(queue))
        try:  # join() returns at once exactly when every item put was counted done
            await asyncio.wait_for(queue.join(), 0.05)
            seen.append("joined")
        except TimeoutError:
            seen.append("join waits")
        return seen

    return asyncio.run(run())


@settings(max_examples=60, deadline=None)
@given(maxsize=st.integers(0, 3), steps=STEPS)
def test_the_same_steps_see_the_same_queue(maxsize: int, steps: list[tuple[Any, ...]]) -> None:
    assert run_steps(with_asyncio, maxsize, steps) == run_steps(with_culsans, maxsize, steps)


async def _waiting_get_then(queue: Queue, act: Callable[[Queue], Awaitable[None]]) -> Any:
    getter = asyncio.ensure_future(queue.get())
    await asyncio.sleep(0.01)
    await act(queue)
    try:
        return ("value", await asyncio.wait_for(getter, 1))
    except QueueShutDown:
        return ("raised", "QueueShutDown")


async def _waiting_put_then(queue: Queue, act: Callable[[Queue], Awaitable[None]]) -> Any:
    queue.put_nowait("first")
    putter = asyncio.ensure_future(queue.put("second"))
    await asyncio.sleep(0.01)
    await act(queue)
    try:
        await asyncio.wait_for(putter, 1)
        return ("put", queue.qsize())
    except QueueShutDown:
        return ("raised", "QueueShutDown", queue.qsize())


async def _put(queue: Queue) -> None:
    await queue.put("item")


async def _shutdown(queue: Queue) -> None:
    queue.shutdown()


async def _shutdown_now(queue: Queue) -> None:
    queue.shutdown(immediate=True)


async def _get(queue: Queue) -> None:
    await queue.get()


SCENARIOS: dict[str, Callable[[Queue], Coroutine[Any, Any, Any]]] = {
    "a waiting get receives a put": lambda q: _waiting_get_then(q, _put),
    "a waiting get is refused by a shutdown": lambda q: _waiting_get_then(q, _shutdown),
    "a waiting get is refused by an immediate shutdown": lambda q: _waiting_get_then(
        q, _shutdown_now
    ),
    "a waiting put goes in when room is made": lambda q: _waiting_put_then(q, _get),
    "a waiting put is refused by a shutdown": lambda q: _waiting_put_then(q, _shutdown),
    "a waiting put is refused by an immediate shutdown": lambda q: _waiting_put_then(
        q, _shutdown_now
    ),
}


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_waiting_puts_and_gets_end_the_same(scenario: str) -> None:
    def run(factory: Factory) -> Any:
        return asyncio.run(SCENARIOS[scenario](factory(1)))

    assert run(with_asyncio) == run(with_culsans)


@pytest.mark.parametrize("factory", [with_asyncio, with_culsans], ids=["asyncio", "culsans"])
def test_join_returns_once_an_immediate_shutdown_dropped_what_was_left(factory: Factory) -> None:
    async def run() -> list[Any]:
        queue = factory(0)
        for item in range(3):
            queue.put_nowait(item)
        joined = asyncio.ensure_future(queue.join())
        await asyncio.sleep(0.01)
        waited = joined.done()
        queue.shutdown(immediate=True)
        await asyncio.wait_for(joined, 1)
        return [waited, queue.qsize(), outcome(queue.get_nowait)]

    assert asyncio.run(run()) == [False, 0, ("raised", "QueueShutDown")]


@pytest.mark.parametrize("factory", [with_asyncio, with_culsans], ids=["asyncio", "culsans"])
def test_a_woken_getter_cancelled_passes_the_item_on(factory: Factory) -> None:
    """No wake-up is lost: the item a cancelled getter was woken for goes to the next one."""

    async def run() -> Any:
        queue = factory(0)
        first = asyncio.ensure_future(queue.get())
        second = asyncio.ensure_future(queue.get())
        await asyncio.sleep(0.01)
        queue.put_nowait("item")  # wakes the first getter ...
        first.cancel()  # ... which is cancelled before it runs
        return await asyncio.wait_for(second, 1)

    assert asyncio.run(run()) == "item"


@pytest.mark.skipif(sys.version_info >= (3, 13), reason="a2a-sdk uses asyncio.Queue itself")
def test_a2a_sdks_queues_are_closable_queues_once_installed() -> None:
    """In a process of its own: installing changes a2a-sdk for the whole process."""
    script = (
        "import asyncio\n"
        "from skillrack.serve.bindings.event_queues import use_asyncio_queues\n"
        "from a2a.server.events.event_queue_v2 import EventQueueSource\n"
        "from a2a.server.events.event_queue import EventQueueLegacy\n"
        "def kinds():\n"
        "    source = EventQueueSource()\n"
        "    return [type(q).__name__ for q in"
        " (source._incoming_queue, source.queue, EventQueueLegacy().queue)]\n"
        "async def main():\n"
        "    before = kinds()\n"
        "    assert use_asyncio_queues()\n"
        "    print(*before, *kinds())\n"
        "asyncio.run(main())\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.split() == [*["AsyncQueueProxy"] * 3, *["ClosableQueue"] * 3]
