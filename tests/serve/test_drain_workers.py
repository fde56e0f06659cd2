"""``skillrack serve --workers 2`` on SIGTERM: every worker drains, then the parent exits.

uvicorn's supervisor passes SIGTERM to each worker; each turns unready and
ends what still runs after ``shutdown_grace`` ``FAILED`` naming itself.  The
task's final state is read back from the SQLite file with sqlite3, not
through skillrack.
"""

from __future__ import annotations

import json
import signal
import sqlite3
import time
from pathlib import Path

import httpx
import pytest
from helpers.served_process import probe_request, send, start, write_config

from skillrack.serve.bindings.operator_endpoints import READYZ_PATH
from skillrack.testing.serve import wait_for_state

pytestmark = pytest.mark.slow

GRACE_S = 3


def test_every_worker_drains_on_sigterm(tmp_path: Path) -> None:
    config = write_config(tmp_path, f"shutdown_grace = {GRACE_S}\n")
    agent = start(tmp_path / "agent", args=("--workers", "2"), config=config).wait_ready()
    try:
        running = send(
            agent.url,
            probe_request(agent.url, "ticker", {"ticks": 1000, "interval": 0.1}),
            immediately=True,
        )
        wait_for_state(agent.url, running["id"], {"TASK_STATE_WORKING"})
        agent.process.send_signal(signal.SIGTERM)
        stopped = time.monotonic()
        status = None
        while status != 503:  # the worker still running the task answers it unready
            assert time.monotonic() - stopped < GRACE_S, status
            try:
                status = httpx.get(agent.url + READYZ_PATH, timeout=5).status_code
            except httpx.TransportError:  # the idle worker closed its socket under this one
                status = None
        assert agent.process.wait(timeout=GRACE_S + 20) == 0
        assert agent.output().count("shutting down: drained") == 2
    finally:
        agent.stop()
    database = sqlite3.connect(tmp_path / "skillrack-tasks.db")
    try:
        [(status,)] = database.execute(
            "SELECT status FROM tasks WHERE id = ?", (running["id"],)
        ).fetchall()
    finally:
        database.close()
    final = json.loads(status)
    assert final["state"] == "TASK_STATE_FAILED"
    assert "shutdown_grace" in json.dumps(final["message"])
