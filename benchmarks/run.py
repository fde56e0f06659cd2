"""skillrack against bare a2a-sdk, measured side by side in one run.

    python benchmarks/run.py            # the full run (about 20 minutes)
    python benchmarks/run.py --quick    # a couple of minutes, fewer and shorter rounds

Every server is a process of its own (uvicorn on 127.0.0.1, a free port, log
level warning, no access log), and so is the load generator (``loadgen.py``):
nothing is measured inside the process that serves.  Comparisons are
interleaved: each round measures both sides back to back, in alternating
order, and the figures reported are medians over the rounds, so that a noisy
neighbour (other processes on the machine) slows both sides alike.  Besides
requests per second and p50/p99 latency, each window records the server's own
CPU time per request (from ``/proc``), which other processes barely disturb.

The servers:

* ``skillrack``: ``skillrack serve`` with the example vendor plugin
  (``SKILLRACK_LOAD_PLUGINS=skillrack-example-vendor``), the in-memory store
  when ``--store`` exists (the bare agent has no other), and a configuration
  that only lifts the per-caller rate and concurrency limits, which a load
  generator would otherwise hit (600 requests per minute by default);
* ``bare``: ``bare_agent.py``, a2a-sdk's DefaultRequestHandler,
  InMemoryTaskStore and an executor returning the same two Artifacts through
  the same events, with no check at all, serving the very same Agent Card
  through a2a-sdk's own card route;
* ``skillrack-sqlite``: ``skillrack serve`` with its durable default store,
  and with ``--workers 2`` on it, when those options exist.

After the servers, the run measures what issue 19 names besides requests:
RSS over 10,000 tasks (the memory store unbounded, bounded at 1,000 tasks,
and SQLite), assembly of 500 skills (``assembly.py``) and the scale-out table
(``scaleout.py``: SQLite, PostgreSQL, two replicas, ``--workers 2``) and
the orchestrator fan-out (``fanout.py``: one client, 100 agents, against
a2a-sdk's own client); the last tables print every issue 19 and issue 34
item 2 target beside its figure.

a2a-sdk wraps its request path in OpenTelemetry decorators when OpenTelemetry
is importable (``OTEL_INSTRUMENTATION_A2A_SDK_ENABLED``, read at import).
Each side runs at its own default: ``skillrack serve`` switches a2a-sdk's
tracing off when no exporter is configured (``serve_defaults.py``), a bare
a2a-sdk agent leaves it on.  That is one of the choices the host makes better
than the default wiring, so it is part of the headline ratio; the row
*tracing off on both sides* sets the variable to false for the bare agent as
well and shows what is left without it.  Neither process inherits the
variable from the environment the benchmark runs in.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from skillrack.testing.serve import free_port

HERE = Path(__file__).resolve().parent
PYTHON = sys.executable
EXAMPLE_PLUGIN = "skillrack-example-vendor"
CLOCK_TICK = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")

CONFIG = """\
# Written by benchmarks/run.py: only the limits a load generator would hit.
[server]
rate_per_minute = 1000000000
max_concurrent_tasks = 1000000
"""


#: The memory store with a bound reached early in the memory part (issue 19 item 6).
MEMORY_BOUND = 1_000
BOUNDED_CONFIG = CONFIG + f"memory_max_tasks = {MEMORY_BOUND}\n"


def descendants(pid: int) -> list[int]:
    """``pid`` and every process below it (``--workers`` starts children)."""
    found = [pid]
    for tid in os.listdir(f"/proc/{pid}/task") if os.path.isdir(f"/proc/{pid}/task") else []:
        with contextlib.suppress(OSError):
            children = Path(f"/proc/{pid}/task/{tid}/children").read_text().split()
            for child in children:
                found.extend(descendants(int(child)))
    return found


def cpu_seconds(pid: int) -> float:
    total = 0
    for each in descendants(pid):
        with contextlib.suppress(OSError):
            fields = Path(f"/proc/{each}/stat").read_text().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / CLOCK_TICK


def rss_mb(pid: int) -> float:
    total = 0
    for each in descendants(pid):
        with contextlib.suppress(OSError):
            total += int(Path(f"/proc/{each}/statm").read_text().split()[1]) * PAGE
    return total / 2**20


@dataclass
class Server:
    name: str
    argv: list[str]
    cwd: Path
    env: dict[str, str]
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None
    log: Path | None = None

    def start(self) -> Server:
        self.log = self.cwd / f"{self.name}.log"
        argv = [arg.replace("{port}", str(self.port)) for arg in self.argv]
        with self.log.open("wb") as log:
            self.process = subprocess.Popen(
                argv,
                cwd=self.cwd,
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        return self

    def wait_ready(self, timeout: float = 120.0) -> None:
        assert self.process is not None
        deadline = time.monotonic() + timeout
        url = f"http://127.0.0.1:{self.port}/.well-known/agent-card.json"
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"{self.name} exited: {self.tail()}")
            with contextlib.suppress(OSError), urllib.request.urlopen(url, timeout=2) as answer:
                if answer.status == 200:
                    return
            time.sleep(0.2)
        raise RuntimeError(f"{self.name} did not come up: {self.tail()}")

    def tail(self) -> str:
        return self.log.read_text(errors="replace")[-2000:] if self.log else ""

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)  # the session started here
            self.process.wait(timeout=5)


class LoadGenerator:
    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [PYTHON, str(HERE / "loadgen.py")],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def run(self, server: Server, scenario: str, **options: Any) -> dict[str, Any]:
        assert self.process.stdin is not None and self.process.stdout is not None
        command = {"op": "run", "host": "127.0.0.1", "port": server.port, "scenario": scenario}
        command.update(options)
        cpu_before = cpu_seconds(server.pid)
        self.process.stdin.write(json.dumps(command) + "\n")
        self.process.stdin.flush()
        result: dict[str, Any] = json.loads(self.process.stdout.readline())
        cpu = cpu_seconds(server.pid) - cpu_before
        if not result.get("ok"):
            raise RuntimeError(
                f"{server.name} {scenario}: {result.get('first_error')}\n{server.tail()}"
            )
        # CPU over the whole window (warm-up included), per request answered in it.
        total = result["all_requests"]
        result["cpu_ms"] = cpu / total * 1e3 if total else float("nan")
        return result

    def close(self) -> None:
        assert self.process.stdin is not None
        with contextlib.suppress(BrokenPipeError):
            self.process.stdin.write(json.dumps({"op": "quit"}) + "\n")
            self.process.stdin.flush()
        self.process.wait(timeout=10)


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


@dataclass
class Comparison:
    """One scenario, two sides, interleaved rounds."""

    title: str
    a: str
    b: str
    target: float | None
    rounds: list[tuple[dict[str, Any], dict[str, Any]]] = field(default_factory=list)

    def ratios(self) -> list[float]:
        return [ra["rps"] / rb["rps"] for ra, rb in self.rounds]

    def side(self, index: int, key: str) -> float:
        return median([pair[index][key] for pair in self.rounds])

    def to_json(self) -> dict[str, Any]:
        return {
            "title": self.title,
            "a": self.a,
            "b": self.b,
            "target": self.target,
            "ratio_median": median(self.ratios()),
            "ratios": self.ratios(),
            "cpu_ratio": self.side(1, "cpu_ms") / self.side(0, "cpu_ms"),
            **{
                f"{label}_{key}": self.side(index, key)
                for index, label in ((0, "a"), (1, "b"))
                for key in ("rps", "p50_ms", "p99_ms", "cpu_ms")
            },
        }


def compare(
    load: LoadGenerator,
    title: str,
    a: list[Server],
    b: list[Server],
    scenario: str,
    *,
    rounds: int,
    seconds: float,
    warmup: float,
    concurrency: int = 1,
    target: float | None = None,
) -> Comparison:
    """Round r measures instance r mod K of each side, back to back.

    Each pair of instances is measured once in each order (a first, b first)
    when ``rounds`` is 2K.
    """
    instances = min(len(a), len(b))
    result = Comparison(title, label(a), label(b), target)
    for round_ in range(rounds):
        i = round_ % instances
        sides = [(0, a[i]), (1, b[i])]
        order = sides if (round_ // instances) % 2 == 0 else sides[::-1]
        pair: list[dict[str, Any]] = [{}, {}]
        for index, server in order:
            pair[index] = load.run(
                server, scenario, concurrency=concurrency, duration=seconds, warmup=warmup
            )
        result.rounds.append((pair[0], pair[1]))
        print(
            f"  {title} round {round_ + 1}/{rounds}: {a[i].name} {pair[0]['rps']:.0f}/s, "
            f"{b[i].name} {pair[1]['rps']:.0f}/s, ratio {pair[0]['rps'] / pair[1]['rps']:.3f}",
            flush=True,
        )
    return result


def label(group: list[Server]) -> str:
    return group[0].name.rsplit("#", 1)[0]


def serve_options() -> set[str]:
    """Which ``skillrack serve`` options this checkout has (``--store``, ``--workers``)."""
    text = subprocess.run(
        [PYTHON, "-m", "skillrack.cli.main", "serve", "--help"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return {option for option in ("--store", "--workers") if option in text}


def post_json(port: int, body: dict[str, Any]) -> Any:
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", "A2A-Version": "1.0"},
    )
    with urllib.request.urlopen(request, timeout=30) as answer:
        return json.load(answer)


def describe_results(skillrack: Server, skill_ids: list[str]) -> dict[str, Any]:
    """skillrack's own describe_skill results, for the bare agent to return as they are."""
    out = {}
    for skill_id in skill_ids:
        answer = post_json(
            skillrack.port,
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "SendMessage",
                "params": {
                    "message": {
                        "messageId": f"describe-{skill_id}",
                        "role": "ROLE_USER",
                        "parts": [
                            {
                                "data": {
                                    "skill": "describe_skill",
                                    "arguments": {"skill_id": skill_id},
                                }
                            }
                        ],
                    }
                },
            },
        )
        task = answer["result"]["task"]
        if task.get("artifacts"):  # a base-A2A skill (no interface) has nothing to describe
            out[skill_id] = task["artifacts"][0]["parts"][0]["data"]
    return out


