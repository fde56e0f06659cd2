"""A redis-server of a test's own on a loopback port, to stop and start again (an outage).

For the shared limits store (``[server] limits_store``): a test stops it to
see what the replicas do without it, and starts it again on the same port.
Skipped when ``redis-server`` is not installed.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest


@dataclass
class OwnRedis:
    """A redis-server of the test's own on a loopback port; started again, on the same one."""

    directory: Path
    port: int
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        server = shutil.which("redis-server")
        assert server is not None
        self.process = subprocess.Popen(
            [
                server,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                str(self.directory),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
                return
            except OSError:
                assert time.monotonic() < deadline and self.process.poll() is None
                time.sleep(0.05)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=10)

    def stored_keys(self, prefix: str = "") -> list[str]:
        """The keys stored under ``prefix``."""
        cli = shutil.which("redis-cli") or "redis-cli"
        out = subprocess.run(
            [cli, "-p", str(self.port), "--scan", "--pattern", f"{prefix}*"],
            capture_output=True,
            check=True,
            timeout=10,
        )
        return out.stdout.decode().split()


@contextmanager
def own_redis(directory: Path) -> Iterator[OwnRedis]:
    """A started :class:`OwnRedis` in ``directory`` on a free port, stopped at the end."""
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = OwnRedis(directory, port)
    server.start()
    try:
        yield server
    finally:
        server.stop()
