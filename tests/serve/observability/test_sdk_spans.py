"""a2a-sdk's span wrappers come off its classes only while its tracing is off.

Each check runs in a process of its own: a2a-sdk reads its tracing switch
once, at import, and taking the wrappers off changes its classes for the
whole process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from skillrack.serve.process import A2A_TRACING

SCRIPT = """
import json
from a2a.server.events.event_queue_v2 import EventQueueSource
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.utils import telemetry
from skillrack.serve.observability.sdk_spans import drop_sdk_spans

def traced():
    return sorted(
        f"{cls.__name__}.{name}"
        for cls in (EventQueueSource, DefaultRequestHandler)
        for name, value in vars(cls).items()
        if getattr(getattr(value, "__code__", None), "co_filename", None) == telemetry.__file__
    )

before = traced()
dropped = drop_sdk_spans()
print(json.dumps({"before": before, "dropped": dropped, "after": traced()}))
"""


def run(tracing: str) -> dict[str, object]:
    environ = {**os.environ, A2A_TRACING: tracing}
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
        env=environ,
    )
    result: dict[str, object] = json.loads(done.stdout)
    return result


def test_with_tracing_off_the_wrappers_come_off() -> None:
    result = run("false")
    assert "EventQueueSource.enqueue_event" in result["before"]  # type: ignore[operator]
    assert isinstance(result["dropped"], int) and result["dropped"] >= len(result["before"])  # type: ignore[arg-type]
    assert result["after"] == []


@pytest.mark.parametrize("tracing", ["true", "True"])
def test_with_tracing_on_every_wrapper_stays(tracing: str) -> None:
    result = run(tracing)
    assert result["dropped"] == 0
    assert result["after"] == result["before"] != []
