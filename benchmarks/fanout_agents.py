"""Many skillrack agents in one process, each on a port (an origin) of its own, with counters.

    python benchmarks/fanout_agents.py --agents 10 --config bench.toml

The fan-out benchmark (``fanout.py``) needs 100 distinct agents without 100
interpreters: this process builds the host once (the example vendor plugin,
``SKILLRACK_LOAD_PLUGINS``) and serves one skillrack app per port, each with
its own base URL (so its card names its own origin, as the origin rule
requires) and its own memory task store, on one event loop, one uvicorn
server per port (h11, like every other benchmark here).

Two counters per agent say what the clients did, seen from the agent's side:

* ``connections``: TCP connections accepted (uvicorn's protocol object is made
  once per accepted connection); a client that reuses one connection per
  origin opens as many as it sends requests concurrently, not one per call;
* ``describes``: requests whose body names ``describe_skill`` (read as the
  body arrives, not buffered), so interface documents fetched once per agent
  and digest show as one each.

It binds its ports itself (port 0: no race with other processes for a port
chosen beforehand) and prints them first, as ``{"ports": [...]}``.  On a line
``stats`` on stdin it then prints ``{port: {"connections", "describes",
"requests"}}`` as one JSON line; ``quit`` (or end of input) stops every server.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import sys
import tempfile
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import uvicorn
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from uvicorn.protocols.http.h11_impl import H11Protocol

from skillrack.host.config import load_config
from skillrack.host.startup import build_host
from skillrack.ops.inprocess import build_app
from skillrack.serve.server import own_process

#: Seconds an idle connection stays open (uvicorn's default is 5).
KEEP_ALIVE_S = 600


class Counted:
    """An agent's app, counting its requests and those that name ``describe_skill``."""

    def __init__(self, app: ASGIApp, counts: Counter[str]) -> None:
        self.app = app
        self.counts = counts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        self.counts["requests"] += 1
        seen = False

        async def watching() -> Message:
            nonlocal seen
            message = await receive()
            if not seen and b'"describe_skill"' in message.get("body", b""):
                seen = True
                self.counts["describes"] += 1
            return message

        await self.app(scope, watching, send)


def counting_protocol(counts: Counter[str]) -> type[H11Protocol]:
    """uvicorn's h11 protocol, counting the connections it is made for."""

    class Counting(H11Protocol):
        def connection_made(self, transport: asyncio.BaseTransport) -> None:  # type: ignore[override]
            counts["connections"] += 1
            super().connection_made(transport)  # type: ignore[arg-type]

    return Counting


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--agents", type=int, required=True, help="how many agents (ports)")
    parser.add_argument("--config", type=Path, required=True)
    args = parser.parse_args()
    sockets = []
    for _ in range(args.agents):
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        sockets.append(sock)
    ports = [int(sock.getsockname()[1]) for sock in sockets]
    print(json.dumps({"ports": ports}), flush=True)
    config = load_config(args.config)
    registry = build_host(config, listen_host="127.0.0.1").registry
    workdir = Path(tempfile.mkdtemp(prefix="skillrack-fanout-agents-"))
    counts: dict[int, Counter[str]] = {port: Counter() for port in ports}
    servers = []
    for port in ports:
        base = f"http://127.0.0.1:{port}"
        (workdir / str(port)).mkdir()
        app = build_app(registry, config, base, workdir / str(port))
        servers.append(
            uvicorn.Server(
                uvicorn.Config(
                    Counted(app, counts[port]),
                    host="127.0.0.1",
                    port=port,
                    log_level="warning",
                    access_log=False,
                    http=counting_protocol(counts[port]),
                    lifespan="on",
                    backlog=2048,
                    # Callers take turns: uvicorn's 5 s would close a caller's idle
                    # connections during the others' turns, and count against it.
                    timeout_keep_alive=KEEP_ALIVE_S,
                )
            )
        )

    own_process()  # what skillrack serve makes of its process (a2a-sdk's queues, the collector)

    def commands() -> None:
        for line in sys.stdin:
            if line.strip() == "stats":
                figures: dict[str, Any] = {str(p): dict(c) for p, c in counts.items()}
                print(json.dumps(figures), flush=True)
            elif line.strip() == "quit":
                break
        for server in servers:
            server.should_exit = True

    async def serve_all() -> None:
        threading.Thread(target=commands, daemon=True).start()
        await asyncio.gather(
            *(s.serve(sockets=[sock]) for s, sock in zip(servers, sockets, strict=True))
        )

    asyncio.run(serve_all())


if __name__ == "__main__":
    main()