def fetch_card(server: Server) -> Any:
    url = f"http://127.0.0.1:{server.port}/.well-known/agent-card.json"
    with urllib.request.urlopen(url, timeout=10) as answer:
        return json.load(answer)


@dataclass
class Settings:
    quick: bool
    instances: int
    rounds: int
    seconds: float
    warmup: float
    card_seconds: float
    concurrency_rounds: int
    memory_tasks: int


def memory_growth(
    load: LoadGenerator, server: Server, tasks: int, steps: int = 5
) -> dict[str, Any]:
    """RSS at start (after 20 tasks) and after every ``tasks / steps`` more completed tasks."""
    load.run(server, "invoke", concurrency=1, duration=0, max_requests=20)
    start = rss_mb(server.pid)
    samples = [(20, start)]
    done = 20
    began = time.monotonic()
    for _ in range(steps):
        load.run(server, "invoke", concurrency=8, duration=0, max_requests=tasks // steps)
        done += tasks // steps
        samples.append((done, rss_mb(server.pid)))
    end = samples[-1][1]
    return {
        "tasks": done,
        "rss_start_mb": start,
        "rss_end_mb": end,
        "kb_per_task": (end - start) * 1024 / (done - 20),
        "samples": samples,
        "seconds": time.monotonic() - began,
    }


def fmt(value: float, digits: int = 0) -> str:
    return f"{value:,.{digits}f}"


def main() -> int:
    parser = argparse.ArgumentParser(description="skillrack against bare a2a-sdk, side by side")
    parser.add_argument("--quick", action="store_true", help="fewer, shorter rounds (~2 min)")
    parser.add_argument("--instances", type=int, help="server processes per side")
    parser.add_argument("--rounds", type=int, help="interleaved rounds per comparison")
    parser.add_argument("--seconds", type=float, help="seconds per measurement window")
    parser.add_argument("--json", type=Path, help="also write every figure to this file")
    parser.add_argument(
        "--skip",
        default="",
        help="comma-separated parts to skip: invoke,describe,card,otel,durable,concurrency,"
        "workers,memory,inprocess,assembly,scaleout,streams,startup,fanout",
    )
    args = parser.parse_args()
    instances = args.instances or (2 if args.quick else 4)
    settings = Settings(
        quick=args.quick,
        instances=instances,
        rounds=args.rounds or 2 * instances,
        seconds=args.seconds or (1.5 if args.quick else 3.0),
        warmup=0.3 if args.quick else 0.5,
        card_seconds=0.8 if args.quick else 1.5,
        concurrency_rounds=1 if args.quick else 2,
        memory_tasks=2_000 if args.quick else 10_000,
    )
    skip = {part.strip() for part in args.skip.split(",") if part.strip()}
    options = serve_options()
    workdir = Path(tempfile.mkdtemp(prefix="skillrack-bench-"))
    (workdir / "bench.toml").write_text(CONFIG)
    (workdir / "bounded.toml").write_text(BOUNDED_CONFIG)
    env = {
        **os.environ,
        "SKILLRACK_LOAD_PLUGINS": EXAMPLE_PLUGIN,
        "PYTHONUNBUFFERED": "1",
    }
    env.pop("OTEL_INSTRUMENTATION_A2A_SDK_ENABLED", None)  # each side at its own default
    untraced_env = {**env, "OTEL_INSTRUMENTATION_A2A_SDK_ENABLED": "false"}

    def skillrack(name: str, *extra: str, config: str = "bench.toml") -> Server:
        argv = [PYTHON, "-m", "skillrack", "serve", "--host", "127.0.0.1", "--port", "{port}"]
        argv += ["--log-level", "warning", "--config", config, *extra]
        directory = workdir / name.replace("#", "-").replace(" ", "-")
        directory.mkdir()
        shutil.copy(workdir / config, directory / config)
        return Server(name, argv, directory, env)

    def bare(name: str, environment: dict[str, str]) -> Server:
        argv = [PYTHON, str(HERE / "bare_agent.py"), "--port", "{port}"]
        argv += ["--card", "card.json", "--describe", "describe.json"]
        return Server(name, argv, workdir, environment)

    memory_store = ("--store", "memory") if "--store" in options else ()
    report: dict[str, Any] = {
        "settings": settings.__dict__,
        "serve_options": sorted(options),
        "python": sys.version.split()[0],
        "cpus": os.cpu_count(),
        "notes": [],
        # The machine may be shared: its load explains the figures (1-minute averages).
        "load_average": {"before": os.getloadavg()[0]},
    }
    running: list[Server] = []

    def start(group: list[Server]) -> list[Server]:
        for server in group:
            running.append(server.start())
        return group

    load = LoadGenerator()
    started = time.monotonic()
    try:
        print(f"skillrack benchmark ({'quick' if settings.quick else 'full'}), in {workdir}")
        print(f"  skillrack serve options found: {', '.join(sorted(options)) or 'none'}")
        k = settings.instances
        sk = start([skillrack(f"skillrack#{i}", *memory_store) for i in range(k)])
        sk[0].wait_ready()
        card = fetch_card(sk[0])
        (workdir / "card.json").write_text(json.dumps(card))
        skill_ids = [s["id"] for s in card["skills"] if s["id"] != "describe_skill"]
        (workdir / "describe.json").write_text(json.dumps(describe_results(sk[0], skill_ids)))
        bares = start([bare(f"bare#{i}", env) for i in range(k)])
        untraced: list[Server] = []
        if "otel" not in skip:
            untraced = start([bare(f"bare-untraced#{i}", untraced_env) for i in range(k)])
        durable: list[Server] = []
        workers: Server | None = None
        if "--store" in options:
            if not {"durable", "concurrency", "workers"} <= skip:
                durable = start([skillrack(f"skillrack-sqlite#{i}") for i in range(k)])
            if "--workers" in options and "workers" not in skip:
                workers = start([skillrack("skillrack-sqlite-w2", "--workers", "2")])[0]
        else:
            report["notes"].append("skillrack serve has no --store yet: durable store skipped")
        for server in running:
            server.wait_ready()
        print(f"  {len(running)} servers up in {time.monotonic() - started:.1f}s", flush=True)
        for server in running:  # every code path once, and a few hundred tasks in each store
            load.run(server, "invoke", concurrency=1, duration=0, max_requests=100)
            load.run(server, "describe", concurrency=1, duration=0, max_requests=20)

        comparisons: list[Comparison] = []
        window = {"rounds": settings.rounds, "seconds": settings.seconds, "warmup": settings.warmup}
        if "invoke" not in skip:
            comparisons.append(compare(load, "invoke", sk, bares, "invoke", target=1.0, **window))
        if "describe" not in skip:
            comparisons.append(
                compare(load, "describe_skill", sk, bares, "describe", target=1.0, **window)
            )
        if "card" not in skip:
            card_window = {**window, "seconds": settings.card_seconds, "warmup": 0.2}
            comparisons.append(
                compare(load, "agent card", sk, bares, "card", target=1.5, **card_window)
            )
        if untraced:
            comparisons.append(
                compare(load, "invoke, tracing off on both sides", sk, untraced, "invoke", **window)
            )
            comparisons.append(
                compare(load, "a2a-sdk tracing wrappers", bares, untraced, "invoke", **window)
            )
        if durable and "durable" not in skip:
            comparisons.append(
                compare(load, "durable store", durable, sk, "invoke", target=0.5, **window)
            )
        report["comparisons"] = [c.to_json() for c in comparisons]

        if "concurrency" not in skip:
            groups = [sk, bares, durable, [workers] if workers else []]
            table: list[dict[str, Any]] = []
            for clients in (1, 8, 32):
                row: dict[str, Any] = {"clients": clients}
                for group in groups:
                    if not group:
                        continue
                    runs = [
                        load.run(
                            group[n % len(group)],
                            "invoke",
                            concurrency=clients,
                            duration=settings.seconds,
                            warmup=settings.warmup,
                        )
                        for n in range(settings.concurrency_rounds)
                    ]
                    row[label(group)] = {
                        key: median([r[key] for r in runs]) for key in ("rps", "p50_ms", "p99_ms")
                    }
                table.append(row)
                print(
                    f"  concurrency {clients}: "
                    + ", ".join(
                        f"{k} {v['rps']:.0f}/s" for k, v in row.items() if isinstance(v, dict)
                    ),
                    flush=True,
                )
            report["concurrency"] = table
            if workers is None:
                report["notes"].append("--workers 2 not measured (no --workers, or skipped)")

        for server in running:
            server.stop()
        running.clear()

        if "memory" not in skip:
            memory: dict[str, Any] = {}
            stores = [("memory", memory_store, "bench.toml")]
            if "--store" in options:
                bounded = f"memory, memory_max_tasks = {MEMORY_BOUND:,}"
                stores.append((bounded, memory_store, "bounded.toml"))
                stores.append(("sqlite (default)", (), "bench.toml"))
            for index, (name, extra, config) in enumerate(stores):
                server = start([skillrack(f"rss-{index}", *extra, config=config)])[0]
                server.wait_ready()
                memory[name] = growth = memory_growth(load, server, settings.memory_tasks)
                print(
                    f"  memory ({name}): {growth['rss_start_mb']:.0f} MB at start, "
                    f"{growth['rss_end_mb']:.0f} MB after {growth['tasks']:,} tasks",
                    flush=True,
                )
                server.stop()
                running.remove(server)
            report["memory"] = memory

        if "inprocess" not in skip:
            print("  in-process: record validation and assembly ...", flush=True)
            argv = [PYTHON, str(HERE / "inprocess.py")] + (["--quick"] if settings.quick else [])
            report["inprocess"] = json.loads(
                subprocess.run(argv, capture_output=True, text=True, check=True, env=env).stdout
            )

        if "assembly" not in skip:  # issue 19 item 5, beside jsonschema's own checks
            print("  assembly of 500 skills, shared and distinct schemas ...", flush=True)
            out = workdir / "assembly.json"
            argv = [PYTHON, str(HERE / "assembly.py"), "--json", str(out)]
            argv += ["--rounds", "1" if settings.quick else "3"]
            subprocess.run(argv, check=True, env=env, stdout=subprocess.DEVNULL)
            report["assembly"] = json.loads(out.read_text())

        if "startup" not in skip:  # issue 34 item 4: skillrack serve's start, startup.py's table
            print("  start of skillrack serve: plain, --grpc-port, OTel exporter ...", flush=True)
            out = workdir / "startup.json"
            argv = [PYTHON, str(HERE / "startup.py"), "--only", "serve", "--json", str(out)]
            argv += ["--rounds", "5" if settings.quick else "15"]
            subprocess.run(argv, check=True, env=env)
            report["startup"] = json.loads(out.read_text())

        if "scaleout" not in skip:  # issue 19 items 3, 4 and 7: scaleout.py's own table
            print("  scale-out: memory, SQLite, PostgreSQL, replicas, --workers 2 ...", flush=True)
            out = workdir / "scaleout.json"
            argv = [PYTHON, str(HERE / "scaleout.py"), "--json", str(out)]
            argv += ["--quick"] if settings.quick else []
            subprocess.run(argv, check=True, env=env)
            report["scaleout"] = json.loads(out.read_text())

        if "streams" not in skip:  # issue 34 item 1: streams.py's own table
            print("  open streams: skillrack and bare a2a-sdk ...", flush=True)
            out = workdir / "streams.json"
            argv = [PYTHON, str(HERE / "streams.py"), "--json", str(out)]
            argv += ["--quick"] if settings.quick else []
            subprocess.run(argv, check=True, env=env)
            report["streams"] = json.loads(out.read_text())

        if "fanout" not in skip:  # issue 34 item 2: fanout.py's own tables
            print("  fan-out: one client, 100 agents, against a2a-sdk's client ...", flush=True)
            out = workdir / "fanout.json"
            argv = [PYTHON, str(HERE / "fanout.py"), "--json", str(out)]
            argv += ["--quick"] if settings.quick else []
            subprocess.run(argv, check=True, env=env)
            report["fanout"] = json.loads(out.read_text())
    finally:
        for server in running:
            server.stop()
        load.close()
    report["seconds"] = time.monotonic() - started
    report["load_average"]["after"] = os.getloadavg()[0]
    print_report(report)
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))
    shutil.rmtree(workdir, ignore_errors=True)
    return 0


