"""Orchestrator fan-out: one client calling the same skill on 100 agents at once, repeatedly.

    python benchmarks/fanout.py                   # 100 agents (10 processes x 10 ports), R = 10
    python benchmarks/fanout.py --quick           # R = 4
    python benchmarks/fanout.py --json out.json   # also every figure, machine-readable

Issue 34 item 2.  The agents are skillrack apps with the example vendor
plugin, several per process, each on a loopback port of its own, so each
is a distinct origin (``fanout_agents.py``, which also counts, per agent, the
TCP connections it accepted and the ``describe_skill`` requests it received).
Three callers call ``evaluate_resource_condition`` on every agent
concurrently, round after round, each caller a process of its own whose CPU
time and RSS are read from ``/proc``:

* ``a2a-sdk``: a2a-sdk's own client, the baseline: the card resolved once per
  agent before the rounds (``A2ACardResolver``), one ``ClientFactory`` client
  per agent, the request object sent as it is, nothing validated
  (``fanout_client.py a2a``);
* ``SkillClient``: one :class:`~skillrack.client.skill_client.SkillClient`,
  the whole client procedure per call (card, ``describe_skill`` when not
  cached, argument, output and record validation) (``fanout_client.py skillrack``);
* ``delegate``: a ``skillrack serve`` whose ``fan_out`` skill delegates to all
  100 through ``SkillContext.delegate`` (``fanout_plugin.py``, the agents as
  ``[peers]``); one request to it per round, its process measured.

Each caller runs one warm-up round (cards and documents fetched there), then
2R rounds in R blocks of two, the callers taking turns in an order reversed
from block to block (calls per second: the median of the blocks'; CPU per
call over the 2R rounds;
RSS after R rounds and after 2R; peak RSS is the process's ``VmHWM``).  Targets, printed beside the
figures: a rate at least the a2a-sdk client's; one ``describe_skill`` per
agent and digest over the whole run; connections reused per origin (over the
2R measured rounds, at most one new connection per agent); memory bounded
(RSS after 2R rounds at most RSS after R plus ``--margin`` MB).  The machine
is shared: the load average is printed with the figures.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from run import PYTHON, Server, cpu_seconds, rss_mb

HERE = Path(__file__).resolve().parent
SKILL = "evaluate_resource_condition"
ARGUMENTS = {
    "resource_id": "network-resource-123",
    "condition": {"metric": "utilization", "operator": "gte", "threshold": 80, "unit": "percent"},
}
CONFIG = """\
# Written by benchmarks/fanout.py: only the limits a fan-out would hit.
[server]
rate_per_minute = 1000000000
max_concurrent_tasks = 1000000
"""


def peak_rss_mb(pid: int) -> float:
    """``VmHWM``: the most RSS the process ever had."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


class Agents:
    """The agent processes, ``per_process`` ports each; ``stats()`` sums nothing, per port."""

    def __init__(self, processes: int, per_process: int, workdir: Path, env: dict[str, str]):
        self.processes: list[subprocess.Popen[str]] = []
        for index in range(processes):
            argv = [PYTHON, str(HERE / "fanout_agents.py"), "--config", str(workdir / "bench.toml")]
            argv += ["--agents", str(per_process)]
            self.processes.append(
                subprocess.Popen(
                    argv,
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=(workdir / f"agents-{index}.log").open("w"),
                    text=True,
                    env=env,
                    cwd=workdir,
                )
            )

        self.ports: list[int] = []
        for process in self.processes:  # each binds its own ports and says which
            assert process.stdout is not None
            line = process.stdout.readline()
            if not line:
                raise RuntimeError("an agent process exited; see agents-*.log")
            self.ports += json.loads(line)["ports"]
        self.urls = [f"http://127.0.0.1:{p}" for p in self.ports]

    def wait_ready(self, timeout: float = 300.0) -> None:
        deadline = time.monotonic() + timeout
        for url in self.urls:
            while True:
                if any(p.poll() is not None for p in self.processes):
                    raise RuntimeError("an agent process exited; see agents-*.log")
                try:
                    with urllib.request.urlopen(url + "/.well-known/agent-card.json", timeout=5):
                        break
                except OSError:
                    if time.monotonic() > deadline:
                        raise RuntimeError(f"{url} did not come up") from None
                    time.sleep(0.2)

    def stats(self) -> dict[int, dict[str, int]]:
        found: dict[int, dict[str, int]] = {}
        for process in self.processes:
            assert process.stdin is not None and process.stdout is not None
            process.stdin.write("stats\n")
            process.stdin.flush()
            found.update({int(k): v for k, v in json.loads(process.stdout.readline()).items()})
        return found

    def stop(self) -> None:
        for process in self.processes:
            with contextlib.suppress(BrokenPipeError, OSError):
                assert process.stdin is not None
                process.stdin.write("quit\n")
                process.stdin.flush()
        for process in self.processes:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


