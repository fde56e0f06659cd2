"""How long the ``skillrack`` command takes to start, beside ``python -c pass``.

    python benchmarks/startup.py              # 15 rounds
    python benchmarks/startup.py --rounds 40  # steadier figures on a busy machine
    python benchmarks/startup.py --json out.json
    python benchmarks/startup.py --only serve # the three skillrack serve rows alone

Each run is a fresh process, as a user's command is: the interpreter this
script runs under starts ``python -c pass`` (the baseline: what no command
can go below), then the ``skillrack`` console script installed beside it with
``--help``, ``--version`` and ``plugins`` (the example vendor plugin loaded:
``SKILLRACK_LOAD_PLUGINS=skillrack-example-vendor``), and ``skillrack serve``
three ways (issue 34 item 4): plain, with ``--grpc-port``, and with an
OpenTelemetry exporter configured (``OTEL_EXPORTER_OTLP_ENDPOINT``, nothing
listening there: no span is exported before the card is answered).  Every
round runs each command once, in an order that rotates from round to round,
so that a busy moment of the machine falls on all of them alike.

A ``serve`` row times from the exec to the first ``200`` on the Agent Card
URL (polled every 5 ms), then stops the server with SIGTERM; its CPU time is
the process's own at that moment (``/proc/PID/stat``; elsewhere, the whole
run's from ``wait4``).  Each ``serve`` command keeps one working directory
over the rounds, so its SQLite files (the default task store, the approvals)
exist from the warm-up on: a restart, as most starts are.

Reported per command: the median and the minimum wall-clock time (the
minimum is what the command costs when nothing else gets in its way; the
median is what a user sees on this machine as it is), the median CPU time of
the process (user + system, which other processes disturb far less than wall
time), and the median above the baseline.  A command PASSes when its median
wall time is within its target (issue 18: 0.3 s for ``--help`` and
``--version``, 1 s for ``plugins``; issue 34: 1 s for each ``serve``); a MISS
says when the CPU time alone was within it, which is what a machine that is
busy with other work looks like.  The load average is printed beside the
figures, because on a shared machine it explains them.  The interpreter
compiles a module every time it is imported when its ``.pyc`` is missing
and cannot be written (``PYTHONDONTWRITEBYTECODE``, a read-only checkout):
the script says so when skillrack's own are missing, since that alone adds
a third to ``serve``'s start.

The regression test (tests/cli/test_startup.py) does not time anything: it
checks which modules each command imports.  This script is not part of tox or
CI, since its figures depend on the machine.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import importlib.metadata
import importlib.util
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PYTHON = sys.executable
EXAMPLE_VENDOR = "skillrack-example-vendor"
CARD_PATH = "/.well-known/agent-card.json"
#: Seconds a ``serve`` row may take before the run stops with its output.
SERVE_TIMEOUT_S = 60.0
#: Seconds between two polls of the card URL.
POLL_INTERVAL_S = 0.005
#: The card the bare a2a-sdk agent serves (its start does not depend on what the card says).
BARE_CARD = {"name": "bare", "description": "a bare a2a-sdk agent", "version": "1.0"}


@dataclass
class Command:
    """One command line to time, and its target (None for the baseline).

    ``serve``: the command is a server, timed to the first 200 on its card
    (``--port`` and, for gRPC, ``--grpc-port`` are added, free ports each run).
    """

    name: str
    argv: list[str]
    target: float | None
    env: dict[str, str] = field(default_factory=dict)
    serve: bool = False
    grpc: bool = False
    #: What a row without a target is: "baseline" (python -c pass) or "reference".
    role: str = "baseline"
    workdir: str | None = None
    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)


def skillrack_command() -> list[str]:
    """The ``skillrack`` console script installed with this interpreter, as a user runs it."""
    script = Path(PYTHON).parent / ("skillrack.exe" if os.name == "nt" else "skillrack")
    return [str(script)] if script.exists() else [PYTHON, "-m", "skillrack"]


def commands(only: str | None = None) -> list[Command]:
    """Every command to time (``only="serve"``: the baseline and the ``serve`` rows)."""
    skillrack = skillrack_command()
    example = {"SKILLRACK_LOAD_PLUGINS": EXAMPLE_VENDOR}
    serve = [*skillrack, "serve", "--log-level", "warning"]
    found = [
        Command("python -c pass", [PYTHON, "-c", "pass"], None),
        Command("skillrack --help", [*skillrack, "--help"], 0.3),
        Command("skillrack --version", [*skillrack, "--version"], 0.3),
        Command("skillrack plugins", [*skillrack, "plugins"], 1.0, example),
        Command("skillrack serve", serve, 1.0, example, serve=True),
    ]
    if importlib.util.find_spec("grpc") is not None:
        found.append(Command("serve --grpc-port", serve, 1.0, example, serve=True, grpc=True))
    else:
        print("gRPC is not installed (pip install 'skillrack[grpc]'): no --grpc-port row")
    if importlib.util.find_spec("opentelemetry.sdk") is not None:
        otel = {**example, "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{free_port()}"}
        found.append(Command("serve, OTel exporter", serve, 1.0, otel, serve=True))
    else:
        print("the OpenTelemetry SDK is not installed (pip install 'skillrack[otel]'): no OTel row")
    bare = [PYTHON, str(Path(__file__).resolve().parent / "bare_agent.py"), "--card", "card.json"]
    found.append(
        Command(
            "bare a2a-sdk agent",
            [*bare, "--describe", "describe.json"],
            None,
            {"OTEL_INSTRUMENTATION_A2A_SDK_ENABLED": "false"},  # as skillrack serve's default
            serve=True,
            role="reference",
        )
    )
    if only == "serve":
        return [found[0], *(command for command in found if command.serve)]
    return found


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def run_once(command: Command) -> None:
    """Run ``command`` once; record its wall time and its process's CPU time."""
    if command.serve:
        wall, cpu = serve_once(command)
        command.wall.append(wall)
        command.cpu.append(cpu)
        return
    env = {**os.environ, **command.env}
    with tempfile.TemporaryFile() as errors:
        start = time.perf_counter()
        process = subprocess.Popen(command.argv, stdout=subprocess.DEVNULL, stderr=errors, env=env)
        _, status, usage = os.wait4(process.pid, 0)  # this child's own rusage
        wall = time.perf_counter() - start
        process.returncode = os.waitstatus_to_exitcode(status)
        if process.returncode != 0:
            errors.seek(0)
            text = errors.read().decode(errors="replace").strip()
            sys.exit(f"{command.name} exited {process.returncode}: {text}")
    command.wall.append(wall)
    command.cpu.append(usage.ru_utime + usage.ru_stime)


