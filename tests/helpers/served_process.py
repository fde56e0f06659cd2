"""``skillrack serve`` as real processes, holding a tiny plugin written to a temporary directory.

No vendor distribution is loaded (``SKILLRACK_LOAD_PLUGINS=""``): the plugin
is a module registered through ``[plugins] builtin`` and found on PYTHONPATH.
Its skills: ``echo`` (completes), ``crash`` (fails), ``ask`` (waits for input),
``ticker`` (cancellable, publishes a progressive result every ``interval``),
``watch`` (``ticker``, restartable: run again when its process died) and
``ask_by`` (waits for input until the ``deadline`` it is given, then answers
``{"answer": null, "deadline_passed": ...}``).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from skillrack.protocol.messages import EXTENSION_URI
from skillrack.testing.serve import CARD_PATH, ServedAgent, invoke, start_agent, subprocess_agent

PLUGIN_MODULE = "skillrack_store_probe"
PLUGIN_SOURCE = '''
"""Skills for the store and replica tests."""

import asyncio
import datetime

from skillrack import DomainSchema, InputDeadlinePassed, Interaction, Skill, hookimpl


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


async def ask_by(arguments, context):
    deadline = datetime.datetime.fromisoformat(arguments["deadline"])
    try:
        answer = await context.request_input({"needed": "confirmation"}, deadline=deadline)
    except InputDeadlinePassed as passed:
        return {"answer": None, "deadline_passed": passed.deadline}
    return {"answer": answer}


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


TICKS = {
    "type": "object",
    "properties": {
        "ticks": {"type": "integer", "minimum": 1, "maximum": 1000},
        "interval": {"type": "number", "minimum": 0, "maximum": 5},
    },
}


@hookimpl
def register_skills(register):
    register(_skill("echo", echo, {"type": "object", "properties": {"text": {"type": "string"}}}))
    register(_skill("crash", crash))
    register(_skill("ask", ask))
    register(
        _skill(
            "ticker",
            ticker,
            TICKS,
            interaction=Interaction(cancellable=True),
        )
    )
    register(_skill("watch", ticker, TICKS, restartable=True))
    register(_skill("ask_by", ask_by, {"type": "object", "required": ["deadline"]}))
'''


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


def write_operator_config(directory: Path, key: str, server: str) -> Path:
    """The probe behind API keys and a policy: ``key`` is alice's, an operator, allowed all.

    ``server`` holds the rest of ``[server]`` (a rate, a gRPC port, ...).
    """
    keys, policy = directory / "keys.toml", directory / "policy.toml"
    keys.write_text(
        f'[[key]]\nsha256 = "{hashlib.sha256(key.encode()).hexdigest()}"\n'
        'identity = "alice"\nroles = ["operator"]\n'
    )
    policy.write_text('[[rule]]\neffect = "allow"\nroles = ["operator"]\nskills = ["*"]\n')
    path = directory / "skillrack.toml"
    path.write_text(
        f'[plugins]\nbuiltin = ["{PLUGIN_MODULE}"]\n\n[server]\n{server}\n\n'
        f'[plugins.api_keys]\nfile = "{keys}"\n\n[plugins.policy]\nfile = "{policy}"\n'
    )
    return path


def _options(
    workdir: Path,
    args: tuple[str, ...] = (),
    env: dict[str, str] | None = None,
    config: Path | None = None,
    **start: Any,
) -> dict[str, Any]:
    """``start_agent``'s arguments for a server holding only the probe plugin.

    ``start``: further ``start_agent`` arguments (``tls``, ``log_level``).
    """
    plugin_dir = write_plugin(workdir / "plugin")
    config = config or write_config(workdir)
    python_path = os.pathsep.join(filter(None, [str(plugin_dir), os.environ.get("PYTHONPATH")]))
    return {
        "plugins": "",
        "args": ("--config", str(config), *args),
        "env": {"PYTHONPATH": python_path, **(env or {})},
        **start,
    }


def start(workdir: Path, **kwargs: Any) -> ServedAgent:
    """Start ``skillrack serve`` with the probe; do not wait (``ServedAgent.wait_ready``)."""
    return start_agent(workdir, **_options(workdir, **kwargs))


@contextmanager
def serving(workdir: Path, **kwargs: Any) -> Iterator[ServedAgent]:
    with subprocess_agent(workdir, **_options(workdir, **kwargs)) as agent:
        yield agent


# Requests ----------------------------------------------------------------------------------------


def digests(url: str) -> dict[str, str]:
    """skill id -> interface digest, as the card advertises them."""
    card = httpx.get(url + CARD_PATH, timeout=10).json()
    [extension] = [e for e in card["capabilities"]["extensions"] if e["uri"] == EXTENSION_URI]
    return {s["skill_id"]: s["interface_digest"] for s in extension["params"]["skills"]}


def probe_request(url: str, skill: str, arguments: Any) -> dict[str, Any]:
    """A request object for a probe skill, bound to the digest ``url``'s card advertises."""
    return {
        "skill": skill,
        "skill_version": "1.0",
        "interface_digest": digests(url)[skill],
        "arguments": arguments,
    }


def send(url: str, data: Any, *, immediately: bool = False, **kwargs: Any) -> Any:
    """SendMessage; the resulting Task (``immediately``: ``returnImmediately``)."""
    configuration = {"returnImmediately": True} if immediately else None
    return invoke(url, data, configuration=configuration, **kwargs)


def child_pids(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (``serve --workers``' workers), from ``/proc``."""
    children = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            children.append(int(stat.parent.name))
    return children
