"""The console of ``skillrack serve --workers 2`` on one SQLite file (a2a-sdk's cluster mode).

The task store is then a2a-sdk's versioned store, whose lookups answer a
wrapped task; fresh connections land on either worker, and every worker's
console must list and show every task, whichever worker ran it.
"""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from helpers.served_process import probe_request, send, start

from skillrack.serve.console import CONSOLE_PATH

#: Seconds two workers may take to load and answer on a loaded machine.
START_S = 120.0


@pytest.mark.slow
def test_every_worker_lists_and_shows_every_task(tmp_path: Path) -> None:
    served = start(tmp_path, args=("--workers", "2", "--store", "sqlite:///shared.db"))
    served.wait_ready(START_S)
    try:
        url = served.url
        ids = [send(url, probe_request(url, "echo", {"text": str(n)}))["id"] for n in range(6)]
        for _ in range(4):  # a new connection each time: either worker answers
            listed = httpx.get(url + CONSOLE_PATH + "/tasks", timeout=10)
            assert listed.status_code == 200
            assert all(task_id in listed.text for task_id in ids)
        for task_id in ids:
            shown = httpx.get(url + CONSOLE_PATH + f"/tasks/{task_id}", timeout=10)
            assert shown.status_code == 200 and "state-completed" in shown.text, task_id
        overview = httpx.get(url + CONSOLE_PATH, timeout=10).text
        assert "cluster mode" in overview and "shared.db" in overview
    finally:
        served.stop()
