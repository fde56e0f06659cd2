"""Instructions per request, skillrack beside the bare a2a-sdk agent, driven in-process.

Wall-clock figures on a shared machine move with whatever else runs; the
number of instructions a request executes does not.  This script drives
``skillrack serve``'s app (the example vendor plugin, ``--store memory``, the
limits of ``run.py``'s configuration, tracing as ``skillrack serve`` sets it)
and ``bare_agent.py``'s app with the same prebuilt JSON-RPC ``SendMessage``
bodies as ``loadgen.py``, straight through ASGI (no sockets, no HTTP parser:
what is left is the apps' own work), and counts instructions under valgrind's
callgrind, with instrumentation switched on (``callgrind_control``) only
while the counted requests run, after a warm-up: start-up, imports and
shutdown are not counted, and the count divided by N is the cost of one
request.

    python benchmarks/instructions.py                      # both sides, invoke and describe
    python benchmarks/instructions.py --requests 100 --scenario invoke
    python benchmarks/instructions.py --profile skillrack  # cProfile of 2,000 invocations
    python benchmarks/instructions.py --drive skillrack --requests 50   # one side, no valgrind

``--bare-traced`` runs the bare agent at a2a-sdk's default (its tracing
wrappers on); by default both sides run with them off, like for like.
Needs ``valgrind`` for the counts; ``--profile`` and ``--drive`` do not.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import os
import pstats
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from loadgen import EXTENSION_URI, SCENARIOS  # noqa: E402

CONFIG = """\
[server]
rate_per_minute = 1000000000
max_concurrent_tasks = 1000000
store = "memory"
"""
HOST = "127.0.0.1:9000"
MARK = b"@@MID@@"


def _scope(body: bytes) -> dict[str, Any]:
    return {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/",
        "raw_path": b"/",
        "root_path": "",
        "query_string": b"",
        "server": ("127.0.0.1", 9000),
        "client": ("127.0.0.1", 40000),
        "headers": [
            (b"host", HOST.encode()),
            (b"accept", b"application/json"),
            (b"a2a-version", b"1.0"),
            (b"a2a-extensions", EXTENSION_URI.encode()),
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
        ],
    }


def skillrack_app(workdir: Path) -> Any:
    from skillrack.serve.process import default_tracing

    default_tracing(os.environ)  # before a2a-sdk is imported, as skillrack serve does
    from skillrack.host.config import load_config
    from skillrack.host.startup import build_host
    from skillrack.serve.server import build_server, own_process

    (workdir / "bench.toml").write_text(CONFIG)
    config = load_config(workdir / "bench.toml")
    host = build_host(config, listen_host="127.0.0.1", distributions=["skillrack-example-vendor"])
    app = build_server(host.registry, config, f"http://{HOST}", listen_host="127.0.0.1")
    own_process()  # a2a-sdk's queues and span wrappers as skillrack serve leaves them
    return app


def bare_app(traced: bool) -> Any:
    if not traced:
        os.environ["OTEL_INSTRUMENTATION_A2A_SDK_ENABLED"] = "false"
    from bare_agent import build_server
    from google.protobuf import json_format

    from skillrack.host.config import Config
    from skillrack.host.startup import build_host
    from skillrack.serve.bindings.card import build_card
    from skillrack.serve.execution.describe import describe_payloads

    # skillrack's card and describe_skill answers, prebuilt (as run.py gives them).
    host = build_host(Config(), distributions=["skillrack-example-vendor"])
    card = build_card(host.registry, Config(), f"http://{HOST}", None)
    describe = {
        skill_id: json_format.MessageToDict(part.data)["result"]
        for skill_id, part in describe_payloads(host.registry).items()
        if not isinstance(part, Exception)
    }
    return build_server(card, describe)


def _receiver(body: bytes) -> Any:
    delivered = False

    async def receive() -> dict[str, Any]:
        nonlocal delivered
        if delivered:
            await asyncio.sleep(3600)
        delivered = True
        return {"type": "http.request", "body": body, "more_body": False}

    return receive


def sent_to(sent: list[bytes]) -> Any:
    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.body":
            sent.append(message.get("body", b""))

    return send


async def drive(
    app: Any, scenario: str, warmup: int, requests: int, warm: Any = None, done: Any = None
) -> None:
    template = SCENARIOS[scenario][2]
    marker = SCENARIOS[scenario][3]
    assert template is not None
    before, after = template.encode().split(MARK)
    async with app.router.lifespan_context(app) as state:
        for n in range(warmup + requests):
            if n == warmup and warm is not None:
                warm()
            body = before + b"m-%d" % n + after
            scope = _scope(body)
            scope["state"] = dict(state or {})
            sent: list[bytes] = []
            await app(scope, _receiver(body), sent_to(sent))
            answer = b"".join(sent)
            if marker not in answer:
                raise SystemExit(f"request {n}: unexpected answer {answer[:300]!r}")
        if done is not None:
            done()


def build(side: str, workdir: Path, bare_traced: bool) -> Any:
    return skillrack_app(workdir) if side == "skillrack" else bare_app(bare_traced)


def run_one(args: argparse.Namespace) -> None:
    import gc
    import time

    workdir = Path(tempfile.mkdtemp(prefix="skillrack-instr-"))
    app = build(args.drive, workdir, args.bare_traced)
    if args.drive == "skillrack":
        gc.collect()
        gc.freeze()  # skillrack serve does (serve/process.py)
    marks: list[float] = []

    def toggle(state: str) -> None:
        # Instrumentation on for the measured requests only (vgdb reaches this process
        # while it waits for callgrind_control): start-up and shutdown are not counted.
        if args.toggle:
            subprocess.run(
                ["callgrind_control", "-i", state, str(os.getpid())],
                check=True,
                capture_output=True,
            )

    def warm() -> None:
        marks.append(time.process_time())
        toggle("on")

    asyncio.run(drive(app, args.scenario, args.warmup, args.requests, warm, lambda: toggle("off")))
    if args.cpu:
        per = (time.process_time() - marks[0]) / args.requests
        print(f"{args.drive} {args.scenario}: {per * 1e3:.3f} ms CPU per request", flush=True)


def profile(args: argparse.Namespace) -> None:
    import gc

    workdir = Path(tempfile.mkdtemp(prefix="skillrack-instr-"))
    app = build(args.profile, workdir, args.bare_traced)
    gc.collect()
    gc.freeze()
    profiler = cProfile.Profile()
    asyncio.run(drive(app, args.scenario, args.warmup, args.requests, profiler.enable))
    profiler.disable()
    stats = pstats.Stats(profiler).sort_stats(args.sort)
    stats.print_stats(args.top)


def callgrind(side: str, scenario: str, warmup: int, requests: int, traced: bool) -> float:
    """Instructions per request of ``side``, counted only while the requests run."""
    with tempfile.TemporaryDirectory() as out:
        argv = [
            "valgrind",
            "--tool=callgrind",
            "--instr-atstart=no",
            f"--callgrind-out-file={out}/cg.out",
            sys.executable,
            __file__,
            "--drive",
            side,
            "--scenario",
            scenario,
            "--warmup",
            str(warmup),
            "--requests",
            str(requests),
            "--toggle",
        ]
        if traced:
            argv.append("--bare-traced")
        env = {**os.environ, "PYTHONHASHSEED": "0"}
        done = subprocess.run(argv, capture_output=True, text=True, env=env)
        if done.returncode != 0:
            raise SystemExit(done.stdout[-2000:] + done.stderr[-4000:])
        found = re.search(r"Collected : (\d+)", done.stderr)
        assert found, done.stderr[-2000:]
        return int(found.group(1)) / requests


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scenario", choices=["invoke", "describe"], action="append")
    parser.add_argument("--requests", type=int, default=100, help="requests counted per side")
    parser.add_argument("--warmup", type=int, default=30)
    parser.add_argument("--bare-traced", action="store_true", help="a2a-sdk's tracing on (bare)")
    parser.add_argument("--side", choices=["skillrack", "bare"], action="append")
    parser.add_argument("--drive", choices=["skillrack", "bare"], help=argparse.SUPPRESS)
    parser.add_argument("--profile", choices=["skillrack", "bare"])
    parser.add_argument("--sort", default="tottime")
    parser.add_argument("--top", type=int, default=40)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--cpu", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--toggle", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.drive:
        args.scenario = (args.scenario or ["invoke"])[0]
        run_one(args)
        return
    if args.profile:
        args.scenario = (args.scenario or ["invoke"])[0]
        args.requests = args.requests if args.requests != 100 else 2000
        profile(args)
        return
    results: dict[str, Any] = {}
    for scenario in args.scenario or ["invoke", "describe"]:
        row = {}
        for side in args.side or ["skillrack", "bare"]:
            row[side] = callgrind(side, scenario, args.warmup, args.requests, args.bare_traced)
            print(f"{scenario:9} {side:9} {row[side] / 1e6:7.3f} M instructions per request")
        if len(row) == 2:
            ratio = row["skillrack"] / row["bare"]
            print(f"{scenario:9} skillrack / bare: {ratio:.3f} (instructions; lower is better)")
        results[scenario] = row
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
