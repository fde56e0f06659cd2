"""The benchmark's streaming skill, ``ticker``: progressive results at a steady rate.

Loaded by ``streams.py`` as a module of ``[plugins] builtin`` (this directory on
``PYTHONPATH``), as the tests load their probe plugins.  Each progressive
result carries its sequence number and the wall-clock time it was published
(``time.time()``, seconds), so that a client on the same machine measures the
delay from publish to delivery.  ``bare_agent.py`` answers ``ticker`` with the
same events (the Task, ``WORKING``, the progressive results, the final result,
``COMPLETED``).

    {"skill": "ticker", "arguments": {"events": 600, "interval": 2.0, "phase": 0.5}}
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from ticks import next_tick

from skillrack import DomainSchema, Skill, SkillContext, hookimpl

INPUT = {
    "type": "object",
    "properties": {
        "events": {"type": "integer", "minimum": 1, "maximum": 1_000_000},
        "interval": {"type": "number", "minimum": 0.001, "maximum": 60},
        "phase": {"type": "number", "minimum": 0, "maximum": 60},
    },
    "required": ["events", "interval"],
    "additionalProperties": False,
}
OUTPUT = {"type": "object", "properties": {"events": {"type": "integer"}}}


async def ticker(arguments: dict[str, Any], context: SkillContext) -> dict[str, Any]:
    """``events`` progressive results, one every ``interval`` seconds, on a fixed schedule
    (``ticks.py``: from the task's start, or on the grid of its ``phase``)."""
    events, interval = arguments["events"], arguments["interval"]
    phase = arguments.get("phase")
    loop = asyncio.get_running_loop()
    start = loop.time()
    for seq in range(events):
        await context.publish_progress({"seq": seq, "published": time.time()})
        await asyncio.sleep(max(0.0, next_tick(start, seq, interval, phase) - loop.time()))
    return {"events": events}


@hookimpl
def register_skills(register: Callable[[Skill], None]) -> None:
    register(
        Skill(
            id="ticker",
            version="1.0",
            name="Ticker",
            description="Publishes a progressive result every interval (benchmarks/streams.py).",
            input_schema=DomainSchema.inline(
                INPUT, schema_uri="urn:bench:ticker:in", version="1.0"
            ),
            output_schema=DomainSchema.inline(
                OUTPUT, schema_uri="urn:bench:ticker:out", version="1.0"
            ),
            handler=ticker,
        )
    )
