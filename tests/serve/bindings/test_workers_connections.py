"""``serve --workers 2``: every accepted connection has TCP_NODELAY, and both workers accept.

The server logs each accepted connection at DEBUG with the accepting
process and ``TCP_NODELAY`` as read back from the socket
(:func:`skillrack.serve.bindings.connections.set_nodelay`).  Fresh connections from
many client ports are spread over the workers by the kernel
(``SO_REUSEPORT``, :class:`skillrack.cli.serve.ReusePortSockets`); a worker
killed with SIGKILL takes its socket with it, so no connection is sent to a
socket nobody accepts on while uvicorn starts its replacement.
"""

from __future__ import annotations

import os
import re
import signal
from collections import Counter
from pathlib import Path

import httpx
import pytest
from helpers.served_process import serving
from helpers.waiting import wait_until

from skillrack.testing.serve import CARD_PATH

ACCEPTED = re.compile(r"accepted by process (\d+) \(TCP_NODELAY (\w+)\)")


def _accepted(output: str) -> Counter[tuple[str, str]]:
    return Counter(ACCEPTED.findall(output))


def _exited(pid: int) -> bool:
    """``pid`` has exited and been reaped: its files (its listening socket) are closed.

    A zombie is not enough: the thread-group leader of a threaded process (a worker
    has threads) turns zombie while its other threads may still hold the files.
    """
    return not Path(f"/proc/{pid}").exists()


def _fresh_connections(url: str, count: int) -> None:
    for _ in range(count):
        with httpx.Client(timeout=10) as client:  # a new connection, a new client port
            assert client.get(url + CARD_PATH).status_code == 200


@pytest.mark.slow
def test_workers_set_nodelay_and_share_connections(tmp_path: Path) -> None:
    args = ("--workers", "2", "--store", "sqlite:///shared.db", "--log-level", "debug")
    with serving(tmp_path, args=args) as served:
        assert "SO_REUSEPORT" in served.output()
        _fresh_connections(served.url, 24)
        accepted = wait_until(
            lambda: (found := _accepted(served.output())).total() >= 24 and found,
            "24 accepted connections logged",
        )
        assert {nodelay for _, nodelay in accepted} == {"on"}, accepted
        by_worker = Counter[str]()
        for (pid, _), count in accepted.items():
            by_worker[pid] += count
        assert len(by_worker) == 2 and min(by_worker.values()) >= 2, by_worker

        killed = int(next(iter(by_worker)))
        os.kill(killed, signal.SIGKILL)
        # Its socket closes when all its threads have exited (the supervisor then reaps it):
        # before that, the kernel may still queue a connection on it, reset when it closes.
        wait_until(lambda: _exited(killed), f"the killed worker {killed} to exit")
        # Until the replacement listens, the kernel sends every connection to the survivor.
        try:
            _fresh_connections(served.url, 12)
        except httpx.TransportError as exc:  # rare under load: say what the server saw
            raise AssertionError(f"{exc!r}; the server's log:\n{served.output()[-4000:]}") from exc