#: Issue 19's targets that a comparison above measures: (comparison title, target, stretch).
ISSUE_19_TARGETS = {
    "invoke, tracing off on both sides": ("1. invocation, like for like (tracing off)", 1.3, 2.0),
    "describe_skill": ("2. describe_skill", 2.0, None),
}

#: Issue 34 item 3: an invocation like for like at twice a bare agent, by server CPU.
ISSUE_34_INVOCATION = ("invoke, tracing off on both sides", 2.0)

#: Issue 19 item 6: RSS growth per task, past the bound (memory) or the first 2,000 tasks.
FLAT_KB_PER_TASK = 0.5


def growth_after(samples: list[list[float]], done: float) -> float | None:
    """kB of RSS per task from the first sample at ``done`` tasks or more to the last."""
    later = [sample for sample in samples if sample[0] >= done]
    if len(later) < 2 or later[-1][0] == later[0][0]:
        return None
    return (later[-1][1] - later[0][1]) * 1024 / (later[-1][0] - later[0][0])


def target_rows(report: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    """(target, measured, bound, verdict) for every issue 19 target this run measured."""
    rows: list[tuple[str, str, str, str]] = []
    for c in report.get("comparisons", []):
        if c["title"] not in ISSUE_19_TARGETS:
            continue
        name, target, stretch = ISSUE_19_TARGETS[c["title"]]
        ratio = c["ratio_median"]
        verdict = "met" if ratio >= target else "NOT met"
        if stretch is not None:
            verdict += f", stretch {stretch:g}x {'met' if ratio >= stretch else 'not met'}"
        measured = f"{c['a']} / {c['b']}: {ratio:.2f} req/s ({c['cpu_ratio']:.2f} CPU)"
        rows.append((name, measured, f">= {target:g}x", verdict))
    for c in report.get("comparisons", []):
        title, twice = ISSUE_34_INVOCATION
        if c["title"] == title:
            rows.append(
                ("issue 34, 3. invocation like for like, by server CPU",
                 f"{c['cpu_ratio']:.2f} CPU ({c['ratio_median']:.2f} req/s)",
                 f">= {twice:g}x", "met" if c["cpu_ratio"] >= twice else "NOT met")
            )  # fmt: skip
    scaleout = report.get("scaleout")
    for t in scaleout["targets"] if scaleout else []:
        counts = ", ".join(f"{r:.2f}" for r in t["ratios"])
        sign = "<=" if t["at_most"] else ">="
        rows.append(
            (f"{t['item']}. {t['name']}", f"{t['ratio']:.2f}x (1/8/32 clients: {counts})",
             f"{sign} {t['target']:g}x", "met" if t["met"] else "NOT met")
        )  # fmt: skip
    assembly = report.get("assembly")
    if assembly:
        for variant in ("shared", "distinct"):
            figures = assembly[variant]
            seconds = figures["skillrack"]["cpu_s"] * 500 / assembly["skills"]
            rows.append(
                (f"5. assembly of 500 skills, {variant} schema values", f"{seconds:.2f} s CPU "
                 f"({figures['cpu_ratio']:.2f} of jsonschema's own checks)", "< 2 s",
                 "met" if seconds < 2 else "NOT met")
            )  # fmt: skip
    for name, m in report.get("memory", {}).items():
        if name == "memory":
            continue  # its bound (10,000) is reached only at the end of the run
        start = 2 * MEMORY_BOUND if "max_tasks" in name else 2_000
        growth = growth_after(m["samples"], start)
        if growth is not None:
            rows.append(
                (f"6. RSS flat over {m['tasks']:,} tasks: {name}",
                 f"{growth:.2f} kB per task after {start:,} tasks "
                 f"({m['rss_start_mb']:.0f} -> {m['rss_end_mb']:.0f} MB)",
                 f"<= {FLAT_KB_PER_TASK:g} kB", "met" if growth <= FLAT_KB_PER_TASK else "NOT met")
            )  # fmt: skip
    if scaleout:
        rows.append(("7. scale-out benchmark (scaleout.py)", "run above", "-", "met"))
    startup = report.get("startup")
    for row in startup["results"] if startup else []:  # issue 34 item 4 (startup.py)
        if row["target_s"] is None:
            continue
        load = startup["load_average_1min"]["before"]
        rows.append(
            (f"issue 34, 4. fast start: {row['command']}",
             f"{row['median_s']:.2f} s median, {row['min_s']:.2f} s min, "
             f"{row['cpu_median_s']:.2f} s CPU (load average {load:.1f})",
             f"< {row['target_s']:g} s", row["verdict"])
        )  # fmt: skip
    return rows


def print_targets(report: dict[str, Any]) -> None:
    """Each issue 19 and issue 34 target beside the figure measured for it in this run."""
    streams = report.get("streams")
    if streams:  # streams.py's targets (issue 34 item 1)
        print("\n| issue 34 target | measured | target | verdict |\n|---|---|---|---|")
        for t in streams["targets"]:
            verdict = "met" if t["met"] else "NOT met"
            print(f"| {t['name']} | {t['measured']} | {t['target']} | {verdict} |")
    fanout = report.get("fanout", {}).get("targets", [])
    if fanout:
        print("\n| issue 34 item 2 target (fanout.py) | measured | verdict |\n|---|---|---|")
        for t in fanout:
            print(f"| {t['target']} | {t['figure']} | {'met' if t['met'] else 'NOT met'} |")
    rows = target_rows(report)
    if not rows:
        return
    print()
    print("| issue 19 target | measured | target | verdict |")
    print("|---|---|---|---|")
    for row in rows:
        print("| " + " | ".join(row) + " |")


def side(c: dict[str, Any], x: str) -> str:
    rps, p50, p99, cpu = (c[f"{x}_{key}"] for key in ("rps", "p50_ms", "p99_ms", "cpu_ms"))
    return f"{fmt(rps)}, {p50:.2f}/{p99:.2f}, {cpu:.2f}"


def print_report(report: dict[str, Any]) -> None:
    print()
    load = report.get("load_average", {})
    print(
        f"== results ({report['seconds']:.0f}s, {report['cpus']} CPUs, Python {report['python']}, "
        f"load average {load.get('before', float('nan')):.1f} before, "
        f"{load.get('after', float('nan')):.1f} after)"
    )
    if report.get("comparisons"):
        print()
        print(
            "| comparison | ratio (median) | target | a: req/s, p50/p99 ms, CPU ms/req | b: ... |"
        )
        print("|---|---|---|---|---|")
        for c in report["comparisons"]:
            verdict = ""
            if c["target"] is not None:
                verdict = " ✓" if c["ratio_median"] >= c["target"] else " ✗"
            print(
                f"| {c['title']}: {c['a']} / {c['b']} | {c['ratio_median']:.3f}{verdict} "
                f"(rounds {', '.join(f'{r:.2f}' for r in c['ratios'])}; CPU {c['cpu_ratio']:.3f}) "
                f"| {c['target'] if c['target'] is not None else '-'} "
                f"| {side(c, 'a')} | {side(c, 'b')} |"
            )
        print("  (ratio: a's requests per second over b's; CPU: b's CPU per request over a's)")
    if report.get("concurrency"):
        names = [k for k in report["concurrency"][0] if k != "clients"]
        print()
        print("| clients | " + " | ".join(f"{n} req/s (p50/p99 ms)" for n in names) + " |")
        print("|---" * (len(names) + 1) + "|")
        for row in report["concurrency"]:
            print(
                f"| {row['clients']} | "
                + " | ".join(
                    f"{fmt(row[n]['rps'])} ({row[n]['p50_ms']:.1f}/{row[n]['p99_ms']:.1f})"
                    for n in names
                )
                + " |"
            )
    if report.get("memory"):
        print()
        print("| store | RSS at start | RSS after | tasks | growth per task |")
        print("|---|---|---|---|---|")
        for name, m in report["memory"].items():
            print(
                f"| {name} | {m['rss_start_mb']:.0f} MB | {m['rss_end_mb']:.0f} MB "
                f"| {m['tasks']:,} | {m['kb_per_task']:.2f} kB |"
            )
    if report.get("inprocess"):
        print()
        print(
            "| supporting record | JCS bytes | validate ms | jsonschema alone ms | "
            "check+validate+Data Part ms |"
        )
        print("|---|---|---|---|---|")
        for r in report["inprocess"]["record_validation"]:
            print(
                f"| {r['observations']:,} observations | {fmt(r['bytes'])} | "
                f"{r['validate_ms']:.1f} | {r['jsonschema_only_ms']:.1f} | "
                f"{r['publish_path_ms']:.1f} |"
            )
        print()
        print("| plugins | skills | assembly s | ms per skill |")
        print("|---|---|---|---|")
        for r in report["inprocess"]["assembly"]:
            print(
                f"| {r['plugins']} | {r['skills']} | {r['seconds']:.2f} | {r['ms_per_skill']:.1f} |"
            )
    print_targets(report)
    for note in report["notes"]:
        print(f"note: {note}")


if __name__ == "__main__":
    sys.exit(main())
