"""Start ``skillrack serve`` as a real process holding only this distribution."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

CARD_PATH = "/.well-known/agent-card.json"
START_TIMEOUT = 20.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def skillrack_script() -> str:
    beside = Path(sys.executable).parent / "skillrack"
    if beside.exists():
        return str(beside)
    found = shutil.which("skillrack")
    if found is None:
        pytest.fail("the skillrack command is not installed next to this Python or on PATH")
    return found


@contextmanager
def served(logs: Path, config: str | None = None, port: int | None = None) -> Iterator[str]:
    """Run ``skillrack serve`` (optionally with a TOML ``config``); yield its base URL."""
    port = port or free_port()
    url = f"http://127.0.0.1:{port}"
    out_path, err_path = logs / "stdout.txt", logs / "stderr.txt"
    env = {**os.environ, "SKILLRACK_LOAD_PLUGINS": "skillrack-example-vendor"}
    command = [
        skillrack_script(),
        "serve",
        *("--host", "127.0.0.1", "--port", str(port), "--log-level", "warning"),
        # Each test server keeps its tasks in its own durable file, never in the
        # working directory where another run could share it.
        *("--store", f"sqlite:///{logs / 'tasks.db'}"),
    ]
    if config is not None:
        (logs / "skillrack.toml").write_text(config)
        command += ["--config", str(logs / "skillrack.toml")]
    with out_path.open("wb") as out, err_path.open("wb") as err:
        process = subprocess.Popen(command, stdout=out, stderr=err, env=env)

    def output() -> str:
        return f"stdout:\n{out_path.read_text()}\nstderr:\n{err_path.read_text()}"

    try:
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            if process.poll() is not None:
                pytest.fail(f"skillrack serve exited with {process.returncode}\n{output()}")
            try:
                if httpx.get(url + CARD_PATH, timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"skillrack serve did not answer within {START_TIMEOUT} s\n{output()}")
            time.sleep(0.1)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)