Stats = dict[int, dict[str, int]]


def delta(after: Stats, before: Stats, key: str) -> list[int]:
    return [after[p].get(key, 0) - before.get(p, {}).get(key, 0) for p in sorted(after)]


@dataclass
class Figures:
    """One caller's run: what ``report`` prints."""

    name: str
    calls: int = 0
    seconds: float = 0.0
    cpu: float = 0.0
    rss_r: float = 0.0
    rss_2r: float = 0.0
    peak: float = 0.0
    describes: list[int] = field(default_factory=list)
    connections: list[int] = field(default_factory=list)
    failures: int = 0
    first_failure: str | None = None
    #: Calls per second of each block.
    rates: list[float] = field(default_factory=list)

    @property
    def rate(self) -> float:
        """The median of the blocks' rates (a busy moment of the machine spoils one block)."""
        return statistics.median(self.rates) if self.rates else float("nan")

    @property
    def cpu_ms(self) -> float:
        return self.cpu / self.calls * 1e3 if self.calls else float("nan")

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "calls": self.calls,
            "seconds": self.seconds,
            "calls_per_s": self.rate,
            "calls_per_s_blocks": self.rates,
            "cpu_ms_per_call": self.cpu_ms,
            "rss_after_r_mb": self.rss_r,
            "rss_after_2r_mb": self.rss_2r,
            "rss_peak_mb": self.peak,
            "describes_max_per_agent": max(self.describes, default=0),
            "describes_total": sum(self.describes),
            "connections_max_per_agent": max(self.connections, default=0),
            "connections_total": sum(self.connections),
            "failures": self.failures,
            "first_failure": self.first_failure,
        }


class Caller:
    """A ``fanout_client.py`` process, driven over its stdin."""

    def __init__(self, kind: str, env: dict[str, str]) -> None:
        self.process = subprocess.Popen(
            [PYTHON, str(HERE / "fanout_client.py"), kind],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        self.pid = self.process.pid

    def ask(self, **command: Any) -> dict[str, Any]:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps(command) + "\n")
        self.process.stdin.flush()
        answer: dict[str, Any] = json.loads(self.process.stdout.readline())
        return answer

    def rounds(self, rounds: int) -> dict[str, Any]:
        return self.ask(op="rounds", rounds=rounds)

    def close(self) -> None:
        with contextlib.suppress(BrokenPipeError, OSError):
            assert self.process.stdin is not None
            self.process.stdin.write(json.dumps({"op": "quit"}) + "\n")
            self.process.stdin.flush()
        self.process.wait(timeout=30)


class Orchestrator:
    """``skillrack serve`` with ``fan_out``: a round is one call to it, 100 delegations."""

    def __init__(self, agents: Agents, workdir: Path, env: dict[str, str]) -> None:
        peers = "\n".join(f'a{i:03d} = "{url}"' for i, url in enumerate(agents.urls))
        directory = workdir / "orchestrator"
        directory.mkdir()
        config = CONFIG + '\n[plugins]\nbuiltin = ["fanout_plugin"]\n\n[peers]\n' + peers + "\n"
        (directory / "orchestrator.toml").write_text(config)
        argv = [PYTHON, "-m", "skillrack", "serve", "--host", "127.0.0.1", "--port", "{port}"]
        argv += ["--log-level", "warning", "--config", "orchestrator.toml", "--store", "memory"]
        path = os.pathsep.join(filter(None, [str(HERE), env.get("PYTHONPATH", "")]))
        self.server = Server("orchestrator", argv, directory, {**env, "PYTHONPATH": path})
        self.server.start().wait_ready()
        self.peers = len(agents.urls)
        self.pid = self.server.pid

    def rounds(self, rounds: int) -> dict[str, Any]:
        from skillrack.client.skill_client import SkillClient

        async def run() -> dict[str, Any]:
            url = f"http://127.0.0.1:{self.server.port}"
            async with SkillClient(timeout=600) as client:
                began = time.perf_counter()
                calls = 0
                for _ in range(rounds):
                    result = await client.call(url, "fan_out", {"peers": self.peers})
                    calls += result.result["calls"]
                return {"calls": calls, "failures": 0, "seconds": time.perf_counter() - began}

        try:
            return asyncio.run(run())
        except Exception as exc:
            return {"calls": 0, "failures": 1, "first_failure": str(exc), "seconds": 0.0}

    def close(self) -> None:
        self.server.stop()


