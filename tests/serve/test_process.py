"""What ``skillrack serve`` sets for its own process: a2a-sdk's tracing, the collector.

The library must leave an embedding application's tracing alone; the
``skillrack`` command, which owns its process, switches a2a-sdk's tracing off
when nobody asked for traces, and says so in its start-up log.
"""

from __future__ import annotations

import gc
from pathlib import Path

import pytest
from helpers.served_process import serving

from skillrack.cli.launch import main as launch
from skillrack.serve.process import (
    A2A_TRACING,
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
