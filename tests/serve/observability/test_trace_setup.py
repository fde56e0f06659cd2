"""Who turns traces on (issue 16, item 2): the ``OTEL_*`` variables, for ``skillrack serve`` only.

Without an exporter configured nothing is installed: the API's no-op tracer
stays, the app reads no trace headers and a turn records nothing (today's
throughput).  With one, ``skillrack serve`` installs the SDK's provider and
exports; an exporter asked for but not installed stops it at start-up.
(The spans themselves: tests/serve/observability/test_traces.py.)
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from importlib.metadata import EntryPoint
from pathlib import Path
from typing import Any

import pytest
from helpers.agent_skills import AllowAll
from helpers.builders import registry_of
from helpers.served_process import probe_request, start
from helpers.waiting import wait_until
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from skillrack.errors import StartupError
from skillrack.host.config import Config, ServerSettings
from skillrack.serve.middleware import TraceContext
from skillrack.serve.observability import traces
from skillrack.serve.observability.deferred_exporter import DeferredExporter
from skillrack.serve.process import A2A_TRACING, EXPORTER_SETTINGS
from skillrack.serve.server import build_server
from skillrack.testing.serve import ServedAgent, invoke

TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
#: Start-up on a loaded machine (several of these tests import everything at once).
STARTUP_S = 120.0
OTEL_NAMES = (*EXPORTER_SETTINGS, A2A_TRACING, "OTEL_SDK_DISABLED", "OTEL_SERVICE_NAME")


@pytest.fixture
def no_otel(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in OTEL_NAMES:
        monkeypatch.delenv(name, raising=False)


@contextmanager
def serving(workdir: Path, **kwargs: Any) -> Iterator[ServedAgent]:
    agent = start(workdir, **kwargs).wait_ready(STARTUP_S)
    try:
        yield agent
    finally:
        agent.stop()


def test_without_configuration_no_provider_is_installed(tmp_path: Path) -> None:
    assert traces.configure({"PATH": "/bin"}).startswith("off (set OTEL_EXPORTER_OTLP_ENDPOINT")
    assert isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)
    assert traces.provider() is None and traces.tracer() is None
    with traces.turn("task-1") as turn:
        assert turn is traces.OFF
        assert turn.stage("handler") is turn.stage("validation")  # one shared null context
    registry = registry_of([("allow", AllowAll())])
    app = build_server(
        registry,
        Config(base_dir=tmp_path, server=ServerSettings(store="memory")),
        "http://127.0.0.1:9",
    )
    assert TraceContext not in [m.cls for m in app.user_middleware]


@pytest.mark.parametrize(
    ("environ", "said"),
    [
        (
            {"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"},
            "off (set",
        ),
        (
            {"OTEL_SDK_DISABLED": "true", "OTEL_TRACES_EXPORTER": "console"},
            "off (OTEL_SDK_DISABLED",
        ),
        ({"OTEL_TRACES_EXPORTER": "console,otlp"}, "on (exporting with console, otlp_proto_http)"),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, "on (exporting with otlp_proto_http)"),
    ],
)
def test_the_otel_variables_decide(environ: dict[str, str], said: str) -> None:
    assert traces.describe(environ).startswith(said)
    assert traces.provider() is None  # describing installs nothing


@pytest.mark.parametrize(
    ("environ", "named"),
    [
        ({"OTEL_TRACES_EXPORTER": "zipkin"}, "'zipkin' span exporter"),
        (
            {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
            "opentelemetry-exporter-otlp-proto-grpc",
        ),
        (
            {
                "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c",
                "OTEL_EXPORTER_OTLP_PROTOCOL": "carrier-pigeon",
            },
            "use http/protobuf or grpc",
        ),
    ],
)
def test_an_exporter_that_is_not_installed_is_refused(environ: dict[str, str], named: str) -> None:
    with pytest.raises(StartupError) as info:
        traces.configure(environ)
    assert named in str(info.value) and "\n" not in str(info.value)
    assert traces.provider() is None


def test_serve_says_traces_are_off_by_default(tmp_path: Path, no_otel: None) -> None:
    with serving(tmp_path, args=("--store", "memory")) as served:
        assert "traces: off (set OTEL_EXPORTER_OTLP_ENDPOINT" in served.output()


def test_serve_refuses_to_start_with_an_exporter_it_lacks(tmp_path: Path, no_otel: None) -> None:
    agent = start(tmp_path, args=("--store", "memory"), env={"OTEL_TRACES_EXPORTER": "zipkin"})
    assert agent.process.wait(timeout=STARTUP_S) != 0
    output = agent.output()
    assert "skillrack: OTEL_TRACES_EXPORTER asks for the 'zipkin' span exporter" in output
    assert "Traceback" not in output


@pytest.mark.parametrize(
    "args",
    # --workers: each worker configures its own provider (server_from_environment)
    [("--store", "memory"), ("--workers", "2", "--store", "sqlite:///traced.db")],
    ids=["one process", "workers"],
)
@pytest.mark.slow
def test_serve_exports_spans_when_an_exporter_is_configured(
    tmp_path: Path, no_otel: None, args: tuple[str, ...]
) -> None:
    env = {
        "OTEL_TRACES_EXPORTER": "console",  # to its stdout: the log the test reads
        "OTEL_BSP_SCHEDULE_DELAY": "50",
        "OTEL_SERVICE_NAME": "probe-agent",
    }
    with serving(tmp_path, args=args, env=env) as served:
        assert "traces: on (exporting with console)" in served.output()
        assert "a2a-sdk tracing: on" in served.output()  # one rule for both
        request = probe_request(served.url, "echo", {"text": "argument-value-9"})
        task = invoke(served.url, request, headers={"traceparent": TRACEPARENT})
        assert task["status"]["state"] == "TASK_STATE_COMPLETED"
        wait_until(
            lambda: '"name": "skillrack.invoke echo"' in served.output(),
            "the invocation span on the console exporter",
        )
        output = served.output()
    assert '"trace_id": "0x4bf92f3577b34da6a3ce929d0e0e4736"' in output
    assert '"service.name": "probe-agent"' in output
    assert '"skillrack.task.state": "TASK_STATE_COMPLETED"' in output
    assert "argument-value-9" not in output


#: An installed exporter class (the SDK's own) and one that cannot be made.
IN_MEMORY = "opentelemetry.sdk.trace.export.in_memory_span_exporter:InMemorySpanExporter"
BROKEN = "skillrack.serve.observability.traces:no_such_exporter"


def entry_point(value: str) -> EntryPoint:
    return EntryPoint(name="probe", value=value, group="opentelemetry_traces_exporter")


def finished_span() -> ReadableSpan:
    provider = TracerProvider()
    memory = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    provider.get_tracer("probe").start_span("probe").end()
    (span,) = memory.get_finished_spans()
    return span


def test_the_exporter_is_made_at_the_first_export_not_before() -> None:
    """``configure`` hands the processor a stand-in: making the exporter is not start-up work."""
    deferred = DeferredExporter("probe", entry_point(IN_MEMORY))
    assert deferred.force_flush() is True  # nothing made for a flush or a shutdown
    assert deferred._exporter is None
    assert deferred.export([finished_span()]) is SpanExportResult.SUCCESS
    made = deferred.exporter()
    assert isinstance(made, InMemorySpanExporter)
    assert [span.name for span in made.get_finished_spans()] == ["probe"]
    assert deferred.exporter() is made  # made once
    deferred.shutdown()


def test_an_exporter_that_cannot_be_made_is_logged_once_and_its_spans_dropped(
    caplog: pytest.LogCaptureFixture,
) -> None:
    deferred = DeferredExporter("probe", entry_point(BROKEN))
    with caplog.at_level("ERROR"):
        assert deferred.export([finished_span()]) is SpanExportResult.FAILURE
        assert deferred.export([finished_span()]) is SpanExportResult.FAILURE
    (record,) = [r for r in caplog.records if "span exporter" in r.getMessage()]
    assert "the 'probe' span exporter could not be made (AttributeError" in record.getMessage()
    deferred.shutdown()  # nothing to shut down