def measure(
    callers: list[tuple[str, Caller | Orchestrator]], agents: Agents, rounds: int
) -> list[Figures]:
    """A warm-up round each, then 2R rounds in R blocks of two, the callers taking turns.

    The order of the callers is reversed from one block to the next, so that
    a busy moment of the shared machine falls on all of them alike; a
    caller's rate is the median of its blocks' rates.  RSS "after R" is read
    after half the blocks.  The agents' counters are read
    around each caller's turn: describes over everything, connections over
    the measured blocks.
    """
    figures = {name: Figures(name) for name, _ in callers}
    for name, caller in callers:
        before = agents.stats()
        warm = caller.rounds(1)
        found = figures[name]
        found.failures += warm.get("failures", 0)
        found.first_failure = warm.get("first_failure")
        found.describes = delta(agents.stats(), before, "describes")
        found.connections = [0] * len(agents.ports)
    blocks, per_block = rounds, 2
    for block in range(blocks):
        rates = []
        for name, caller in callers if block % 2 == 0 else callers[::-1]:
            found = figures[name]
            before, cpu = agents.stats(), cpu_seconds(caller.pid)
            answer = caller.rounds(per_block)
            found.cpu += cpu_seconds(caller.pid) - cpu
            after = agents.stats()
            found.rates.append(answer["calls"] / max(answer["seconds"], 1e-9))
            rates.append(f"{name} {found.rates[-1]:.0f}/s")
            found.calls += answer["calls"]
            found.seconds += answer["seconds"]
            found.failures += answer.get("failures", 0)
            found.first_failure = found.first_failure or answer.get("first_failure")
            for key in ("describes", "connections"):
                counted = zip(getattr(found, key), delta(after, before, key), strict=True)
                setattr(found, key, [x + y for x, y in counted])
            if block == blocks // 2 - 1:
                found.rss_r = rss_mb(caller.pid)
            if block == blocks - 1:
                found.rss_2r, found.peak = rss_mb(caller.pid), peak_rss_mb(caller.pid)
        print(f"  block {block + 1}/{blocks}: {', '.join(rates)}", flush=True)
    return [figures[name] for name, _ in callers]


def check(ok: bool) -> str:
    return "✓" if ok else "✗"


