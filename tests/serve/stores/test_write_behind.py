"""The write-behind commit loop both grouping task stores use, on its own.

The stores' behaviour tests (test_stores.py, test_cluster_store.py) check it
through a database; these check the loop's promises with a recording writer:
one batch per commit, one commit at a time, a failed batch put back (the
store deciding against a newer save), a settled save committed before it
returns, an in-progress one within the delay, and the last commit at close.
"""

from __future__ import annotations

import asyncio

import pytest

from skillrack.serve.stores.write_behind import WriteBehind


class Recorder:
    """A writer that records each batch, and fails while ``failing`` is set."""

    def __init__(self) -> None:
        self.batches: list[dict[str, int]] = []
        self.failing = False
        self.seen_writing: list[dict[str, int]] = []
        self.release = asyncio.Event()
        self.release.set()

    async def write(self, batch: dict[str, int]) -> None:
        await self.release.wait()
        if self.failing:
            raise ConnectionError("database away")
        self.batches.append(dict(batch))


def newest(failed: int, newer: int | None) -> int:
    return failed if newer is None else newer


async def test_a_settled_save_commits_every_pending_save_in_one_batch() -> None:
    recorder = Recorder()
    behind: WriteBehind[str, int] = WriteBehind(recorder.write, newest, delay=60)
    behind.pending.update(a=1, b=1)
    await behind.saved(False)
    assert recorder.batches == []  # in progress: waits (60 s here)
    behind.pending["a"] = 2
    await behind.saved(True)
    assert recorder.batches == [{"a": 2, "b": 1}]
    assert behind.pending == {} and behind.count == 0
    await behind.close()


async def test_an_in_progress_save_is_committed_within_the_delay() -> None:
    recorder = Recorder()
    behind: WriteBehind[str, int] = WriteBehind(recorder.write, newest, delay=0.01)
    behind.pending["a"] = 1
    await behind.saved(False)
    async with asyncio.timeout(5):
        while not recorder.batches:
            await asyncio.sleep(0.01)
    assert recorder.batches == [{"a": 1}]
    await behind.close()


async def test_a_failed_batch_stays_pending_and_keep_decides_against_newer_saves() -> None:
    recorder = Recorder()
    decided: list[tuple[int, int | None]] = []

    def keep(failed: int, newer: int | None) -> int | None:
        decided.append((failed, newer))
        return None if failed < 0 else newest(failed, newer)

    behind: WriteBehind[str, int] = WriteBehind(recorder.write, keep, delay=60)
    behind.pending.update(a=1, b=1, gone=-1)
    recorder.release.clear()
    recorder.failing = True
    commit = asyncio.create_task(behind.commit())
    await asyncio.sleep(0)
    assert behind.writing == {"a": 1, "b": 1, "gone": -1} and behind.uncommitted("a")
    behind.pending["b"] = 2  # saved again while the batch is written
    assert behind.count == 3
    recorder.release.set()
    with pytest.raises(ConnectionError):
        await commit
    assert sorted(decided, key=str) == sorted([(1, None), (1, 2), (-1, None)], key=str)
    assert behind.pending == {"a": 1, "b": 2} and behind.writing == {}
    recorder.failing = False
    await behind.close()  # the last commit writes what stayed pending
    assert recorder.batches == [{"a": 1, "b": 2}]


async def test_committed_runs_once_the_batch_is_no_longer_being_written() -> None:
    recorder = Recorder()
    after: list[tuple[dict[str, int], bool]] = []
    behind: WriteBehind[str, int] = WriteBehind(
        recorder.write,
        newest,
        committed=lambda batch: after.append((dict(batch), behind.uncommitted("a"))),
        delay=60,
    )
    behind.pending["a"] = 1
    await behind.commit()
    await behind.commit()  # nothing pending: no write, no callback
    assert after == [({"a": 1}, False)]
    assert recorder.batches == [{"a": 1}]
    await behind.close()


async def test_commits_run_one_at_a_time_in_the_order_of_their_saves() -> None:
    recorder = Recorder()
    behind: WriteBehind[str, int] = WriteBehind(recorder.write, newest, delay=60)
    behind.pending["a"] = 1
    recorder.release.clear()
    first = asyncio.create_task(behind.commit())
    await asyncio.sleep(0)
    behind.pending["a"] = 2
    second = asyncio.create_task(behind.commit())
    await asyncio.sleep(0)
    assert behind.lock.locked() and behind.writing == {"a": 1}
    recorder.release.set()
    await asyncio.gather(first, second)
    assert recorder.batches == [{"a": 1}, {"a": 2}]
    await behind.close()


async def test_a_failing_background_commit_is_logged_and_retried(
    caplog: pytest.LogCaptureFixture,
) -> None:
    recorder = Recorder()
    recorder.failing = True
    behind: WriteBehind[str, int] = WriteBehind(recorder.write, newest, delay=0.01)
    behind.pending["a"] = 1
    behind.arm()
    async with asyncio.timeout(5):
        while "not yet written (ConnectionError); will retry" not in caplog.text:
            await asyncio.sleep(0.01)
    recorder.failing = False
    async with asyncio.timeout(5):
        while not recorder.batches:
            await asyncio.sleep(0.01)
    assert recorder.batches == [{"a": 1}]
    await behind.close()
