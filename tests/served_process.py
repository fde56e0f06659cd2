"""``skillrack serve`` as real processes, holding a tiny plugin written to a temporary directory.

No vendor distribution is loaded (``SKILLRACK_LOAD_PLUGINS=""``): the plugin
is a module registered through ``[plugins] builtin`` and found on PYTHONPATH.
Its skills: ``echo`` (completes), ``crash`` (fails), ``ask`` (waits for input),
``ticker`` (cancellable, publishes a progressive result every ``interval``).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from agent_harness import free_port

from skillrack.requests import EXTENSION_URI

CARD_PATH = "/.well-known/agent-card.json"
HEADERS = {"A2A-Version": "1.0", "A2A-Extensions": EXTENSION_URI}
PLUGIN_MODULE = "skillrack_store_probe"
PLUGIN_SOURCE = '''
"""Skills for the store and replica tests."""

import asyncio

from skillrack import DomainSchema, Interaction, Skill, hookimpl


def _schema(name, schema):
    return DomainSchema.inline(schema, schema_uri=f"urn:test:store-probe:{name}", version="1.0")


async def echo(arguments, context):
    return {"echo": arguments.get("text", "")}


async def crash(arguments, context):
    raise RuntimeError("the probe crashed on purpose")


async def ask(arguments, context):
    answer = await context.request_input({"needed": "confirmation"})
    return {"answer": answer}


async def ticker(arguments, context):
    ticks = int(arguments.get("ticks", 10))
    for tick in range(ticks):
        await context.publish_progress({"tick": tick})
        await asyncio.sleep(arguments.get("interval", 0.2))
    return {"ticks": ticks}


def _skill(skill_id, handler, input_schema=None, **extra):
    return Skill(
        id=skill_id,
        version="1.0",
        name=skill_id,
        description=f"store probe: {skill_id}",
        input_schema=_schema(f"{skill_id}:in", input_schema or {"type": "object"}),
        output_schema=_schema(f"{skill_id}:out", {"type": "object"}),
        handler=handler,
        **extra,
    )


@hookimpl
def register_skills(register):
    register(_skill("echo", echo, {"type": "object", "properties": {"text": {"type": "string"}}}))
    register(_skill("crash", crash))
    register(_skill("ask", ask))
    register(
        _skill(
            "ticker",
            ticker,
            {
                "type": "object",
                "properties": {
                    "ticks": {"type": "integer", "minimum": 1, "maximum": 1000},
                    "interval": {"type": "number", "minimum": 0, "maximum": 5},
                },
            },
            interaction=Interaction(cancellable=True),
        )
    )
'''


def skillrack_command() -> str:
    beside = Path(sys.executable).parent / "skillrack"
    return str(beside) if beside.exists() else (shutil.which("skillrack") or "skillrack")


def write_plugin(directory: Path) -> Path:
    """The probe module in ``directory`` (put on PYTHONPATH); returns the directory."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / f"{PLUGIN_MODULE}.py").write_text(PLUGIN_SOURCE, encoding="utf-8")
    return directory


def write_config(directory: Path, server: str = "") -> Path:
    """A configuration loading only the probe, with a rate limit no test reaches."""
    path = directory / "skillrack.toml"
    plugins = f'[plugins]\nbuiltin = ["{PLUGIN_MODULE}"]\n'
    path.write_text(f"{plugins}\n[server]\nrate_per_minute = 1000000\n{server}", encoding="utf-8")
    return path


