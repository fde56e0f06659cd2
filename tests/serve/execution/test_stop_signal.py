"""StopSignal.wait: a handler's end, its deadline, a stop, and a cancelled turn."""

from __future__ import annotations

import asyncio

import pytest

from skillrack.serve.execution.stop_signal import StopSignal


async def at_once() -> str:
    return "done"


async def slow() -> str:
    await asyncio.sleep(3600)
    return "never"


def test_a_handler_ending_in_its_first_step_is_done() -> None:
    async def main() -> tuple[bool, str]:
        running = asyncio.ensure_future(at_once())
        return await StopSignal(lambda: 1).wait(running, 0.5), running.result()

    assert asyncio.run(main()) == (True, "done")


def test_a_handler_ending_later_is_waited_for() -> None:
    async def later() -> str:
        await asyncio.sleep(0.01)
        return "later"

    async def main() -> bool:
        return await StopSignal(lambda: 1).wait(asyncio.ensure_future(later()), 5)

    assert asyncio.run(main()) is True


def test_a_deadline_or_a_stop_ends_the_wait() -> None:
    async def main() -> tuple[bool, bool, bool]:
        signal = StopSignal(lambda: 1)
        timed_out = await signal.wait(asyncio.ensure_future(slow()), 0.01)
        waiting = asyncio.ensure_future(signal.wait(asyncio.ensure_future(slow()), None))
        await asyncio.sleep(0.01)
        signal.stop("stopping")
        return timed_out, await waiting, signal.future().done()

    assert asyncio.run(main()) == (False, False, True)


@pytest.mark.parametrize("yields", [1, 3])
def test_a_cancelled_turn_cancels_its_handler(yields: int) -> None:
    """Cancelled in its first yield or while waiting: the handler is cancelled too."""

    async def main() -> bool:
        running = asyncio.ensure_future(slow())
        waiting = asyncio.ensure_future(StopSignal(lambda: 1).wait(running, None))
        for _ in range(yields):
            await asyncio.sleep(0)
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        await asyncio.sleep(0)
        return running.cancelled()

    assert asyncio.run(main()) is True
