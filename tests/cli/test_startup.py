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
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.example_vendor import example_vendor_env
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from skillrack.cli import operator as cli_operator
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
    assert cli_operator.DEFAULT_SKILL == scaffold.DEFAULT_SKILL
