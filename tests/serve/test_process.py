"""What ``skillrack serve`` sets for its own process: a2a-sdk's tracing, the collector.

The library must leave an embedding application's tracing alone; the
``skillrack`` command, which owns its process, switches a2a-sdk's tracing off
when nobody asked for traces, and says so in its start-up log.
"""

from __future__ import annotations

import asyncio
import gc
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers.served_process import probe_request, send, serving

from skillrack.cli.launch import main as launch
from skillrack.serve.process import (
    A2A_TRACING,
    YOUNG_THRESHOLD,
    default_tracing,
    freeze_startup_heap,
    pause_collector,
)


def test_tracing_is_switched_off_when_nobody_asked_for_it() -> None:
    environ: dict[str, str] = {"PATH": "/bin"}
    assert default_tracing(environ) is True
    assert environ == {"PATH": "/bin", A2A_TRACING: "false"}


@pytest.mark.parametrize(
    "environ",
    [
        {A2A_TRACING: "true"},
        {A2A_TRACING: "false"},
        {"OTEL_TRACES_EXPORTER": "otlp"},
        {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4317"},
        {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4318/v1/traces"},
    ],
)
def test_an_operators_choice_is_kept(environ: dict[str, str]) -> None:
    before = dict(environ)
    assert default_tracing(environ) is False
    assert environ == before


@pytest.mark.parametrize(
    "environ",
    [
        {"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317"},
        {"OTEL_SDK_DISABLED": "true", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317"},
    ],
)
def test_an_exporter_named_none_is_no_exporter(environ: dict[str, str]) -> None:
    assert default_tracing(environ) is True
    assert environ[A2A_TRACING] == "false"


@pytest.fixture(autouse=True)
def thresholds() -> Iterator[None]:
    """The test process's collector thresholds, as they were (``freeze_startup_heap`` sets them)."""
    before = gc.get_threshold()
    yield
    gc.set_threshold(*before)


def test_freeze_moves_the_startup_heap_out_of_collections() -> None:
    before = gc.get_freeze_count()
    try:
        freeze_startup_heap()
        assert gc.get_freeze_count() > before
    finally:
        gc.unfreeze()


def test_the_collector_paused_for_the_start_runs_again_once_the_heap_is_frozen() -> None:
    try:
        assert pause_collector() is True
        assert not gc.isenabled()
        freeze_startup_heap()
        assert gc.isenabled()
    finally:
        gc.enable()
        gc.unfreeze()


async def _relayed(queue: asyncio.Queue[int]) -> AsyncIterator[int]:
    while True:
        yield await queue.get()


async def _stream(queue: asyncio.Queue[int]) -> None:
    """A stream's shape: async generators relaying a queue's events, suspended between them."""

    async def layer(inner: AsyncIterator[int]) -> AsyncIterator[int]:
        async for item in inner:
            yield item

    async for _ in layer(layer(_relayed(queue))):
        pass


def _waiting_steps_in_oldest_generation(streams: int, other_work: int) -> int:
    """Suspended generator steps of ``streams`` streams found in the oldest generation after
    the process made ``other_work`` lasting objects (what opening some streams makes)."""

    async def run() -> int:
        queues: list[asyncio.Queue[int]] = [asyncio.Queue() for _ in range(streams)]
        tasks = [asyncio.create_task(_stream(queue)) for queue in queues]
        for queue in queues:  # every stream received an event and waits for the next
            queue.put_nowait(0)
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        kept: list[list[int]] = [[] for _ in range(other_work)]
        oldest = sum(
            type(o).__name__ == "async_generator_asend" for o in gc.get_objects(generation=2)
        )
        del kept
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        return oldest

    return asyncio.run(run())


def test_what_waits_for_a_streams_next_event_is_not_promoted_to_the_oldest_generation() -> None:
    """With the default young threshold (700) the objects of every waiting stream reached the
    oldest generation whenever other work made objects, and died there; its full collections,
    each walking every open stream, then took 40% of a server holding 10,000 streams."""
    gc.set_threshold(700, 10, 10)
    assert _waiting_steps_in_oldest_generation(1000, 20_000) > 0  # what the test detects
    try:
        freeze_startup_heap()
        assert gc.get_threshold()[0] == YOUNG_THRESHOLD
        assert _waiting_steps_in_oldest_generation(1000, 20_000) == 0
    finally:
        gc.unfreeze()


def test_a_start_that_fails_turns_the_collector_on_again(tmp_path: Path) -> None:
    """``launch`` pauses it for ``serve``; a start that stops early must not leave it off."""
    assert launch(["serve", "--config", str(tmp_path / "missing.toml")]) != 0
    assert gc.isenabled()


@pytest.mark.slow
def test_serve_switches_tracing_off_by_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in (A2A_TRACING, "OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_ENDPOINT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", raising=False)
    with serving(tmp_path / "default", args=("--store", "memory")) as served:
        assert f"a2a-sdk tracing: off ({A2A_TRACING}=false" in served.output()
    with serving(
        tmp_path / "traced", args=("--store", "memory"), env={A2A_TRACING: "true"}
    ) as served:
        assert "a2a-sdk tracing: on" in served.output()


#: A probe skill that reports what ``skillrack serve`` made of a2a-sdk in its process.
SDK_PROBE = """
from a2a.server.events import event_queue_v2
from a2a.utils import telemetry
from skillrack import DomainSchema, Skill, hookimpl


async def sdk_state(arguments, context):
    enqueue = vars(event_queue_v2.EventQueueSource)["enqueue_event"]
    return {
        "queue": event_queue_v2.create_async_queue.__module__,
        "span_wrapper": enqueue.__code__.co_filename == telemetry.__file__,
    }


@hookimpl
def register_skills(register):
    schema = {"type": "object"}
    register(
        Skill(
            id="sdk_state",
            version="1.0",
            name="sdk_state",
            description="what skillrack serve made of a2a-sdk",
            input_schema=DomainSchema.inline(schema, schema_uri="urn:test:sdk:in", version="1.0"),
            output_schema=DomainSchema.inline(schema, schema_uri="urn:test:sdk:out", version="1.0"),
            handler=sdk_state,
        )
    )
"""


def _sdk_state(workdir: Path, *args: str, env: dict[str, str] | None = None) -> Any:
    (workdir / "plugin").mkdir(parents=True)
    (workdir / "plugin" / "sdk_probe.py").write_text(SDK_PROBE, encoding="utf-8")
    config = workdir / "skillrack.toml"
    config.write_text('[plugins]\nbuiltin = ["sdk_probe"]\n', encoding="utf-8")
    store = f"sqlite:///{workdir / 'tasks.db'}"  # one the workers share
    with serving(workdir, args=("--store", store, *args), config=config, env=env) as served:
        task = send(served.url, probe_request(served.url, "sdk_state", {}))
    [primary] = [a for a in task["artifacts"] if a["name"] == "sdk_state"]
    return primary["parts"][0]["data"]["result"]


@pytest.mark.slow
@pytest.mark.skipif(sys.version_info >= (3, 13), reason="a2a-sdk uses asyncio.Queue itself")
@pytest.mark.parametrize("workers", [1, 2])
def test_serve_runs_a2a_sdks_queues_on_asyncio_without_span_wrappers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, workers: int
) -> None:
    """Both what ``own_process`` does to a2a-sdk, in the process (or each worker) serving."""
    monkeypatch.delenv(A2A_TRACING, raising=False)
    state = _sdk_state(tmp_path, "--workers", str(workers))
    assert state == {"queue": "skillrack.serve.bindings.event_queues", "span_wrapper": False}


@pytest.mark.slow
def test_serve_keeps_the_span_wrappers_when_a2a_sdk_traces(tmp_path: Path) -> None:
    state = _sdk_state(tmp_path, env={A2A_TRACING: "true"})
    assert state["span_wrapper"] is True
