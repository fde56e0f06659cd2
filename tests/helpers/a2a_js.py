"""The A2A JavaScript SDK (``@a2a-js/sdk``) for interoperability tests, or a skip saying why.

Installed with npm into a temporary directory shared by the run's xdist workers (or
taken from ``SKILLRACK_A2A_JS_DIR``, a directory whose ``node_modules`` holds it); a file
lock lets one worker install while the others wait for it, then reuse it.
Skipped when Node 20+ or npm is missing or the package cannot be installed
(no network).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from filelock import FileLock

PACKAGE = "@a2a-js/sdk@^1.3"
JS_DIR_ENV = "SKILLRACK_A2A_JS_DIR"


def _node_major(node: str) -> int:
    version = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=30)
    return int(version.stdout.strip().lstrip("v").split(".")[0] or 0)


def install_a2a_js(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    """(node executable, the SDK's package directory); skips the test when unavailable."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.skip("node and npm are needed to run the A2A JavaScript SDK")
    if _node_major(node) < 20:
        pytest.skip("the A2A JavaScript SDK needs Node 20 or later")
    given = os.environ.get(JS_DIR_ENV)
    # getbasetemp().parent: above each xdist worker's own directory (kept across runs
    # when pytest runs in one process, as the a2a-sdk 0.3 environment is).
    root = Path(given) if given else tmp_path_factory.getbasetemp().parent / "skillrack-a2a-js"
    root.mkdir(parents=True, exist_ok=True)
    with FileLock(str(root) + ".lock", timeout=600):
        return node, _installed(npm, root)


def _installed(npm: str, root: Path) -> Path:
    """The SDK's package directory under ``root``, installed there unless it already is."""
    if not (root / "node_modules" / "@a2a-js" / "sdk").is_dir():
        try:
            installed = subprocess.run(
                [npm, "install", "--prefix", str(root), "--no-audit", "--no-fund", PACKAGE],
                capture_output=True,
                text=True,
                timeout=300,
            )
        except subprocess.TimeoutExpired:
            pytest.skip(f"npm install {PACKAGE} timed out (no network?)")
        if installed.returncode != 0:
            pytest.skip(f"npm install {PACKAGE} failed: {installed.stderr.strip()[-500:]}")
    return root / "node_modules" / "@a2a-js" / "sdk"


def entry_point(package: Path, subpath: str = ".") -> Path:
    """The ESM file of one of the package's exports (``"."``, ``"./client"``, ...)."""
    exports = json.loads((package / "package.json").read_text())["exports"]
    return package / exports[subpath]["import"]