def report(results: list[Figures], margin: float) -> list[dict[str, Any]]:
    """The table of figures, then every target beside its figure."""
    base = next(r for r in results if r.name == "a2a-sdk")
    print(
        "\n| caller | calls/s, median of blocks (range) | client CPU ms/call "
        "| RSS after R / 2R / peak MB | describes per agent (max) "
        "| new connections per agent (max, 2R rounds) |"
    )
    print("|---|---|---|---|---|---|")
    for r in results:
        print(
            f"| {r.name} | {r.rate:.0f} ({min(r.rates, default=0):.0f}-"
            f"{max(r.rates, default=0):.0f}) | {r.cpu_ms:.2f} | {r.rss_r:.0f} / {r.rss_2r:.0f} / "
            f"{r.peak:.0f} | {max(r.describes, default=0)} | {max(r.connections, default=0)} |"
        )
    targets: list[dict[str, Any]] = []
    for r in results:
        if r.name == base.name:
            continue
        rows = [
            (
                f"{r.name}: calls/s ≥ a2a-sdk's ({base.rate:.0f})",
                f"{r.rate:.0f}",
                r.rate >= base.rate,
            ),
            (
                f"{r.name}: describe_skill once per agent and digest",
                f"max {max(r.describes, default=0)}, total {sum(r.describes)}",
                max(r.describes, default=0) <= 1,
            ),
            (
                f"{r.name}: connections reused per origin (≤ 1 new per agent in 2R rounds)",
                f"max {max(r.connections, default=0)}, total {sum(r.connections)}",
                max(r.connections, default=0) <= 1,
            ),
            (
                f"{r.name}: RSS after 2R ≤ after R + {margin:g} MB",
                f"{r.rss_2r:.1f} vs {r.rss_r:.1f}",
                r.rss_2r <= r.rss_r + margin,
            ),
            (f"{r.name}: no call failed", f"{r.failures}", r.failures == 0),
        ]
        targets += [{"target": t, "figure": f, "met": ok} for t, f, ok in rows]
    print("\n| target | figure | met |\n|---|---|---|")
    for row in targets:
        print(f"| {row['target']} | {row['figure']} | {check(row['met'])} |")
    return targets


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds")
    parser.add_argument("--processes", type=int, default=10, help="agent processes")
    parser.add_argument("--per-process", type=int, default=10, help="agents (ports) per process")
    parser.add_argument("--rounds", type=int, help="R: measured rounds (twice, for RSS)")
    parser.add_argument("--margin", type=float, default=4.0, help="MB of RSS growth allowed")
    parser.add_argument("--skip", default="", help="comma-separated: a2a,skillrack,delegate")
    parser.add_argument("--json", type=Path, help="also write every figure to this file")
    args = parser.parse_args()
    rounds = args.rounds or (4 if args.quick else 10)
    skip = {s.strip() for s in args.skip.split(",") if s.strip()}
    workdir = Path(tempfile.mkdtemp(prefix="skillrack-fanout-"))
    (workdir / "bench.toml").write_text(CONFIG)
    env = {**os.environ, "SKILLRACK_LOAD_PLUGINS": "skillrack-example-vendor"}
    env["PYTHONUNBUFFERED"] = "1"
    env.pop("OTEL_INSTRUMENTATION_A2A_SDK_ENABLED", None)
    began = time.monotonic()
    agents = Agents(args.processes, args.per_process, workdir, env)
    results: list[Figures] = []
    try:
        agents.wait_ready()
        print(
            f"fan-out benchmark: {len(agents.urls)} agents in {args.processes} processes, "
            f"up in {time.monotonic() - began:.1f}s; R = {rounds}; load average "
            f"{'/'.join(f'{x:.1f}' for x in os.getloadavg())}",
            flush=True,
        )
        from skillrack.client.advertisement import read_advertisement

        with urllib.request.urlopen(agents.urls[0] + "/.well-known/agent-card.json") as answer:
            card = json.load(answer)
        binding = read_advertisement(card).select(SKILL)
        request = {
            "skill": SKILL,
            "skill_version": binding.skill_version,
            "interface_digest": binding.interface_digest,
            "arguments": ARGUMENTS,
        }
        callers: list[tuple[str, Caller | Orchestrator]] = []
        try:
            for kind, name in (("a2a", "a2a-sdk"), ("skillrack", "SkillClient")):
                if kind not in skip:
                    caller = Caller(kind, env)
                    callers.append((name, caller))
                    caller.ask(op="setup", urls=agents.urls, request=request)
            if "delegate" not in skip:
                callers.append(("delegate", Orchestrator(agents, workdir, env)))
            results = measure(callers, agents, rounds)
        finally:
            for _, caller in callers:
                caller.close()
    finally:
        agents.stop()
    load = os.getloadavg()
    targets = report(results, args.margin) if any(r.name == "a2a-sdk" for r in results) else []
    print(
        f"\n{time.monotonic() - began:.0f}s; load average at the end "
        f"{'/'.join(f'{x:.1f}' for x in load)}"
    )
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "rounds": rounds,
                    "agents": len(agents.urls),
                    "load_average": load,
                    "callers": [r.to_json() for r in results],
                    "targets": targets,
                },
                indent=2,
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
