"""``skillrack serve`` as operators run it: ``--metrics-port``, ``--log-format``, ``--workers``.

Real processes (:mod:`helpers.served_process`): the probe plugin's ``echo``
completes and ``crash`` fails with an exception whose text must reach neither
the metrics nor the log.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from helpers.served_process import probe_request, send, start, write_config
from prometheus_client.parser import text_string_to_metric_families

from skillrack.testing.serve import ServedAgent, free_port

CRASH_TEXT = "the probe crashed on purpose"
#: Start-up allowance: a loaded machine (CI, parallel sessions) can take longer than 30 s.
STARTUP_S = 120.0


@contextmanager
def serving(workdir: Path, **kwargs: Any) -> Iterator[ServedAgent]:
    agent = start(workdir, **kwargs).wait_ready(STARTUP_S)
    try:
        yield agent
    finally:
        agent.stop()


def invocations(text: str, skill: str, state: str) -> float:
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            labels = sample.labels
            if (
                sample.name == "skillrack_invocations_total"
                and labels.get("skill") == skill
                and labels.get("state") == state
            ):
                return float(sample.value)
    return 0.0


def json_lines(output: str) -> list[dict[str, Any]]:
    """Every log line of ``output`` (the banner is plain text; spans are indented JSON)."""
    return [json.loads(line) for line in output.splitlines() if line.startswith('{"time"')]


def test_metrics_port_and_json_logs(tmp_path: Path) -> None:
    port = free_port()
    args = ("--metrics-port", str(port), "--log-format", "json", "--log-level", "info")
    # Spans recorded (printed to stdout by the console exporter): the lines carry their ids.
    with serving(tmp_path, args=args, env={"OTEL_TRACES_EXPORTER": "console"}) as agent:
        done = send(agent.url, probe_request(agent.url, "echo", {"text": "secret-value-1"}))
        assert done["status"]["state"] == "TASK_STATE_COMPLETED"
        failed = send(agent.url, probe_request(agent.url, "crash", {}))
        assert failed["status"]["state"] == "TASK_STATE_FAILED"

        scraped = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=10)
        assert scraped.status_code == 200
        assert invocations(scraped.text, "echo", "completed") == 1
        assert invocations(scraped.text, "crash", "failed") == 1
        assert httpx.get(f"http://127.0.0.1:{port}/", timeout=10).status_code == 404
        assert httpx.get(f"http://127.0.0.1:{port}/-/hops", timeout=10).status_code == 404
    output = agent.output()

    assert f"metrics: http://127.0.0.1:{port}/metrics" in output
    lines = json_lines(output)
    assert lines, output
    for line in lines:
        assert {"time", "level", "logger", "message", "task_id", "skill", "code"} <= set(line)
        assert {"trace_id", "span_id"} <= set(line)
        for key in ("trace_id", "span_id"):
            assert line[key] is None or re.fullmatch(r"[0-9a-f]{16,32}", line[key]), line
    [completed] = [
        line
        for line in lines
        if line["logger"] == "skillrack.audit" and line["task_id"] == done["id"]
    ]
    assert completed["skill"] == "echo" and completed["code"] is None
    # Written inside the turn's server span: its trace and span ids, as W3C hex.
    assert re.fullmatch(r"[0-9a-f]{32}", completed["trace_id"]), completed
    assert re.fullmatch(r"[0-9a-f]{16}", completed["span_id"]), completed
    assert completed["level"] == "INFO"
    ended = [line for line in lines if line["task_id"] == failed["id"] and line["code"]]
    assert [line["code"] for line in ended] == ["output_invalid"]
    assert any(line["logger"] == "uvicorn.access" for line in lines)  # uvicorn's lines too
    # The exception's type and frames (whose source lines may quote the text), never the
    # exception itself as a traceback's last line would print it.
    assert [line for line in lines if "RuntimeError" in line["message"]]
    assert f"RuntimeError: {CRASH_TEXT}" not in output
    assert "secret-value-1" not in output


def test_metrics_port_from_the_configuration(tmp_path: Path) -> None:
    port = free_port()
    config = write_config(tmp_path, f'metrics_port = {port}\nlog_format = "json"\n')
    with serving(tmp_path, config=config, args=("--log-level", "info")) as agent:
        send(agent.url, probe_request(agent.url, "echo", {}))
        scraped = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=10)
        assert invocations(scraped.text, "echo", "completed") == 1
        assert json_lines(agent.output())


@pytest.mark.slow
def test_workers_add_up_into_one_exposition(tmp_path: Path) -> None:
    """Two workers, one scrape: every worker's invocations are counted, whichever answers."""
    port = free_port()
    store = f"sqlite:///{tmp_path / 'tasks.db'}"
    args = ("--workers", "2", "--store", store, "--metrics-port", str(port))
    with serving(tmp_path, args=args) as agent:
        calls = 12
        with httpx.Client() as client:  # separate connections spread over the workers
            for n in range(calls):
                task = send(agent.url, probe_request(agent.url, "echo", {"text": str(n)}))
                assert task["status"]["state"] == "TASK_STATE_COMPLETED"
            del client
        on_agent = httpx.get(agent.url + "/metrics", timeout=10)
        on_port = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=10)
        assert on_agent.status_code == on_port.status_code == 200
        assert invocations(on_agent.text, "echo", "completed") == calls
        assert invocations(on_port.text, "echo", "completed") == calls
