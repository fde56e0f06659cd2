"""The vendor guide's test snippets pass against the scaffold as ``skillrack new-plugin`` writes it.

A vendor reads the guide with the scaffold open: a snippet that fails there
(the guide once called the scaffold's skill without its required
``device_id``) is the first thing they meet.  Every Python block marked
``<!-- vendor-test: PATH -->`` in docs/vendor-guide.md is written to PATH in
a freshly generated package (the guide's own ``new-plugin`` line: acme-skills,
skill check_reachability) and run with that package's pytest configuration,
the package on ``PYTHONPATH`` as ``pip install -e`` would put it.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

from helpers.fake_dist import pythonpath

from skillrack.ops.scaffold import scaffold

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "vendor-guide.md"
SNIPPET = re.compile(r"<!-- vendor-test: (\S+) -->\s*```python\n(.*?)```", re.S)
NEW_PLUGIN = re.compile(r"skillrack new-plugin (\S+) --skill (\S+)")


def install_metadata(root: Path, site: Path) -> None:
    """The dist-info ``pip install`` would write (name, version, entry points)."""
    project = tomllib.loads((root / "pyproject.toml").read_text())["project"]
    info = site / f"{project['name'].replace('-', '_')}-{project['version']}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {project['name']}\nVersion: {project['version']}\n"
    )
    lines = []
    for group, entries in project["entry-points"].items():
        lines.append(f"[{group}]")
        lines += [f"{name} = {target}" for name, target in entries.items()]
    (info / "entry_points.txt").write_text("\n".join(lines) + "\n")


def test_the_guide_has_test_snippets() -> None:
    assert SNIPPET.findall(GUIDE.read_text(encoding="utf-8"))


def test_the_guides_snippets_pass_against_the_scaffold(tmp_path: Path) -> None:
    text = GUIDE.read_text(encoding="utf-8")
    match = NEW_PLUGIN.search(text)
    assert match, "the guide no longer scaffolds a package with skillrack new-plugin"
    root = scaffold(match[1], tmp_path, skill=match[2])
    written = []
    for path, code in SNIPPET.findall(text):
        (root / path).write_text(code)
        written.append(path)
    site = tmp_path / "site"
    install_metadata(root, site)
    env = {k: v for k, v in os.environ.items() if k not in {"PYTEST_ADDOPTS"}}
    env.pop("SKILLRACK_LOAD_PLUGINS", None)
    env["PYTHONPATH"] = pythonpath(root / "src", site)
    completed = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", *written],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    output = completed.stdout + completed.stderr
    assert completed.returncode == 0, output
    assert re.search(r"\b\d+ passed", output) and "skipped" not in output, output