def serve_once(command: Command) -> tuple[float, float]:
    """(seconds from exec to the first 200 on the card, the process's CPU seconds by then)."""
    assert command.workdir is not None
    port = free_port()
    argv = [*command.argv, "--port", str(port)]
    if command.grpc:
        argv += ["--grpc-port", str(free_port())]
    env = {**os.environ, **command.env}
    with tempfile.TemporaryFile() as output:
        start = time.perf_counter()
        process = subprocess.Popen(
            argv, cwd=command.workdir, env=env, stdout=output, stderr=subprocess.STDOUT
        )
        answered = False
        try:
            while not (answered := card_answered(port)):
                if process.poll() is not None or time.perf_counter() - start > SERVE_TIMEOUT_S:
                    break
                time.sleep(POLL_INTERVAL_S)
            wall = time.perf_counter() - start
            cpu = process_cpu(process.pid) if answered else None
        finally:
            if process.returncode is None:  # not reaped yet (poll() reaps one that ended)
                with contextlib.suppress(ProcessLookupError):
                    process.send_signal(signal.SIGTERM)
                _, _, usage = os.wait4(process.pid, 0)
                process.returncode = 0
        if not answered:
            output.seek(0)
            text = output.read().decode(errors="replace").strip()
            sys.exit(f"{command.name} did not answer its card: {text}")
    return wall, cpu if cpu is not None else usage.ru_utime + usage.ru_stime


def card_answered(port: int) -> bool:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        connection.request("GET", CARD_PATH)
        response = connection.getresponse()
        response.read()
        return response.status == 200
    except OSError:
        return False
    finally:
        connection.close()


