"""Scale-out, measured side by side: one process on each store, two replicas, ``--workers 2``.

    python benchmarks/scaleout.py                 # 3 interleaved rounds, 1/8/32 clients
    python benchmarks/scaleout.py --quick         # 1 round, shorter windows
    python benchmarks/scaleout.py --pg postgresql+asyncpg://postgres@127.0.0.1:5432/test

The setups (issue 19's table), each ``skillrack serve`` with the example
vendor plugin and only the rate and concurrency limits lifted:

* ``memory``: one process, ``--store memory``;
* ``sqlite``: one process on its SQLite file (the default store);
* ``sqlite-w2``: ``--workers 2`` on a SQLite file (cluster mode);
* ``pg``: one process on PostgreSQL (cluster mode);
* ``pg-2rep``: two replicas on the same PostgreSQL database, the clients
  split between them (two load generators, one per replica);
* ``pg-w2``: ``--workers 2`` on PostgreSQL.

PostgreSQL is the machine's (``--pg``, default the test database of
``tests/helpers/postgres.py``); each run creates a database of its own and
drops it.  For every setup and client count the script prints requests per
second and the server's CPU time per request (every process of the setup,
from ``/proc``; with PostgreSQL also the CPU of every ``postgres`` process on
the machine in the window, which other users of that server inflate).  The
machine is shared: CPU per request is the robust figure, req/s the noisy one.
Rounds are interleaved (every setup once per round) and the medians kept.

The targets, printed beside their figures (medians over the client counts,
and each client count's ratio): PostgreSQL CPU per request at most 2x one
SQLite process; two replicas at least one replica's req/s; ``--workers 2``
at least one worker's req/s on the same store.  "Never slower" is read as a
median of at least 1 with no client count below :data:`NOISE` (0.95), the
spread two runs of one setup show on a shared 2-CPU machine.  ``--json``
writes the table and the targets; ``run.py`` runs this script and prints
its targets with the others.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import statistics
import sys
import tempfile
import threading
import uuid
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from run import (  # noqa: E402  (benchmarks/ is not a package)
    CLOCK_TICK,
    CONFIG,
    EXAMPLE_PLUGIN,
    PYTHON,
    LoadGenerator,
    Server,
    cpu_seconds,
)

DEFAULT_PG = "postgresql+asyncpg://postgres@127.0.0.1:5432/test"


def postgres_cpu() -> float:
    """CPU seconds of every ``postgres`` process on the machine (its backends serve us)."""
    total = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError):
            text = stat.read_text()
            if "(postgres)" not in text:
                continue
            fields = text.rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
    return total / CLOCK_TICK


async def _admin(url: str, statement: str) -> None:
    import asyncpg  # type: ignore[import-untyped]

    connection = await asyncpg.connect(url.replace("postgresql+asyncpg://", "postgresql://"))
    try:
        await connection.execute(statement)
    finally:
        await connection.close()


class Setup:
    """One or more servers measured together; the clients are split evenly between them."""

    def __init__(self, name: str, servers: list[Server], uses_pg: bool) -> None:
        self.name = name
        self.servers = servers
        self.uses_pg = uses_pg
        self.loads = [LoadGenerator() for _ in servers]

    def measure(self, clients: int, seconds: float, warmup: float) -> dict[str, float]:
        shares = [clients // len(self.servers)] * len(self.servers)
        shares[0] += clients - sum(shares)
        results: list[dict[str, Any]] = [{} for _ in self.servers]
        cpu_before = sum(cpu_seconds(server.pid) for server in self.servers)
        pg_before = postgres_cpu() if self.uses_pg else 0.0

        def drive(index: int) -> None:
            results[index] = self.loads[index].run(
                self.servers[index],
                "invoke",
                concurrency=max(1, shares[index]),
                duration=seconds,
                warmup=warmup,
            )

        threads = [threading.Thread(target=drive, args=(i,)) for i in range(len(self.servers))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        cpu = sum(cpu_seconds(server.pid) for server in self.servers) - cpu_before
        pg = postgres_cpu() - pg_before if self.uses_pg else 0.0
        answered = sum(result["all_requests"] for result in results)
        return {
            "rps": sum(result["rps"] for result in results),
            "cpu_ms": cpu / answered * 1e3 if answered else float("nan"),
            "pg_ms": pg / answered * 1e3 if answered and self.uses_pg else float("nan"),
        }

    def close(self) -> None:
        for load in self.loads:
            load.close()


def main() -> int:
    parser = argparse.ArgumentParser(description="skillrack scale-out, side by side")
    parser.add_argument("--quick", action="store_true", help="one round, short windows")
    parser.add_argument("--rounds", type=int, help="interleaved rounds (default 3)")
    parser.add_argument("--seconds", type=float, help="seconds per window (default 3)")
    parser.add_argument("--clients", default="1,8,32", help="client counts (default 1,8,32)")
    parser.add_argument("--pg", default=DEFAULT_PG, help="a PostgreSQL database to create in")
    parser.add_argument("--json", type=Path, help="also write the table and targets to this file")
    args = parser.parse_args()
    rounds = args.rounds or (1 if args.quick else 3)
    seconds = args.seconds or (1.5 if args.quick else 3.0)
    warmup = 0.3 if args.quick else 0.5
    clients = [int(c) for c in args.clients.split(",")]

    workdir = Path(tempfile.mkdtemp(prefix="skillrack-scaleout-"))
    (workdir / "bench.toml").write_text(CONFIG)
    env = {**os.environ, "SKILLRACK_LOAD_PLUGINS": EXAMPLE_PLUGIN, "PYTHONUNBUFFERED": "1"}
    env.pop("OTEL_INSTRUMENTATION_A2A_SDK_ENABLED", None)
    database = f"skillrack_scaleout_{uuid.uuid4().hex[:10]}"
    base, _, _ = args.pg.rpartition("/")
    pg_url = f"{base}/{database}"
    pg_ok = True
    try:
        asyncio.run(_admin(args.pg, f'CREATE DATABASE "{database}"'))
    except Exception as exc:  # the PostgreSQL rows are left out, and the reason said
        print(f"PostgreSQL at {args.pg} not usable ({type(exc).__name__}: {exc}): rows skipped")
        pg_ok = False

    def serve(name: str, *extra: str) -> Server:
        argv = [PYTHON, "-m", "skillrack", "serve", "--host", "127.0.0.1", "--port", "{port}"]
        argv += ["--log-level", "warning", "--config", str(workdir / "bench.toml"), *extra]
        directory = workdir / name
        directory.mkdir()
        return Server(name, argv, directory, env)

    sqlite_w2 = f"sqlite:///{workdir / 'shared.db'}"
    plans: list[tuple[str, list[Server], bool]] = [
        ("memory", [serve("memory", "--store", "memory")], False),
        ("sqlite", [serve("sqlite")], False),
        ("sqlite-w2", [serve("sqlite-w2", "--workers", "2", "--store", sqlite_w2)], False),
    ]
    if pg_ok:
        plans += [
            ("pg", [serve("pg", "--store", pg_url)], True),
            ("pg-2rep", [serve(f"pg-rep{i}", "--store", pg_url) for i in (1, 2)], True),
            ("pg-w2", [serve("pg-w2", "--workers", "2", "--store", pg_url)], True),
        ]
    setups: list[Setup] = []
    figures: dict[tuple[str, int], list[dict[str, float]]] = {}
    try:
        for name, servers, uses_pg in plans:
            for server in servers:
                server.start()
            for server in servers:
                server.wait_ready()
            setups.append(Setup(name, servers, uses_pg))
        print(f"scale-out benchmark in {workdir}: {rounds} round(s), {seconds}s windows")
        for setup in setups:  # warm every code path
            setup.measure(2, 0.5, 0.0)
        for round_ in range(rounds):
            order = setups if round_ % 2 == 0 else list(reversed(setups))
            for count in clients:
                for setup in order:
                    figures.setdefault((setup.name, count), []).append(
                        setup.measure(count, seconds, warmup)
                    )
        targets = report(setups, clients, figures)
        if args.json:
            table = {
                f"{name} {count}": {key: _median([f[key] for f in found]) for key in found[0]}
                for (name, count), found in figures.items()
            }
            args.json.write_text(json.dumps({"table": table, "targets": targets}, indent=2))
    finally:
        for setup in setups:
            setup.close()
        for _, servers, _ in plans:
            for server in servers:
                server.stop()
        if pg_ok:
            with contextlib.suppress(Exception):
                asyncio.run(_admin(args.pg, f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)'))
    return 0


def _median(values: list[float]) -> float:
    values = [v for v in values if v == v]  # NaN left out
    return statistics.median(values) if values else float("nan")


#: "Never slower" on a shared 2-CPU machine: every client count within this of one worker.
NOISE = 0.95


def report(
    setups: list[Setup], clients: list[int], figures: dict[tuple[str, int], list[dict[str, float]]]
) -> list[dict[str, Any]]:
    """Print the table and each target beside its figure; return the targets."""

    def at(name: str, count: int, key: str) -> float:
        return _median([f[key] for f in figures.get((name, count), [])])

    print()
    print(
        f"{'setup':<11}" + "".join(f"{f'{c} cl req/s':>12}{'CPU ms':>8}" for c in clients), end=""
    )
    print(f"{'PG ms/req':>10}")
    for setup in setups:
        row = f"{setup.name:<11}"
        for count in clients:
            row += f"{at(setup.name, count, 'rps'):>12.0f}{at(setup.name, count, 'cpu_ms'):>8.2f}"
        pg = _median([at(setup.name, c, "pg_ms") for c in clients])
        print(row + (f"{pg:>10.2f}" if pg == pg else f"{'':>10}"))

    def each(key: str, a: str, b: str) -> list[float]:
        return [at(a, c, key) / at(b, c, key) for c in clients]

    targets: list[dict[str, Any]] = []

    def target(item: str, name: str, ratios: list[float], bound: float, at_most: bool) -> None:
        ratio = _median(ratios)
        # "Never slower": the median at least the bound, and every client count near it.
        met = ratio <= bound if at_most else ratio >= bound and min(ratios) >= bound * NOISE
        targets.append(
            {"item": item, "name": name, "ratio": ratio, "ratios": ratios, "target": bound,
             "at_most": at_most, "met": met}
        )  # fmt: skip
        sign = "<=" if at_most else ">="
        counts = ", ".join(f"{c}: {r:.2f}" for c, r in zip(clients, ratios, strict=True))
        print(f"  {name} {sign} {bound:g}x: {ratio:.2f}x ({counts}) {'met' if met else 'NOT met'}")

    names = {setup.name for setup in setups}
    print("\ntargets (medians over the client counts; per client count in brackets):")
    if {"pg", "sqlite"} <= names:
        target(
            "3",
            "PostgreSQL CPU/request over one SQLite process",
            each("cpu_ms", "pg", "sqlite"),
            2.0,
            True,
        )
    if {"pg-2rep", "pg"} <= names:
        target(
            "3", "two replicas over one replica (req/s)", each("rps", "pg-2rep", "pg"), 1.0, False
        )
    for store, w2 in (("sqlite", "sqlite-w2"), ("pg", "pg-w2")):
        if {store, w2} <= names:
            target(
                "4",
                f"--workers 2 over one worker on {store} (req/s)",
                each("rps", w2, store),
                1.0,
                False,
            )
    print(f"  (the machine has {os.cpu_count()} CPUs; load average {os.getloadavg()[0]:.1f})")
    sys.stdout.flush()
    return targets


if __name__ == "__main__":
    sys.exit(main())
