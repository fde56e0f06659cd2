"""RSS of ``skillrack serve --store memory`` over 10,000 invocations, bounded and unbounded.

    python benchmarks/memory_store.py                 # 1 minute idle, 6 on a busy machine
    python benchmarks/memory_store.py --tasks 20000 --bound 2000 --json rss.json

Two servers, one after the other, each a fresh ``skillrack serve --store
memory`` with the example vendor plugin and ``run.py``'s load generator (8
keep-alive connections, every answer checked):

* *bounded*: ``[server] memory_max_tasks = BOUND`` (1,000 by default, so that
  the bound is reached early in the run) and ``memory_task_ttl = 0``;
* *unbounded*: ``memory_max_tasks = 0`` and ``memory_task_ttl = 0``, which is
  a2a-sdk's ``InMemoryTaskStore`` as it was before the bound.

The server's RSS (from ``/proc``) is read after 20 warm-up tasks and after
1,000, 5,000 and 10,000 completed invocations.  Not a test: the figures
depend on the machine and what else runs on it.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from run import CONFIG, EXAMPLE_PLUGIN, PYTHON, LoadGenerator, Server, rss_mb

WARMUP = 20


def measure(
    load: LoadGenerator, server: Server, checkpoints: list[int], concurrency: int
) -> list[tuple[int, float]]:
    """RSS after the warm-up, then at each checkpoint (completed invocations)."""
    load.run(server, "invoke", concurrency=1, duration=0, max_requests=WARMUP)
    samples = [(0, rss_mb(server.pid))]
    done = 0
    for checkpoint in checkpoints:
        load.run(
            server, "invoke", concurrency=concurrency, duration=0, max_requests=checkpoint - done
        )
        done = checkpoint
        samples.append((done, rss_mb(server.pid)))
    return samples


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=10_000, help="invocations per server")
    parser.add_argument("--bound", type=int, default=1_000, help="memory_max_tasks when bounded")
    parser.add_argument("--concurrency", type=int, default=8, help="connections")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args()
    checkpoints = sorted({n for n in (1_000, 5_000, args.tasks) if n <= args.tasks})
    workdir = Path(tempfile.mkdtemp(prefix="skillrack-memory-"))
    env = {**os.environ, "SKILLRACK_LOAD_PLUGINS": EXAMPLE_PLUGIN, "PYTHONUNBUFFERED": "1"}
    setups = {
        f"bounded (memory_max_tasks = {args.bound})": f"memory_max_tasks = {args.bound}\n",
        "unbounded (memory_max_tasks = 0)": "memory_max_tasks = 0\n",
    }
    report: dict[str, Any] = {"tasks": args.tasks, "concurrency": args.concurrency}
    load = LoadGenerator()
    try:
        for index, (name, limit) in enumerate(setups.items()):
            directory = workdir / f"server-{index}"
            directory.mkdir()
            (directory / "bench.toml").write_text(CONFIG + limit + "memory_task_ttl = 0\n")
            argv = [PYTHON, "-m", "skillrack", "serve", "--host", "127.0.0.1", "--port", "{port}"]
            argv += ["--log-level", "warning", "--config", "bench.toml", "--store", "memory"]
            server = Server(f"rss-{index}", argv, directory, env).start()
            try:
                server.wait_ready()
                began = time.monotonic()
                samples = measure(load, server, checkpoints, args.concurrency)
                seconds = time.monotonic() - began
            finally:
                server.stop()
            report[name] = {"samples": samples, "seconds": seconds}
            shown = ", ".join(f"{n:,}: {mb:.0f} MB" for n, mb in samples)
            print(f"{name}: {shown} ({seconds:.0f} s)", flush=True)
    finally:
        load.close()
        shutil.rmtree(workdir, ignore_errors=True)
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
