"""The README's and the guides' commands work, and their links and paths exist.

Every block marked ``<!-- doc-test -->`` in README.md and docs/*.md is run.
A marked ``sh`` block is run line by line in a fresh directory (``skillrack``
and ``python`` resolve to this environment's); a block marked
``<!-- doc-test: file NAME -->`` is written to NAME first.  A ``skillrack
serve`` line starts the agent in the background on a free loopback port, and
``http://127.0.0.1:8000`` in the lines after it names that agent; before any
such line, it names an agent the test started (the README's: ``skillrack
serve`` with the example vendor plugin; the guides': an in-process agent).
A serve line's ``--grpc-port 50051`` is given a free port instead, and
``127.0.0.1:50051`` in the lines after it names that port.  A line ending in
``> FILE`` writes the command's output to FILE (no shell runs the lines).

Besides: README.md stays short and every page of docs/ but the conformance
matrix is at most 20 KB; every relative link in README.md and docs/ names an
existing file and, with a ``#fragment``, a heading of it (GitHub's anchors);
the README's plugin snippet serves a skill; every repository path the docs
name in backquotes exists, every dotted ``skillrack.`` module they name
imports, every configuration key is in docs/configuration.md, and .gitignore
covers what the README's commands leave behind.
"""

from __future__ import annotations

import asyncio
import dataclasses
import importlib
import importlib.metadata
import itertools
import os
import re
import shlex
import shutil
import subprocess
import sys
import types
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from urllib.parse import unquote

import pytest
from helpers.agent_harness import running_agent
from helpers.agent_skills import AllowAll, TestSkills
from helpers.builders import registry_of
from helpers.example_vendor import example_vendor_env
from markdown_it import MarkdownIt

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
from skillrack.testing import AgentClient
from skillrack.testing.serve import free_port, skillrack_command, subprocess_agent

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
README = ROOT / "README.md"
DOC_FILES = [README, *sorted(DOCS.glob("*.md"))]
BLOCK = re.compile(r"<!-- doc-test(?::\s*file\s+(\S+))?\s*-->\s*```(\w+)\n(.*?)```", re.S)
DOC_URL = "http://127.0.0.1:8000"
#: A doc's `skillrack serve --grpc-port 50051` gets a free port; later lines name it.
DOC_GRPC_PORT = "50051"
DOC_GRPC = f"127.0.0.1:{DOC_GRPC_PORT}"
README_MAX_BYTES = 10_000
PAGE_MAX_BYTES = 20_000
#: The requirements matrix: one row per requirement sentence of the draft, long by nature.
LONG_PAGES = {"conformance.md"}


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
    grpc = DOC_GRPC
    with ExitStack() as servers:
        for file, body in blocks(path):
            if file:
                (workdir / file).write_text(body.replace(DOC_URL, url))
                continue
            for line in body.strip().splitlines():
                line = line.replace(DOC_GRPC, grpc)
                argv = shlex.split(line)
                if argv[:2] == ["skillrack", "serve"]:
                    if DOC_GRPC_PORT in argv:  # a free port for the doc's --grpc-port 50051
                        grpc = f"127.0.0.1:{free_port()}"
                        argv[argv.index(DOC_GRPC_PORT)] = grpc.rsplit(":", 1)[1]
                    served = servers.enter_context(
                        subprocess_agent(workdir, args=argv[2:], env=env)
                    )
                    url = served.url
                    continue
                line = line.replace(DOC_URL, url)
                argv = shlex.split(line)
                into = None
                if len(argv) > 2 and argv[-2] == ">":  # `command > FILE`: stdout to FILE
                    argv, into = argv[:-2], argv[-1]
                if argv[0] == "skillrack":
                    argv[0] = skillrack_command()
                elif argv[0] == "python":
                    argv[0] = sys.executable
                run = subprocess.run(
                    argv, cwd=workdir, capture_output=True, text=True, env=env, timeout=120
                )
                assert run.returncode == 0, f"{name}: {line}\n{run.stdout}\n{run.stderr}"
                if into is not None:
                    (workdir / into).write_text(run.stdout)


