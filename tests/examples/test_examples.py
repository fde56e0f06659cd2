"""The sample configurations in examples/ work as shipped, started and called as their page says.

Every block marked ``<!-- example: NAME -->`` in examples/README.md is run,
line by line, from a copy of the repository's ``examples/`` directory (the
shipped files unchanged; the copy keeps the task stores out of the checkout).
A ``skillrack serve`` line starts the agent as a subprocess on a free
127.0.0.1 port (``--port``: the page's port, 8000 unless it names one, is
replaced), and that port in the lines after it names the agent.  Every other
line runs through ``bash`` as an operator's shell would run it (the JWT
example reads its token with ``$(cat ...)``) and must exit 0.

The PostgreSQL example runs only where PostgreSQL answers on 127.0.0.1:5432.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import socket
import subprocess
from contextlib import ExitStack
from pathlib import Path

import httpx
import pytest
from helpers.example_vendor import example_vendor_env

from skillrack.cli.init import STARTING_CONFIGURATION
from skillrack.protocol.signing import verify_card_signature
from skillrack.testing.serve import skillrack_command, start_agent

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
PAGE = EXAMPLES / "README.md"
BLOCK = re.compile(r"<!-- example: (\S+) -->\s*```sh\n(.*?)```", re.S)
URL = re.compile(r"http://127\.0\.0\.1:(\d+)")
#: Seconds a server may take to answer its card: start-up is slow on a loaded machine.
START_S = 120.0
ARGS = (
    '{"resource_id": "r1", "condition": {"metric": "utilization", "operator": "gte", '
    '"threshold": 80, "unit": "percent"}}'
)


def example_blocks() -> dict[str, str]:
    return dict(BLOCK.findall(PAGE.read_text(encoding="utf-8")))


def postgresql_reachable() -> bool:
    try:
        socket.create_connection(("127.0.0.1", 5432), timeout=1).close()
    except OSError:
        return False
    return True


def environment(site: Path) -> dict[str, str]:
    """The operator's shell: this environment's skillrack first on PATH, the example plugin."""
    bin_dir = str(Path(skillrack_command()).parent)
    env = example_vendor_env(site)
    return {**env, "PATH": bin_dir + os.pathsep + env.get("PATH", "")}


def run_example(name: str, workdir: Path) -> list[subprocess.CompletedProcess[str]]:
    """Run the example's block in ``workdir`` (holding a copy of examples/); the runs."""
    shutil.copytree(EXAMPLES, workdir / "examples")
    env = environment(workdir / "site")
    ports: dict[str, str] = {}
    runs: list[subprocess.CompletedProcess[str]] = []
    with ExitStack() as servers:
        for line in example_blocks()[name].strip().splitlines():
            argv = shlex.split(line)
            if argv[:2] == ["skillrack", "serve"]:
                page_port = argv[argv.index("--port") + 1] if "--port" in argv else "8000"
                if "--port" in argv:
                    del argv[argv.index("--port") : argv.index("--port") + 2]
                # start_agent serves on a free port of its own (its --port).
                served = start_agent(workdir, args=argv[2:], env=env).wait_ready(START_S)
                servers.callback(served.stop)
                ports[page_port] = served.url.rsplit(":", 1)[1]
                continue
            line = URL.sub(lambda m: f"http://127.0.0.1:{ports.get(m[1], m[1])}", line)
            run = subprocess.run(
                ["bash", "-c", line],
                cwd=workdir,
                capture_output=True,
                text=True,
                env=env,
                timeout=60,
            )
            assert run.returncode == 0, f"{name}: {line}\n{run.stdout}\n{run.stderr}"
            runs.append(run)
        if name == "signed-card":
            check_signed_card(served.url)
    return runs


def check_signed_card(url: str) -> None:
    """The served card verifies with the shipped public JWKS, the one a client pins."""
    card = httpx.get(url + "/.well-known/agent-card.json", timeout=10).text
    jwks = json.loads(
        (EXAMPLES / "signed-card" / "TEST-ONLY-card-signing-ec.jwks.json").read_text()
    )
    assert json.loads(card)["signatures"]
    verify_card_signature(card, jwks)  # raises CardSignatureError otherwise


def completed(run: subprocess.CompletedProcess[str]) -> bool:
    return bool(json.loads(run.stdout)["state"] == "TASK_STATE_COMPLETED")


@pytest.mark.parametrize("name", ["development", "api-keys", "jwt", "signed-card"])
@pytest.mark.slow
def test_example_serves_and_answers(name: str, tmp_path: Path) -> None:
    runs = run_example(name, tmp_path)
    calls = [r for r in runs if "skillrack call" in " ".join(map(str, r.args))]
    assert calls, f"the {name} example calls no skill"
    for call in calls:
        assert completed(call), call.stdout


@pytest.mark.slow
def test_postgresql_replicas(tmp_path: Path) -> None:
    if not postgresql_reachable():
        pytest.skip("PostgreSQL is not reachable on 127.0.0.1:5432")
    runs = run_example("postgresql", tmp_path)
    assert len([r for r in runs if "skillrack call" in r.args[2]]) == 2


def test_every_example_is_on_the_page() -> None:
    directories = {p.name for p in EXAMPLES.iterdir() if p.is_dir()}
    assert set(example_blocks()) == directories


def test_api_keys_example_refuses_a_caller_without_a_key(tmp_path: Path) -> None:
    """The policy is live: the same call without the key's header is refused."""
    shutil.copytree(EXAMPLES, tmp_path / "examples")
    args = ["--config", "examples/api-keys/skillrack.toml"]
    agent = start_agent(tmp_path, args=args, env=environment(tmp_path / "site")).wait_ready(START_S)
    try:
        command = [skillrack_command(), "call", agent.url, "evaluate_resource_condition"]
        run = subprocess.run([*command, "--args", ARGS], capture_output=True, text=True, timeout=60)
    finally:
        agent.stop()
    assert run.returncode == 1 and "authorization_failed" in run.stderr + run.stdout


def test_development_example_is_what_init_writes() -> None:
    shipped = (EXAMPLES / "development" / "skillrack.toml").read_text(encoding="utf-8")
    assert shipped == STARTING_CONFIGURATION


def test_examples_ship_only_labelled_private_keys() -> None:
    """A private key or token in examples/ says in its name that it is for tests only."""
    for path in EXAMPLES.rglob("*"):
        if path.is_file() and (path.suffix in {".pem", ".jwt"}):
            assert path.name.startswith("TEST-ONLY"), path
