"""The vendor guide's test snippets pass against the scaffold as ``skillrack new-plugin`` writes it.

A vendor reads the guide with the scaffold open: a snippet that fails there
(the guide once called the scaffold's skill without its required
``device_id``) is the first thing they meet.  Every Python block marked
``<!-- vendor-test: PATH -->`` in docs/vendor-guide.md is written to PATH in
a freshly generated package (the guide's own ``new-plugin`` line: acme-skills,
skill check_reachability) and run with that package's pytest configuration,
the package on ``PYTHONPATH`` as ``pip install -e`` would put it.

The guide's ``tox`` line (``<!-- vendor-tox: SKILLRACK_DIR PACKAGE_DIR -->``)
is run as written, by bash, in the package's directory, with this checkout
at ``SKILLRACK_DIR`` beside it: the scaffold's own tox.ini, for real (a fresh
virtual environment; the generated tests and the guide's snippets pass).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.fake_dist import install_metadata, pythonpath

from skillrack.ops.scaffold import scaffold

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "vendor-guide.md"
SNIPPET = re.compile(r"<!-- vendor-test: (\S+) -->\s*```python\n(.*?)```", re.S)
NEW_PLUGIN = re.compile(r"skillrack new-plugin (\S+) --skill (\S+)")
TOX = re.compile(r"<!-- vendor-tox: (\S+) (\S+) -->\s*```sh\n(.*?)```", re.S)
CHECKOUT = GUIDE.parents[1]


def test_the_guide_has_test_snippets() -> None:
    assert SNIPPET.findall(GUIDE.read_text(encoding="utf-8"))


@pytest.mark.slow
def test_the_guides_snippets_pass_against_the_scaffold(tmp_path: Path) -> None:
    text = GUIDE.read_text(encoding="utf-8")
    match = NEW_PLUGIN.search(text)
    assert match, "the guide does not scaffold a package with skillrack new-plugin"
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


@pytest.mark.slow
def test_the_guides_tox_line_runs_against_the_scaffold(tmp_path: Path) -> None:
    text = GUIDE.read_text(encoding="utf-8")
    [(skillrack_dir, package_dir, block)] = TOX.findall(text)
    match = NEW_PLUGIN.search(text)
    assert match and package_dir == match[1]
    root = scaffold(match[1], tmp_path, skill=match[2])
    for path, code in SNIPPET.findall(text):
        (root / path).write_text(code)
    (tmp_path / skillrack_dir).symlink_to(CHECKOUT, target_is_directory=True)
    # An outer tox (TOX_WORK_DIR, ...) must not steer this one; `tox` is this Python's.
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("TOX_") and k not in {"PYTEST_ADDOPTS", "SKILLRACK_PATH"}
    }
    env.pop("SKILLRACK_LOAD_PLUGINS", None)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    lines = [line.strip() for line in block.splitlines() if line.strip()]
    assert lines and all("tox" in line for line in lines)
    for line in lines:
        completed = subprocess.run(
            ["bash", "-c", line],
            cwd=root,
            env=env,
            capture_output=True,
            text=True,
            timeout=1500,
        )
        output = completed.stdout + completed.stderr
        assert completed.returncode == 0, f"{line}\n{output[-4000:]}"
        passed = re.search(r"\b(\d+) passed", output)
        assert passed and int(passed.group(1)) >= 10, output[-4000:]
        assert not re.search(r"\b\d+ skipped", output), output[-4000:]
