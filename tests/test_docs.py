"""The guides' commands work: every block marked ``<!-- doc-test -->`` in docs/ is run.

A marked ``sh`` block is run line by line in a fresh directory (``skillrack``
and ``python`` resolve to this environment's); a block marked
``<!-- doc-test: file NAME -->`` is written to NAME first.  The client guide's
``http://127.0.0.1:8000`` is replaced by a real agent started for the test.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.agent_harness import running_agent
from helpers.agent_skills import AllowAll, TestSkills
from helpers.builders import registry_of
from test_config import skillrack_command

DOCS = Path(__file__).resolve().parents[1] / "docs"
BLOCK = re.compile(r"<!-- doc-test(?::\s*file\s+(\S+))?\s*-->\s*```(\w+)\n(.*?)```", re.S)


def blocks(guide: str) -> list[tuple[str | None, str]]:
    return [(file, body) for file, _lang, body in BLOCK.findall((DOCS / guide).read_text())]


@pytest.fixture(scope="module")
def agent_url() -> Iterator[str]:
    with running_agent(registry_of([("tests", TestSkills()), ("allow", AllowAll())])) as url:
        yield url


def run_guide(guide: str, workdir: Path, replacements: dict[str, str] | None = None) -> None:
    found = blocks(guide)
    assert found, f"{guide} has no doc-test blocks"
    env = {**os.environ, "SKILLRACK_LOAD_PLUGINS": ""}
    for file, body in found:
        for old, new in (replacements or {}).items():
            body = body.replace(old, new)
        if file:
            (workdir / file).write_text(body)
            continue
        for line in body.strip().splitlines():
            argv = shlex.split(line)
            if argv[0] == "skillrack":
                argv[0] = skillrack_command()
            elif argv[0] == "python":
                argv[0] = sys.executable
            run = subprocess.run(
                argv, cwd=workdir, capture_output=True, text=True, env=env, timeout=120, check=False
            )
            assert run.returncode == 0, f"{guide}: {line}\n{run.stdout}\n{run.stderr}"


def test_vendor_guide(tmp_path: Path) -> None:
    run_guide("vendor-guide.md", tmp_path)
    assert (tmp_path / "bundle" / "manifest.json").is_file()


def test_operator_guide(tmp_path: Path) -> None:
    run_guide("operator-guide.md", tmp_path)
    assert "Agent Card" in (tmp_path / "agent-spec.md").read_text()


def test_client_guide(tmp_path: Path, agent_url: str) -> None:
    run_guide("client-guide.md", tmp_path, {"http://127.0.0.1:8000": agent_url})
