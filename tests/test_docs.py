"""The README's and the guides' commands work, and their links and paths exist.

Every block marked ``<!-- doc-test -->`` in README.md and docs/*.md is run.
A marked ``sh`` block is run line by line in a fresh directory (``skillrack``
and ``python`` resolve to this environment's); a block marked
``<!-- doc-test: file NAME -->`` is written to NAME first.  A ``skillrack
serve`` line starts the agent in the background on a free loopback port, and
``http://127.0.0.1:8000`` in the lines after it names that agent; before any
such line, it names an agent the test started (the README's: ``skillrack
serve`` with the example vendor plugin; the guides': an in-process agent).

Besides: README.md stays short, every relative link in README.md and docs/
names an existing file, every repository path the docs name in backquotes
exists, every dotted ``skillrack.`` module they name imports, every
configuration key is in docs/configuration.md, and .gitignore covers what the
README's commands leave behind.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.metadata
import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest
from helpers.agent_harness import running_agent
from helpers.agent_skills import AllowAll, TestSkills
from helpers.builders import registry_of
from helpers.example_vendor import example_vendor_env

from skillrack.host.config import (
    FIRST_PARTY,
    AgentIdentity,
    Config,
    PeerAddresses,
    Provider,
    ServerSettings,
    SigningSettings,
)
from skillrack.interface.limits import Limits
from skillrack.serve.observability import traces
from skillrack.testing.serve import skillrack_command, subprocess_agent

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
README = ROOT / "README.md"
DOC_FILES = [README, *sorted(DOCS.glob("*.md"))]
BLOCK = re.compile(r"<!-- doc-test(?::\s*file\s+(\S+))?\s*-->\s*```(\w+)\n(.*?)```", re.S)
DOC_URL = "http://127.0.0.1:8000"
README_MAX_BYTES = 10_000


def blocks(path: Path) -> list[tuple[str | None, str]]:
    return [(file, body) for file, _lang, body in BLOCK.findall(path.read_text())]


def docs_with_commands() -> list[Path]:
    return [path for path in DOC_FILES if blocks(path)]


@pytest.fixture(scope="module")
def agent_url() -> Iterator[str]:
    with running_agent(registry_of([("tests", TestSkills()), ("allow", AllowAll())])) as url:
        yield url


def run_doc(path: Path, workdir: Path, url: str, env: dict[str, str]) -> None:
    """Run ``path``'s marked blocks in ``workdir``; ``url`` stands for the doc's agent."""
    name = path.relative_to(ROOT)
    with ExitStack() as servers:
        for file, body in blocks(path):
            if file:
                (workdir / file).write_text(body.replace(DOC_URL, url))
                continue
            for line in body.strip().splitlines():
                argv = shlex.split(line)
                if argv[:2] == ["skillrack", "serve"]:
                    served = servers.enter_context(
                        subprocess_agent(workdir, args=argv[2:], env=env)
                    )
                    url = served.url
                    continue
                line = line.replace(DOC_URL, url)
                argv = shlex.split(line)
                if argv[0] == "skillrack":
                    argv[0] = skillrack_command()
                elif argv[0] == "python":
                    argv[0] = sys.executable
                run = subprocess.run(
                    argv, cwd=workdir, capture_output=True, text=True, env=env, timeout=120
                )
                assert run.returncode == 0, f"{name}: {line}\n{run.stdout}\n{run.stderr}"


def no_vendor_env() -> dict[str, str]:
    return {**os.environ, "SKILLRACK_LOAD_PLUGINS": ""}


@pytest.mark.parametrize("path", docs_with_commands(), ids=lambda p: str(p.relative_to(ROOT)))
@pytest.mark.slow
def test_marked_commands_run(path: Path, tmp_path: Path, agent_url: str) -> None:
    workdir = tmp_path / "work"
    workdir.mkdir()
    if path == README:
        env = example_vendor_env(tmp_path / "site")
        with subprocess_agent(workdir, env=env) as agent:  # the README's first command
            run_doc(path, workdir, agent.url, env)
        assert_ignored_by_git(workdir)
    else:
        run_doc(path, workdir, agent_url, no_vendor_env())
    if path.name == "vendor-guide.md":
        assert (workdir / "bundle" / "manifest.json").is_file()
    if path.name == "operator-guide.md":
        assert "Agent Card" in (workdir / "agent-spec.md").read_text()


def test_the_guides_are_tested() -> None:
    tested = {path.name for path in docs_with_commands()}
    assert {"README.md", "vendor-guide.md", "operator-guide.md", "client-guide.md"} <= tested


def assert_ignored_by_git(workdir: Path) -> None:
    """Everything the README's commands left in ``workdir`` is ignored in a clone."""
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        return
    left = [
        entry.relative_to(workdir).as_posix()
        for top in workdir.iterdir()
        if not top.name.startswith("serve-")  # the test's own server logs
        for entry in ([top] if top.is_file() else [p for p in top.rglob("*") if p.is_file()][:1])
    ]
    assert left, "the README's commands left nothing behind?"
    check = subprocess.run(
        ["git", "check-ignore", "--no-index", "--verbose", "--non-matching", *left],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    not_ignored = [
        line.split("\t")[-1] for line in check.stdout.splitlines() if line.startswith("::")
    ]
    assert not not_ignored, f".gitignore does not cover what the README leaves: {not_ignored}"


def test_readme_is_short() -> None:
    size = len(README.read_bytes())
    assert size < README_MAX_BYTES, f"README.md is {size} bytes; move detail to docs/"


LINK = re.compile(r"\]\(([^)\s]+)\)")


@pytest.mark.parametrize("path", DOC_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_exist(path: Path) -> None:
    broken = []
    for target in LINK.findall(path.read_text()):
        if re.match(r"[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
            continue
        file = target.split("#", 1)[0]
        if not (path.parent / file).exists():
            broken.append(target)
    assert not broken, f"{path.relative_to(ROOT)} links to missing files: {broken}"


REPO_PATH = re.compile(
    r"`((?:core|plugins|example_vendor_plugin|tests|benchmarks|schemas|docs)/[^`\s*{}<>]+)`"
)
MODULE = re.compile(r"`(skillrack(?:_plugins)?(?:\.[a-z_][a-z0-9_]*)+)")


@pytest.mark.parametrize("path", DOC_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_named_paths_and_modules_exist(path: Path) -> None:
    """The docs name files and modules of the current layout, not of an old one."""
    text = path.read_text()
    missing = [name for name in REPO_PATH.findall(text) if not (ROOT / name).exists()]
    missing += [name for name in MODULE.findall(text) if not _resolves(name)]
    assert not missing, f"{path.relative_to(ROOT)} names what does not exist: {missing}"


def _resolves(dotted: str) -> bool:
    """``dotted`` is a module, or an attribute of one (``skillrack.audit`` is a logger name)."""
    if dotted in {"skillrack.audit", "skillrack.hops", "skillrack.toml"}:
        return True
    if dotted in traces.NAMES:  # span and attribute names (operator guide, Traces)
        return True
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            target: object = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attribute in parts[cut:]:
            if not hasattr(target, attribute):
                return False
            target = getattr(target, attribute)
        return True
    return False


def test_every_configuration_key_is_documented() -> None:
    text = (DOCS / "configuration.md").read_text()
    documented = set(re.findall(r"[a-z_][a-z0-9_]*", text))  # a2a_0_3 has digits
    keys = {
        f.name
        for cls in (AgentIdentity, Provider, ServerSettings, SigningSettings, PeerAddresses, Limits)
        for f in dataclasses.fields(cls)
        if f.name != "provider"
    }
    keys |= {"builtin", *FIRST_PARTY}
    assert not keys - documented, f"not in docs/configuration.md: {sorted(keys - documented)}"
    assert {f.name for f in dataclasses.fields(Config)} >= {"agent", "server", "signing"}
