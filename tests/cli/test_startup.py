"""What each command imports before it runs: the start-up budget, checked without a clock.

``skillrack --help`` and ``--version`` must not wait for the server stack,
jsonschema or the plugins, and ``skillrack plugins`` loads the plugins but not
the server stack (issue 18: targets of 0.3 s and 1 s, measured by
``benchmarks/startup.py``).  Timing a test on a shared machine proves nothing,
so these check the cause instead: which modules a fresh interpreter holds
after the command's code ran.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers.example_vendor import example_vendor_env
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from skillrack.cli import scaffold as cli_scaffold
from skillrack.ops import scaffold

#: Top-level packages the parser, ``--help`` and ``--version`` must not import.
HEAVY = (
    "a2a",
    "asyncio",
    "cryptography",
    "google",
    "httpx",
    "jsonschema",
    "jwt",
    "pluggy",
    "pyang",
    "sqlalchemy",
    "starlette",
    "uvicorn",
)
#: The server stack, which ``skillrack plugins`` must not import either.
SERVER_STACK = ("a2a", "google", "httpx", "sqlalchemy", "starlette", "uvicorn")

#: The distributions of jsonschema's ``format-nongpl`` extra (and what they bring), which
#: jsonschema imports, all of them, whenever they are installed: ``rfc3987-syntax`` builds a
#: parser (seconds of CPU), ``isoduration`` imports ``arrow``.  skillrack checks every format
#: itself (``skillrack.interface.formats``), so nothing skillrack installs may bring them.
FORMAT_DISTRIBUTIONS = frozenset(
    {"rfc3987-syntax", "lark", "isoduration", "arrow", "rfc3986-validator", "rfc3339-validator",
     "fqdn", "jsonpointer", "uri-template", "webcolors"}
)  # fmt: skip


def imported_after(code: str, env: dict[str, str] | None = None) -> set[str]:
    """The top-level packages a fresh interpreter holds after running ``code`` (in ``env``)."""
    probe = (
        "import json, sys\n"
        f"{code}\n"
        "sys.stdout.flush()\n"
        "sys.__stdout__.write('\\n' + json.dumps(sorted({m.split('.')[0] for m in sys.modules})))\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
        env=env or dict(os.environ),
    )
    assert run.returncode == 0, run.stderr
    return set(json.loads(run.stdout.splitlines()[-1]))


def test_building_the_parser_imports_nothing_heavy() -> None:
    found = imported_after("from skillrack.cli.main import build_parser\nbuild_parser()")
    assert found & set(HEAVY) == set()


@pytest.mark.parametrize("argv", [["--help"], ["--version"], []], ids=["help", "version", "bare"])
def test_help_and_version_import_nothing_heavy(argv: list[str]) -> None:
    code = (
        "from skillrack.cli.launch import main\n"
        f"try:\n    main({argv!r})\nexcept SystemExit:\n    pass"
    )
    assert imported_after(code) & set(HEAVY) == set()


def test_plugins_loads_the_plugins_but_not_the_server_stack(tmp_path: Path) -> None:
    found = imported_after(
        "from skillrack.cli.launch import main\nmain(['plugins'])",
        example_vendor_env(tmp_path / "site"),
    )
    assert "skillrack_example_vendor" in found  # the plugins were loaded
    assert "jsonschema" in found  # and their skills assembled
    assert found & {*SERVER_STACK, "rfc3987_syntax", "isoduration", "arrow"} == set()


#: What a fresh ``skillrack serve`` must not import before it answers its card (issue 34,
#: item 4): the card signer and client certificates (PyJWT, cryptography), the delegation
#: client (tenacity), the connections it and push delivery open (httpcore, made with the
#: first outbound transport: origin_pools), the PostgreSQL dialect with SQLite or memory
#: stores, and the OTLP exporter's HTTP stack, made at its first export (DeferredExporter).
SERVE_DEFERRED = frozenset(
    {"cryptography", "jwt", "tenacity", "requests", "urllib3", "httpcore",
     "skillrack.client.skill_client", "skillrack.protocol.signing",
     "sqlalchemy.dialects.postgresql", "opentelemetry.exporter.otlp.proto.http.trace_exporter"}
)  # fmt: skip

#: Runs ``skillrack serve`` in this interpreter; a thread polls the card with a bare socket
#: (importing nothing) and, at the first 200, prints the modules then held and the collector's
#: state, and ends the process.
SERVE_PROBE = """
import gc, json, os, socket, sys, threading, time
port = int(sys.argv[1])
request = b"GET /.well-known/agent-card.json HTTP/1.1\\r\\nHost: 127.0.0.1\\r\\n\\r\\n"
def poll():
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
                sock.sendall(request)
                if sock.recv(12) == b"HTTP/1.1 200":
                    break
        except OSError:
            pass
        time.sleep(0.05)
    state = {"modules": sorted(sys.modules), "collecting": gc.isenabled(),
             "frozen": gc.get_freeze_count()}
    sys.__stdout__.write("\\n" + json.dumps(state) + "\\n")
    sys.__stdout__.flush()
    os._exit(0)
