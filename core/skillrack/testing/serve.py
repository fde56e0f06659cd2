"""``skillrack serve`` as a real process, and raw A2A requests to it, for test suites.

The host's own tests and a vendor's tests both need the operator's path end
to end: the installed ``skillrack`` command on a free loopback port, and
requests written as JSON on the wire with nothing but httpx in between (no
SDK that could hide a wire-level mistake).  This module is that, once::

    from skillrack.testing.serve import invoke, subprocess_agent

    def test_served(tmp_path):
        with subprocess_agent(tmp_path, plugins="acme-skills") as agent:
            task = invoke(agent.url, {"skill": "describe_skill", ...})
            assert task["status"]["state"] == "TASK_STATE_COMPLETED"

Unlike the fixtures in ``skillrack.testing`` (an agent composed in the test's
own process), this starts the command a operator runs, as a subprocess, so
it also tests the entry point, plugin discovery through entry points, the
configuration file and the task store.  Imported only by the tests that use
it: the pytest plugin does not load it.  ``free_port`` and ``serving_in_thread``
(an ASGI app on a loopback port in a thread) are :mod:`skillrack.ops.loopback`'s.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import signal
import ssl
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from skillrack.ops.loopback import free_port as free_port
from skillrack.ops.loopback import serving_in_thread as serving_in_thread
from skillrack.protocol.messages import EXTENSION_URI

CARD_PATH = "/.well-known/agent-card.json"
#: The headers of an A2A 1.0 request that activates the schema-interface extension.
HEADERS = {"A2A-Version": "1.0", "A2A-Extensions": EXTENSION_URI}
#: How long ``wait_ready`` waits for a start by default.  Generous: a failed start
#: is reported as soon as the process exits, and a CI machine running tests in
#: parallel can take well over 30 s to start ``serve --workers 2``.
START_TIMEOUT_S = 120.0
#: The first words of the line ``skillrack serve`` prints once it serves.
BANNER = "skillrack serving at"


def skillrack_command() -> str:
    """The installed ``skillrack`` command: beside this Python first (a venv), else on PATH."""
    beside = Path(sys.executable).parent / "skillrack"
    if beside.exists():
        return str(beside)
    found = shutil.which("skillrack")
    if found is None:
        raise RuntimeError("the skillrack command is not installed next to this Python or on PATH")
    return found


#: Seconds ``ServedAgent.stop`` lets a stopping agent drain before it insists.
DRAIN_WAIT_S = 3.0


@dataclass
class ServedAgent:
    """A running ``skillrack serve``: its base URL, its process, its combined output."""

    url: str
    process: subprocess.Popen[bytes]
    log: Path
    #: How ``wait_ready`` checks an ``https`` agent's certificate (and presents the client's).
    verify: ssl.SSLContext | bool = True

    def output(self) -> str:
        """What the server printed so far (start-up lines, warnings, tracebacks)."""
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def _verify(self) -> ssl.SSLContext | bool:
        return default_tls() if self.verify is True else self.verify

    def wait_ready(self, timeout: float = START_TIMEOUT_S) -> ServedAgent:
        """Wait until serve says it serves and the Agent Card answers 200; else stop and fail.

        The banner too: with ``--workers`` the card answers once one worker
        listens, and the banner (with what serve reports about itself) once
        every worker has started.
        """
        deadline = time.monotonic() + timeout
        while True:
            if self.process.poll() is not None:
                raise AssertionError(
                    f"skillrack serve exited ({self.process.returncode}):\n{self.output()}"
                )
            try:
                if BANNER in self.output() and (
                    httpx.get(self.url + CARD_PATH, timeout=2, verify=self._verify()).status_code
                    == 200
                ):
                    return self
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                self.stop()
                raise AssertionError(
                    f"skillrack serve did not answer within {timeout} s:\n{self.output()}"
                )
            time.sleep(0.05)

    def stop(self, sig: int = signal.SIGTERM) -> None:
        """Send ``sig`` (a graceful stop by default) and wait; kill if it does not stop.

        A SIGTERM lets running tasks finish for up to ``[server] shutdown_grace``
        (30 s); a test does not wait that long: after ``DRAIN_WAIT_S`` a second
        SIGTERM stops the agent at once.
        """
        if self.process.poll() is None:
            self.process.send_signal(sig)
            try:
                self.process.wait(timeout=DRAIN_WAIT_S if sig == signal.SIGTERM else 20)
            except subprocess.TimeoutExpired:
                try:
                    if sig == signal.SIGTERM:
                        self.process.send_signal(sig)
                        self.process.wait(timeout=15)
                        return
                except subprocess.TimeoutExpired:
                    pass
                self.process.kill()
                self.process.wait(timeout=10)


def start_agent(
    workdir: Path,
    *,
    plugins: str | None = None,
    args: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
    log_level: str = "warning",
    tls: ssl.SSLContext | None = None,
) -> ServedAgent:
    """Start ``skillrack serve`` on a free port in ``workdir``; do not wait (``wait_ready``).

    ``plugins`` sets ``SKILLRACK_LOAD_PLUGINS`` (the distributions to load;
    ``""`` loads none); ``args`` are further ``serve`` options (``--config``,
    ``--store``, ...).  The process runs in ``workdir``, so the default task
    store (a SQLite file in the working directory) is the test's own.
    ``tls``: the agent serves HTTPS (``args`` carry ``--ssl-certfile``); its
    URL is ``https://`` and ``wait_ready`` connects with this context.
    """
    workdir.mkdir(parents=True, exist_ok=True)
    port = free_port()
    command = [
        skillrack_command(),
        "serve",
        *("--host", "127.0.0.1", "--port", str(port), "--log-level", log_level),
    ]
    command += list(args)
    environment = {**os.environ, **(env or {})}
    if plugins is not None:
        environment["SKILLRACK_LOAD_PLUGINS"] = plugins
    log = workdir / f"serve-{port}.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            command, stdout=out, stderr=subprocess.STDOUT, cwd=workdir, env=environment
        )
    scheme = "http" if tls is None else "https"
    return ServedAgent(f"{scheme}://127.0.0.1:{port}", process, log, tls if tls else True)


@contextmanager
def subprocess_agent(workdir: Path, **kwargs: Any) -> Iterator[ServedAgent]:
    """``start_agent``, wait until it answers, stop it afterwards."""
    agent = start_agent(workdir, **kwargs).wait_ready()
    try:
        yield agent
    finally:
        agent.stop()


# Raw requests ------------------------------------------------------------------------------------


def message(data: Any, *, task_id: str | None = None, parts: list[Any] | None = None) -> Any:
    """A user Message activating the extension, with one Data Part (or the given ``parts``)."""
    msg: dict[str, Any] = {
        "messageId": str(uuid.uuid4()),
        "role": "ROLE_USER",
        "parts": parts if parts is not None else [{"data": data}],
        "extensions": [EXTENSION_URI],
    }
    if task_id:
        msg["taskId"] = task_id
    return msg


def send(
    base: str,
    data: Any = None,
    *,
    binding: str = "JSONRPC",
    task_id: str | None = None,
    parts: list[Any] | None = None,
    configuration: dict[str, Any] | None = None,
    headers: dict[str, str] | None = None,
    client: httpx.Client | None = None,
) -> httpx.Response:
    """SendMessage over JSON-RPC (``/``) or HTTP+JSON (``/message:send``); the raw response."""
    params: dict[str, Any] = {"message": message(data, task_id=task_id, parts=parts)}
    if configuration:
        params["configuration"] = configuration
    all_headers = {**HEADERS, **(headers or {})}
    if binding == "JSONRPC":
        body = {"jsonrpc": "2.0", "id": "1", "method": "SendMessage", "params": params}
        return _post(client, base + "/", json=body, headers=all_headers)
    return _post(client, base + "/message:send", json=params, headers=all_headers)


@functools.cache
def default_tls() -> ssl.SSLContext:
    """httpx's default TLS context, built once: these helpers' one-off requests share it.

    ``httpx.post(...)`` builds a context, loading the whole CA bundle, for every
    request (about 25 ms of CPU, for ``http://`` too); :func:`wait_for_state`
    polls every 50 ms.
    """
    return httpx.create_ssl_context()


def _post(client: httpx.Client | None, url: str, **options: Any) -> httpx.Response:
    """POST with ``client``, or one-off with :func:`default_tls`; 30 s timeout."""
    if client is not None:
        return client.post(url, timeout=30, **options)
    return httpx.post(url, timeout=30, verify=default_tls(), **options)


def task_of(response: httpx.Response, binding: str = "JSONRPC") -> Any:
    """The Task of a SendMessage answer (an assertion error shows any error instead)."""
    body = response.json()
    if binding == "JSONRPC":
        assert "result" in body, body
        return body["result"]["task"]
    assert response.status_code == 200 and "task" in body, body
    return body["task"]


def invoke(base: str, data: Any, binding: str = "JSONRPC", **kwargs: Any) -> Any:
    """SendMessage and return the resulting Task."""
    return task_of(send(base, data, binding=binding, **kwargs), binding)


def rpc(
    base: str,
    method: str,
    params: Any,
    headers: dict[str, str] | None = None,
    client: httpx.Client | None = None,
) -> Any:
    """One JSON-RPC call; the whole answer object (``result`` or ``error``)."""
    body = {"jsonrpc": "2.0", "id": str(uuid.uuid4()), "method": method, "params": params}
    answer = _post(client, base + "/", json=body, headers={**HEADERS, **(headers or {})})
    return answer.json()


def get_task(base: str, task_id: str) -> Any:
    """GetTask over JSON-RPC; the Task."""
    answer = rpc(base, "GetTask", {"id": task_id})
    assert "result" in answer, answer
    return answer["result"]


def wait_for_state(base: str, task_id: str, states: set[str], timeout: float = 15) -> Any:
    """Poll GetTask until the task is in one of ``states`` (or ``timeout``); the last Task."""
    deadline = time.monotonic() + timeout
    while True:
        task = get_task(base, task_id)
        if task["status"]["state"] in states or time.monotonic() > deadline:
            return task
        time.sleep(0.05)


def stream(base: str, method: str, params: Any, timeout: float = 30) -> Iterator[Any]:
    """The ``result`` of every event of a JSON-RPC SSE stream (SendStreamingMessage, ...)."""
    body = {"jsonrpc": "2.0", "id": str(uuid.uuid4()), "method": method, "params": params}
    headers = {**HEADERS, "Accept": "text/event-stream"}
    with httpx.stream(
        "POST", base + "/", json=body, headers=headers, timeout=timeout, verify=default_tls()
    ) as response:
        assert response.status_code == 200, response.read()
        assert response.headers["content-type"].startswith("text/event-stream")
        for line in response.iter_lines():
            if line.startswith("data:"):
                event = json.loads(line.removeprefix("data:"))
                assert "result" in event, event
                yield event["result"]


def error_of(task: Any) -> Any:
    """The draft's error object: the final status Message holds exactly one Data Part."""
    parts = task["status"]["message"]["parts"]
    assert len(parts) == 1 and "data" in parts[0], parts
    return parts[0]["data"]["error"]


def skill_request(skill: str, arguments: Any, version: str, digest: str) -> dict[str, Any]:
    """The draft's request object for ``skill`` bound to ``version`` and ``digest``."""
    return {
        "skill": skill,
        "skill_version": version,
        "interface_digest": digest,
        "arguments": arguments,
    }