def process_cpu(pid: int) -> float | None:
    """User + system seconds of a running process (Linux's /proc), or None elsewhere."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def verdict(command: Command) -> str:
    """PASS or MISS by the median wall time; a MISS says whether the CPU time alone was within."""
    if command.target is None:
        return command.role
    if statistics.median(command.wall) <= command.target:
        return "PASS"
    within = statistics.median(command.cpu) <= command.target
    return "MISS (CPU within target)" if within else "MISS"


def report(measured: list[Command], rounds: int, load: tuple[float, float]) -> dict[str, Any]:
    baseline = statistics.median(measured[0].wall)
    rows = []
    for command in measured:
        median = statistics.median(command.wall)
        rows.append(
            {
                "command": command.name,
                "target_s": command.target,
                "median_s": round(median, 4),
                "min_s": round(min(command.wall), 4),
                "cpu_median_s": round(statistics.median(command.cpu), 4),
                "cpu_min_s": round(min(command.cpu), 4),
                "above_baseline_s": round(median - baseline, 4),
                "verdict": verdict(command),
            }
        )
    return {
        "rounds": rounds,
        "python": sys.version.split()[0],
        "cpus": os.cpu_count(),
        "load_average_1min": {"before": load[0], "after": load[1]},
        "results": rows,
    }


def print_table(result: dict[str, Any]) -> None:
    load = result["load_average_1min"]
    print(
        f"{result['rounds']} rounds, Python {result['python']}, {result['cpus']} CPUs, "
        f"load average {load['before']:.1f} before, {load['after']:.1f} after"
    )
    header = ("command", "target", "median", "min", "CPU", "CPU min", "+baseline", "")
    lines = [header]
    for row in result["results"]:
        target = f"{row['target_s']:.1f} s" if row["target_s"] is not None else "-"
        lines.append(
            (
                row["command"],
                target,
                f"{row['median_s']:.3f} s",
                f"{row['min_s']:.3f} s",
                f"{row['cpu_median_s']:.3f} s",
                f"{row['cpu_min_s']:.3f} s",
                f"{row['above_baseline_s']:+.3f} s" if row["target_s"] is not None else "",
                row["verdict"],
            )
        )
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    for line in lines:
        print("  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)))


def bytecode_missing() -> bool:
    """Whether skillrack's own modules have no ``.pyc`` (each start then compiles them all)."""
    spec = importlib.util.find_spec("skillrack.serve.server")
    if spec is None or spec.origin is None:
        return False
    return not Path(importlib.util.cache_from_source(spec.origin)).exists()


@contextlib.contextmanager
def working_directories(measured: list[Command]) -> Iterator[None]:
    """One directory per ``serve`` command, kept over its rounds (its SQLite files)."""
    with contextlib.ExitStack() as stack:
        for command in measured:
            if command.serve:
                command.workdir = stack.enter_context(
                    tempfile.TemporaryDirectory(prefix="skillrack-startup-")
                )
                workdir = Path(command.workdir)  # what the bare agent serves: any card will do
                (workdir / "card.json").write_text(json.dumps(BARE_CARD), encoding="utf-8")
                (workdir / "describe.json").write_text("{}", encoding="utf-8")
        yield


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=15, help="runs of each command")
    parser.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    parser.add_argument(
        "--only", choices=("serve",), help="serve: the baseline and the skillrack serve rows"
    )
    args = parser.parse_args(argv)
    try:
        importlib.metadata.distribution(EXAMPLE_VENDOR)
    except importlib.metadata.PackageNotFoundError:
        sys.exit("install the example vendor first: pip install ./example_vendor_plugin")
    if bytecode_missing():
        print(
            "skillrack's modules have no .pyc files (PYTHONDONTWRITEBYTECODE?): every start "
            f"compiles them; python -m compileall {Path(__file__).resolve().parent.parent} once"
        )
    measured = commands(args.only)
    with working_directories(measured):
        load_before = os.getloadavg()[0]
        for command in measured:  # one warm-up run each: the page cache, .pyc files, SQLite
            run_once(command)
            command.wall.clear()
            command.cpu.clear()
        for round_number in range(args.rounds):
            shift = round_number % len(measured)
            for command in measured[shift:] + measured[:shift]:
                run_once(command)
        result = report(measured, args.rounds, (load_before, os.getloadavg()[0]))
    print_table(result)
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
