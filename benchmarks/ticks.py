"""The ticker's schedule, one rule for both sides of ``streams.py``.

``stream_plugin.py`` (skillrack) and ``bare_agent.py`` (bare a2a-sdk) publish a
progressive result at once, then one every ``interval`` seconds.  Counted from
each task's own start, tasks that start in the same turn of the server's event
loop (and an opening of thousands of streams starts them in batches) tick
together for their whole life: 1,000 events a second in all then arrive as
clumps of dozens within a millisecond, and each clump waits behind the one
before it.  That is a burst, not the steady rate the benchmark states.  With a
``phase`` (``streams.py`` gives the i-th of n tasks ``i / n`` of the interval),
a task ticks on the grid ``phase + k * interval`` of the server's monotonic
clock, whenever it started, so the tasks of a run publish one event every
``interval / n`` seconds in all.
"""

from __future__ import annotations

import math


def next_tick(start: float, seq: int, interval: float, phase: float | None) -> float:
    """The loop time of the tick after tick ``seq`` (tick 0 is published at ``start``)."""
    if phase is None:
        return start + (seq + 1) * interval
    return phase + (math.floor((start - phase) / interval) + seq + 1) * interval
