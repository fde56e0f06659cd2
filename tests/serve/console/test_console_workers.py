"""The console of ``skillrack serve --workers 2`` on one SQLite file (a2a-sdk's cluster mode).

The task store is then a2a-sdk's versioned store, whose lookups answer a
wrapped task; fresh connections land on either worker, and every worker's
console must list and show every task, whichever worker ran it.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import httpx
import pytest
from helpers.served_process import PLUGIN_MODULE, probe_request, send, start

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


@pytest.mark.slow
def test_every_worker_accepts_a_session_signed_by_another(tmp_path: Path) -> None:
    """Issue 28, item 4: ``--workers 2`` share one console secret (a 0600 file of the run)."""
    key = "workers-console-operator-key-TEST-ONLY"
    digest = hashlib.sha256(key.encode()).hexdigest()
    (tmp_path / "keys.toml").write_text(
        f'[[key]]\nsha256 = "{digest}"\nidentity = "olga"\ntenant = "acme"\nroles = ["operator"]\n',
        encoding="utf-8",
    )
    (tmp_path / "policy.toml").write_text(
        '[[rule]]\neffect = "allow"\ntenants = ["acme"]\nskills = ["*"]\n', encoding="utf-8"
    )
    config = tmp_path / "signin.toml"
    config.write_text(
        f'[plugins]\nbuiltin = ["{PLUGIN_MODULE}"]\n\n[plugins.api_keys]\nfile = "keys.toml"\n\n'
        '[plugins.policy]\nfile = "policy.toml"\n\n[server]\nrate_per_minute = 1000000\n',
        encoding="utf-8",
    )
    served = start(
        tmp_path, args=("--workers", "2", "--store", "sqlite:///shared.db"), config=config
    )
    served.wait_ready(START_S)
    try:
        url = served.url + CONSOLE_PATH
        with httpx.Client(timeout=10) as first:
            form = first.get(url + "/signin")
            token = re.search(r'name="csrf_token" value="([^"]+)"', form.text)
            assert token is not None
            signed = first.post(
                url + "/signin", data={"csrf_token": token.group(1), "key": key, "next": url}
            )
            assert signed.status_code == 200, signed.text
            cookies = dict(first.cookies.items())
        answers = []
        for _ in range(8):  # a new connection each time: either worker answers
            with httpx.Client(timeout=10, cookies=cookies) as fresh:
                answers.append(fresh.get(url + "/approvals", follow_redirects=False))
        assert [a.status_code for a in answers] == [200] * 8
        assert all("Signed in as olga (tenant acme)" in a.text for a in answers)
        # Its CSRF token, too, is accepted by whichever worker takes the form.
        own = re.search(r'name="csrf_token" value="([^"]+)"', answers[-1].text)
        assert own is not None
        with httpx.Client(timeout=10, cookies=cookies) as fresh:
            out = fresh.post(url + "/signout", data={"csrf_token": own.group(1)})
        assert out.status_code == 303
    finally:
        served.stop()