@dataclass
class Served:
    url: str
    process: subprocess.Popen[bytes]
    log: Path

    def output(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""


def start(
    workdir: Path,
    *,
    args: tuple[str, ...] = (),
    env: dict[str, str] | None = None,
    config: Path | None = None,
) -> Served:
    """Start ``skillrack serve`` with the probe; do not wait for it (see ``wait_ready``)."""
    plugin_dir = write_plugin(workdir / "plugin")
    config = config or write_config(workdir)
    port = free_port()
    log = workdir / f"serve-{port}.log"
    python_path = os.pathsep.join(filter(None, [str(plugin_dir), os.environ.get("PYTHONPATH")]))
    command = [
        skillrack_command(),
        "serve",
        *("--port", str(port), "--config", str(config), "--log-level", "warning"),
        *args,
    ]
    with log.open("wb") as out:
        process = subprocess.Popen(
            command,
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=workdir,
            env={
                **os.environ,
                "SKILLRACK_LOAD_PLUGINS": "",
                "PYTHONPATH": python_path,
                **(env or {}),
            },
        )
    return Served(f"http://127.0.0.1:{port}", process, log)


def wait_ready(served: Served, timeout: float = 30) -> Served:
    deadline = time.monotonic() + timeout
    while True:
        if served.process.poll() is not None:
            raise AssertionError(
                f"skillrack serve exited ({served.process.returncode}):\n" + served.output()
            )
        try:
            if httpx.get(served.url + CARD_PATH, timeout=2).status_code == 200:
                return served
        except httpx.TransportError:
            pass
        if time.monotonic() > deadline:
            stop(served)
            raise AssertionError("skillrack serve did not answer:\n" + served.output())
        time.sleep(0.05)


def stop(served: Served, sig: int = signal.SIGTERM) -> None:
    if served.process.poll() is None:
        served.process.send_signal(sig)
        try:
            served.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            served.process.kill()
            served.process.wait(timeout=10)


@contextmanager
def serving(workdir: Path, **kwargs: Any) -> Iterator[Served]:
    served = wait_ready(start(workdir, **kwargs))
    try:
        yield served
    finally:
        stop(served)


# Requests ----------------------------------------------------------------------------------------


def digests(url: str) -> dict[str, str]:
    """skill id -> interface digest, as the card advertises them."""
    card = httpx.get(url + CARD_PATH, timeout=10).json()
    [extension] = [e for e in card["capabilities"]["extensions"] if e["uri"] == EXTENSION_URI]
    return {s["skill_id"]: s["interface_digest"] for s in extension["params"]["skills"]}


def skill_request(url: str, skill: str, arguments: Any) -> dict[str, Any]:
    return {
        "skill": skill,
        "skill_version": "1.0",
        "interface_digest": digests(url)[skill],
        "arguments": arguments,
    }


def message(data: Any, task_id: str | None = None) -> dict[str, Any]:
    msg: dict[str, Any] = {
        "messageId": str(uuid.uuid4()),
        "role": "ROLE_USER",
        "parts": [{"data": data}],
        "extensions": [EXTENSION_URI],
    }
    if task_id:
        msg["taskId"] = task_id
    return msg


def rpc(
    url: str, method: str, params: Any, client: httpx.Client | None = None, timeout: float = 30
) -> Any:
    body = {"jsonrpc": "2.0", "id": str(uuid.uuid4()), "method": method, "params": params}
    poster = client or httpx
    return poster.post(url + "/", json=body, headers=HEADERS, timeout=timeout).json()


def send(
    url: str,
    data: Any,
    *,
    task_id: str | None = None,
    immediately: bool = False,
    client: httpx.Client | None = None,
) -> Any:
    """SendMessage; the resulting Task (an assertion error shows any JSON-RPC error)."""
    params: dict[str, Any] = {"message": message(data, task_id)}
    if immediately:
        params["configuration"] = {"returnImmediately": True}
    answer = rpc(url, "SendMessage", params, client)
    assert "result" in answer, answer
    return answer["result"]["task"]


def get_task(url: str, task_id: str) -> Any:
    answer = rpc(url, "GetTask", {"id": task_id})
    assert "result" in answer, answer
    return answer["result"]


def wait_for_state(url: str, task_id: str, states: set[str], timeout: float = 15) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        task = get_task(url, task_id)
        if task["status"]["state"] in states or time.monotonic() > deadline:
            return task
        time.sleep(0.05)


def stream_events(url: str, method: str, params: Any, timeout: float = 30) -> Iterator[Any]:
    """The ``result`` objects of a JSON-RPC SSE stream (SendStreamingMessage, SubscribeToTask)."""
    body = {"jsonrpc": "2.0", "id": str(uuid.uuid4()), "method": method, "params": params}
    headers = {**HEADERS, "Accept": "text/event-stream"}
    with httpx.stream("POST", url + "/", json=body, headers=headers, timeout=timeout) as response:
        for line in response.iter_lines():
            if line.startswith("data:"):
                answer = json.loads(line[5:])
                assert "result" in answer, answer
                yield answer["result"]