def no_vendor_env() -> dict[str, str]:
    """No plugin from entry points; the example vendor's module importable for ``builtin``.

    A page may name ``skillrack_example_vendor`` in ``[plugins] builtin``; tox's core
    environment holds the host only, so its source tree goes on ``PYTHONPATH``.
    """
    source = str(ROOT / "example_vendor_plugin" / "src")
    path = os.pathsep.join(p for p in (source, os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, "SKILLRACK_LOAD_PLUGINS": "", "PYTHONPATH": path}


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
    if path.name == "operations.md":
        assert "Agent Card" in (workdir / "agent-spec.md").read_text()


def test_the_guides_are_tested() -> None:
    tested = {path.name for path in docs_with_commands()}
    guides = {"README.md", "vendor-guide.md", "operations.md", "approvals.md", "client-guide.md"}
    guides |= {"client-trust.md"}  # the client guide's trust, retry and cache commands
    guides |= {"client-commands.md"}  # its skills, describe, gRPC and push commands
    assert guides <= tested


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


@pytest.mark.parametrize("path", sorted(DOCS.glob("*.md")), ids=lambda p: p.name)
def test_pages_are_short(path: Path) -> None:
    if path.name in LONG_PAGES:
        return
    size = len(path.read_bytes())
    assert size <= PAGE_MAX_BYTES, (
        f"docs/{path.name} is {size} bytes, over {PAGE_MAX_BYTES}: split it by topic"
    )


#: CommonMark with GitHub's tables, so that links in table cells are links too.
MARKDOWN = MarkdownIt("commonmark").enable("table")


def github_slug(heading: str) -> str:
    """The anchor GitHub gives a heading's text (github-slugger): lower case, punctuation
    other than ``-`` and ``_`` dropped, each space a hyphen."""
    return re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """The fragments that reach a heading of ``path`` (a repeated one: ``-1``, ``-2``, ...)."""
    tokens = MARKDOWN.parse(path.read_text(encoding="utf-8"))
    seen: Counter[str] = Counter()
    found = set()
    for opening, inline in itertools.pairwise(tokens):
        if opening.type != "heading_open":
            continue
        text = "".join(
            child.content
            for child in inline.children or ()
            if child.type in {"text", "code_inline"}
        )
        slug = github_slug(text)
        found.add(f"{slug}-{seen[slug]}" if seen[slug] else slug)
        seen[slug] += 1
    return found


def links(path: Path) -> list[str]:
    """Every link and image target in ``path``, code blocks and code spans left out."""
    targets = []
    for token in MARKDOWN.parse(path.read_text(encoding="utf-8")):
        for child in token.children or ():
            target = child.attrGet("href") if child.type == "link_open" else child.attrGet("src")
            if isinstance(target, str):
                targets.append(target)
    return targets


def broken_links(path: Path) -> list[str]:
    """The relative links of ``path`` whose file, or heading, does not exist."""
    broken = []
    for target in links(path):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):
            continue
        file, _, fragment = unquote(target).partition("#")
        linked = (path.parent / file) if file else path
        heading_missing = fragment and (linked.suffix != ".md" or fragment not in anchors(linked))
        if not linked.exists() or heading_missing:
            broken.append(target)
    return broken


@pytest.mark.parametrize("path", DOC_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_reach_files_and_headings(path: Path) -> None:
    broken = broken_links(path)
    assert not broken, f"{path.relative_to(ROOT)} links to missing files or headings: {broken}"


def test_the_link_check_reads_anchors_as_github_does(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "# Title\n\n## `[peers]`: agents skills may delegate to\n\n"
        "## approve_invocation(request)\n\n## OpenID Connect and OAuth 2.0 (Keycloak)\n\n"
        "## Limits\n\n## Limits\n\n```toml\n# not a heading\n```\n\n"
        "[a](#limits-1) [b](page.md#title) [c](#not-a-heading) [d](missing.md) "
        "[e](https://example.net/#x) `[f](#in-code)`\n"
    )
    assert anchors(page) == {
        "title",
        "peers-agents-skills-may-delegate-to",
        "approve_invocationrequest",
        "openid-connect-and-oauth-20-keycloak",
        "limits",
        "limits-1",
    }
    assert broken_links(page) == ["#not-a-heading", "missing.md"]


SNIPPET = re.compile(r"<!-- plugin-snippet -->\s*```python\n(.*?)```", re.S)


def test_the_readme_plugin_snippet_serves_its_skill() -> None:
    """The README's plugin, loaded as the host loads any plugin, serves its skill to a client."""
    (code,) = SNIPPET.findall(README.read_text())
    plugin = types.ModuleType("readme_plugin")
    exec(compile(code, "README.md (Write a plugin)", "exec"), plugin.__dict__)
    registry = registry_of([("readme", plugin), ("allow", AllowAll())])
    assert not registry.refused, registry.refused

    async def call(url: str) -> object:
        async with AgentClient(url) as client:
            return (await client.invoke("shout", {"text": "link down"})).result

    with running_agent(registry) as url:
        assert asyncio.run(call(url)) == {"text": "LINK DOWN"}


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
    if dotted in {"skillrack.audit", "skillrack.hooks", "skillrack.hops", "skillrack.toml"}:
        return True
    if dotted in traces.NAMES:  # span and attribute names (observability.md, Traces)
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
    # configuration.md, and its [plugins] part on a page of its own (pages stay under 20 KB).
    text = "".join(
        p.read_text() for p in (DOCS / "configuration.md", DOCS / "configuration-plugins.md")
    )
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
