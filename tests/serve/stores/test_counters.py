"""This process's counters and the sliding window under them, on their own."""

from __future__ import annotations

import pytest

from skillrack.serve.stores import sliding_window
from skillrack.serve.stores.counters import LocalCounter
from skillrack.serve.stores.sliding_window import SlidingWindow


def test_the_window_refuses_past_its_limit_until_the_oldest_event_leaves(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    now = [1_000.0]
    monkeypatch.setattr(sliding_window.time, "monotonic", lambda: now[0])
    window = SlidingWindow(2, seconds=60.0)
    window.record("a")
    now[0] += 10
    window.record("a")
    assert window.retry_after("a") == 51  # the first event leaves 60 s after it was seen
    assert window.retry_after("b") is None  # keys do not share
    now[0] += 51
    assert window.retry_after("a") is None


def test_the_window_forgets_idle_keys_past_its_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    now = [0.0]
    monkeypatch.setattr(sliding_window.time, "monotonic", lambda: now[0])
    monkeypatch.setattr(sliding_window, "MAX_KEYS", 3)
    window = SlidingWindow(5, seconds=1.0)
    for key in ("a", "b", "c"):
        window.record(key)
    now[0] = 5.0  # all three idle for longer than the window
    window.record("d")
    assert set(window._seen) == {"d"}


async def test_local_rate_counts_only_allowed_requests() -> None:
    counter = LocalCounter()
    assert [await counter.rate("k", 2, 60.0) for _ in range(2)] == [None, None]
    refused = await counter.rate("k", 2, 60.0)
    assert refused is not None and refused >= 1
    assert await counter.rate("other", 2, 60.0) is None


async def test_local_slots_are_given_back_once() -> None:
    counter = LocalCounter()
    first = await counter.acquire("alice", 1)
    assert first is not None
    assert await counter.acquire("alice", 1) is None
    await counter.release("alice", first)
    await counter.release("alice", first)  # a second release of one token changes nothing
    second = await counter.acquire("alice", 1)
    assert second is not None and second != first
    assert await counter.acquire("alice", 1) is None
    await counter.release("alice", "not-a-token")
    assert await counter.acquire("alice", 1) is None