threading.Thread(target=poll, daemon=True).start()
from skillrack.cli.launch import main
main(["serve", "--port", str(port), "--store", "memory", "--log-level", "warning"])
"""


def serving_state(env: dict[str, str], cwd: Path) -> dict[str, Any]:
    """A fresh ``skillrack serve``'s modules (full names) and collector once it answers its card."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    run = subprocess.run(
        [sys.executable, "-c", SERVE_PROBE, str(port)],
        capture_output=True,
        text=True,
        check=False,
        timeout=180,
        env=env,
        cwd=cwd,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    state: dict[str, Any] = json.loads(run.stdout.splitlines()[-1])
    return state


def deferred_in(modules: list[str]) -> set[str]:
    """Which of :data:`SERVE_DEFERRED` (packages and modules) ``modules`` holds."""
    found = set(modules) | {name.split(".")[0] for name in modules}
    return found & SERVE_DEFERRED


@pytest.mark.slow
def test_serve_answers_its_card_before_importing_what_only_some_requests_need(
    tmp_path: Path,
) -> None:
    env = example_vendor_env(tmp_path / "site")
    for name in ("OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_SDK_DISABLED"):
        env.pop(name, None)
    state = serving_state(env, tmp_path)
    assert {"skillrack_example_vendor", "skillrack.serve.server"} <= set(state["modules"])
    assert deferred_in(state["modules"]) == set()
    # The collector, off while the start-up heap was made (launch.py), is on again; the heap
    # is frozen.
    assert state["collecting"] is True
    assert state["frozen"] > 10_000


@pytest.mark.slow
def test_with_an_otel_exporter_serve_answers_before_the_exporter_is_made(tmp_path: Path) -> None:
    pytest.importorskip("opentelemetry.sdk", reason="the otel extra is not installed")
    pytest.importorskip("opentelemetry.exporter.otlp.proto.http")
    env = {
        **example_vendor_env(tmp_path / "site"),
        "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9",  # nothing is exported before exit
    }
    env.pop("OTEL_SDK_DISABLED", None)
    env.pop("OTEL_TRACES_EXPORTER", None)
    modules = serving_state(env, tmp_path)["modules"]
    assert "opentelemetry.sdk.trace" in modules  # traces are on
    assert deferred_in(modules) == set()


def installed_closure(name: str, extras: frozenset[str]) -> set[str]:
    """The distributions ``name[extras]`` requires, transitively, read from installed metadata.

    Normalized names; a required distribution that is not installed is in the set (its own
    requirements are not known).
    """
    found: set[str] = set()
    todo = [(name, extras)]
    seen: set[tuple[str, frozenset[str]]] = set()
    while todo:
        current, wanted = todo.pop()
        key = canonicalize_name(current)
        if (key, wanted) in seen:
            continue
        seen.add((key, wanted))
        found.add(key)  # required, whether or not it is installed here
        try:
            requirements = importlib.metadata.requires(current) or []
        except importlib.metadata.PackageNotFoundError:
            continue
        for line in requirements:
            requirement = Requirement(line)
            marker = requirement.marker
            if marker is None or any(marker.evaluate({"extra": e}) for e in wanted | {""}):
                todo.append((requirement.name, frozenset(requirement.extras)))
    return found


def test_nothing_skillrack_installs_brings_jsonschemas_format_packages() -> None:
    """Not the host, its gRPC and Redis extras, nor what its tests install."""
    closure = installed_closure("skillrack", frozenset({"grpc", "redis", "test", "otel"}))
    assert {"jsonschema", "idna", "a2a-sdk"} <= closure  # the walk reads real metadata
    assert closure & FORMAT_DISTRIBUTIONS == set()


def test_the_closure_walk_follows_requested_extras_only() -> None:
    """Checked on jsonschema itself: the extra brings the packages, plain jsonschema does not."""
    plain = installed_closure("jsonschema", frozenset())
    assert plain & FORMAT_DISTRIBUTIONS == set()
    requested = installed_closure("jsonschema", frozenset({"format-nongpl"}))
    assert {"rfc3987-syntax", "isoduration", "rfc3986-validator"} <= requested


def test_the_parser_default_skill_is_the_scaffold_default() -> None:
    """``new-plugin --skill``'s default is written down twice (the parser must not import it)."""
    assert cli_scaffold.DEFAULT_SKILL == scaffold.DEFAULT_SKILL
