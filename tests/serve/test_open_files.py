"""``skillrack serve`` raises its soft open-file limit to hold ``[server] max_connections``.

Every open connection (a stream a client holds open included) is a file
descriptor; a soft ``RLIMIT_NOFILE`` of 1,024 would make ``accept`` fail long
before the configured number of connections.  The limit is checked where it
matters: in ``/proc/PID/limits`` of a real ``skillrack serve`` started with a
low soft limit, beside the start-up line that says what was done.
"""

from __future__ import annotations

import json
import os
import re
import resource
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from helpers.served_process import write_config, write_plugin

from skillrack.serve.process import FILE_HEADROOM
from skillrack.testing.serve import ServedAgent, free_port, skillrack_command

LOW = 512


def soft_limit_of(pid: int) -> int:
    """The soft ``Max open files`` of a running process, as the kernel reports it."""
    for line in Path(f"/proc/{pid}/limits").read_text().splitlines():
        if line.startswith("Max open files"):
            return int(line.split()[3])
    raise AssertionError(f"no open-file limit in /proc/{pid}/limits")


def _in_child(soft: int, hard: int, connections: int) -> tuple[str | None, int]:
    """``raise_open_files(connections)`` in a fresh interpreter with ``(soft, hard)`` set first."""
    code = (
        "import json, resource\n"
        "from skillrack.serve.process import raise_open_files\n"
        f"resource.setrlimit(resource.RLIMIT_NOFILE, ({soft}, {hard}))\n"
        f"line = raise_open_files({connections})\n"
        "print(json.dumps([line, resource.getrlimit(resource.RLIMIT_NOFILE)[0]]))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    line, now = json.loads(out.stdout)
    return line, now


def test_a_low_soft_limit_is_raised_and_said() -> None:
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 1000 + FILE_HEADROOM:
        pytest.skip(f"the hard open-file limit here ({hard}) is below what the test asks")
    line, now = _in_child(LOW, hard, 1000)
    assert now == 1000 + FILE_HEADROOM
    assert (
        line
        == f"open files: soft limit raised from {LOW} to 1,256 for [server] max_connections = 1,000"
    )


def test_a_high_enough_limit_is_left_alone() -> None:
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    assert _in_child(LOW, hard, 100) == (None, LOW)


def test_the_hard_limit_is_the_ceiling_and_the_line_says_what_to_change() -> None:
    line, now = _in_child(LOW, LOW + 100, 1000)
    assert now == LOW + 100
    assert line is not None
    assert line.startswith(
        f"open files: soft limit raised from {LOW} to {LOW + 100} (the hard limit)"
    )
    assert "1,256 wanted for [server] max_connections = 1,000" in line
    assert "ulimit -Hn" in line
    line, now = _in_child(LOW, LOW, 1000)  # soft already at the hard limit
    assert now == LOW
    assert line is not None and line.startswith(f"open files: soft limit {LOW} is the hard limit;")


@contextmanager
def low_limit_agent(workdir: Path, server: str = "") -> Iterator[ServedAgent]:
    """``skillrack serve`` (the probe plugin) started with a soft open-file limit of ``LOW``."""
    write_plugin(workdir / "plugin")
    config = write_config(workdir, server)
    port = free_port()
    log = workdir / "serve.log"
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    command = [skillrack_command(), "serve", "--port", str(port), "--config", str(config)]
    env = {"PYTHONPATH": str(workdir / "plugin"), "SKILLRACK_LOAD_PLUGINS": ""}
    with log.open("wb") as out:
        process = subprocess.Popen(
            command,
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=workdir,
            env={**os.environ, **env},
            preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (LOW, hard)),
        )
    agent = ServedAgent(f"http://127.0.0.1:{port}", process, log).wait_ready()
    try:
        yield agent
    finally:
        agent.stop()


@pytest.mark.slow
def test_serve_raises_its_limit_for_max_connections(tmp_path: Path) -> None:
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = 10_000 + FILE_HEADROOM  # the default max_connections
    expected = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    with low_limit_agent(tmp_path) as agent:
        assert soft_limit_of(agent.process.pid) == expected
        [line] = [line for line in agent.output().splitlines() if "open files:" in line]
        assert f"soft limit raised from {LOW} to {expected:,}" in line


@pytest.mark.slow
def test_a_request_past_max_connections_is_answered_503(tmp_path: Path) -> None:
    with low_limit_agent(tmp_path, "max_connections = 3\n") as agent:
        assert soft_limit_of(agent.process.pid) == LOW  # 3 + 256 fit: nothing raised
        assert "open files:" not in agent.output()
        port = int(agent.url.rsplit(":", 1)[1])
        request = b"GET /.well-known/agent-card.json HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
        held = [socket.create_connection(("127.0.0.1", port)) for _ in range(2)]
        try:
            held[0].sendall(request)
            assert re.match(rb"HTTP/1.1 200 ", held[0].recv(200))
            held.append(socket.create_connection(("127.0.0.1", port)))  # the third
            held[-1].sendall(request)
            answer = held[-1].recv(200)
            assert re.match(rb"HTTP/1.1 503 ", answer), answer
        finally:
            for each in held:
                each.close()
