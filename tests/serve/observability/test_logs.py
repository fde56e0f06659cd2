"""The JSON log formatter (``--log-format json``): fields, trace ids, exception hygiene."""

from __future__ import annotations

import json
import logging
import sys

from opentelemetry.sdk.trace import TracerProvider

from skillrack.serve.observability.logs import JsonFormatter, log_config


def _record(
    message: str, *args: object, exc_info: object = None, **extra: object
) -> logging.LogRecord:
    record = logging.LogRecord(
        "skillrack.audit", logging.INFO, __file__, 1, message, args, exc_info
    )  # type: ignore[arg-type]
    for key, value in extra.items():
        setattr(record, key, value)
    return record


def test_a_line_is_one_json_object_with_the_task_fields() -> None:
    record = _record(
        "task %s of %s completed", "t-1", "echo", task_id="t-1", skill="echo", code=None
    )
    line = json.loads(JsonFormatter().format(record))
    assert line["message"] == "task t-1 of echo completed"
    assert (line["level"], line["logger"]) == ("INFO", "skillrack.audit")
    assert (line["task_id"], line["skill"], line["code"]) == ("t-1", "echo", None)
    assert line["time"].endswith("+00:00")
    assert line["trace_id"] is None and line["span_id"] is None  # no span is current


def test_a_line_written_in_a_span_carries_its_ids() -> None:
    tracer = TracerProvider().get_tracer("test")
    with tracer.start_as_current_span("turn") as span:
        line = json.loads(JsonFormatter().format(_record("inside")))
    context = span.get_span_context()
    assert line["trace_id"] == format(context.trace_id, "032x")
    assert line["span_id"] == format(context.span_id, "016x")


def test_an_exception_is_its_type_and_frames_never_its_text() -> None:
    try:
        secret = "password=hunter2"
        raise ValueError(f"connect failed: {secret}")
    except ValueError:
        record = _record("store failed", exc_info=sys.exc_info())
    text = JsonFormatter().format(record)
    line = json.loads(text)
    assert line["exception"] == "ValueError"
    assert "test_an_exception_is_its_type_and_frames_never_its_text" in line["frames"]
    assert "hunter2" not in text


def test_log_config_gives_every_logger_one_format() -> None:
    config = log_config("json", "warning")
    assert config["root"]["level"] == "WARNING"
    assert {f["()"] for f in config["formatters"].values()} == {
        "skillrack.serve.observability.logs.JsonFormatter"
    }
    text = log_config("text", "info")
    assert "JsonFormatter" not in json.dumps(text)
