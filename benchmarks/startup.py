"""How long the ``skillrack`` command takes to start, beside ``python -c pass``.

    python benchmarks/startup.py              # 15 rounds
    python benchmarks/startup.py --rounds 40  # steadier figures on a busy machine
    python benchmarks/startup.py --json out.json

Each run is a fresh process, as a user's command is: the interpreter this
script runs under starts ``python -c pass`` (the baseline: what no command
can go below), then the ``skillrack`` console script installed beside it with
``--help``, ``--version`` and ``plugins`` (the example vendor plugin loaded:
``SKILLRACK_LOAD_PLUGINS=skillrack-example-vendor``).  Every round runs each
command once, in an order that rotates from round to round, so that a busy
moment of the machine falls on all of them alike.

Reported per command: the median and the minimum wall-clock time (the
minimum is what the command costs when nothing else gets in its way; the
median is what a user sees on this machine as it is), the median CPU time of
the process (user + system, which other processes disturb far less than wall
time), and the median above the baseline.  A command PASSes when its median
wall time is within its target (issue 18: 0.3 s for ``--help`` and
``--version``, 1 s for ``plugins``); a MISS says when the CPU time alone was
within it, which is what a machine that is busy with other work looks like.
The load average is printed beside the figures, because on a shared machine
it explains them.

The regression test (tests/cli/test_startup.py) does not time anything: it
checks which modules each command imports.  This script is not part of tox or
CI, since its figures depend on the machine.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PYTHON = sys.executable
EXAMPLE_VENDOR = "skillrack-example-vendor"


@dataclass
class Command:
    """One command line to time, and its target (None for the baseline)."""

    name: str
    argv: list[str]
    target: float | None
    env: dict[str, str] = field(default_factory=dict)
    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)


def skillrack_command() -> list[str]:
    """The ``skillrack`` console script installed with this interpreter, as a user runs it."""
    script = Path(PYTHON).parent / ("skillrack.exe" if os.name == "nt" else "skillrack")
    return [str(script)] if script.exists() else [PYTHON, "-m", "skillrack"]


def commands() -> list[Command]:
    skillrack = skillrack_command()
    return [
        Command("python -c pass", [PYTHON, "-c", "pass"], None),
        Command("skillrack --help", [*skillrack, "--help"], 0.3),
        Command("skillrack --version", [*skillrack, "--version"], 0.3),
        Command(
            "skillrack plugins",
            [*skillrack, "plugins"],
            1.0,
            {"SKILLRACK_LOAD_PLUGINS": EXAMPLE_VENDOR},
        ),
    ]


def run_once(command: Command) -> None:
    """Run ``command`` once; record its wall time and its process's CPU time."""
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


def verdict(command: Command) -> str:
    """PASS or MISS by the median wall time; a MISS says whether the CPU time alone was within."""
    if command.target is None:
        return "baseline"
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
    header = ("command", "target", "median", "min", "CPU", "+baseline", "")
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
                f"{row['above_baseline_s']:+.3f} s" if row["target_s"] is not None else "",
                row["verdict"],
            )
        )
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    for line in lines:
        print("  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=15, help="runs of each command")
    parser.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    args = parser.parse_args(argv)
    try:
        importlib.metadata.distribution(EXAMPLE_VENDOR)
    except importlib.metadata.PackageNotFoundError:
        sys.exit("install the example vendor first: pip install ./example_vendor_plugin")
    measured = commands()
    load_before = os.getloadavg()[0]
    for command in measured:  # one warm-up run each: the page cache, .pyc files
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
