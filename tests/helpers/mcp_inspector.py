"""The MCP Inspector's command line (``@modelcontextprotocol/inspector-cli``), or a skip saying why.

An MCP client that is not skillrack's nor the Python SDK's: the Inspector is built on
the TypeScript SDK, whose client checks a tool's ``structuredContent`` against its
``outputSchema`` with Ajv and refuses tool lists MCP does not allow.  Installed with npm
into a directory shared by the run's xdist workers (a file lock: one installs, the
others wait and reuse it), as :mod:`helpers.a2a_js` installs the A2A JavaScript SDK.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from filelock import FileLock

#: The Inspector's command-line package alone: the whole Inspector (its web UI too) is 180
#: npm packages, 147 MB and 14 s of npm; this one is a third of that, the same CLI.
PACKAGE = "@modelcontextprotocol/inspector-cli@^0.15"


def inspector_cli(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """The command that runs the Inspector's CLI mode; skips the test when unavailable."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.skip("node and npm are needed to run the MCP Inspector")
    root = tmp_path_factory.getbasetemp().parent / "skillrack-mcp-inspector"
    root.mkdir(parents=True, exist_ok=True)
    with FileLock(str(root) + ".lock", timeout=600):
        script = root / "node_modules" / "@modelcontextprotocol" / "inspector-cli" / "build"
        if not (script / "index.js").is_file():
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
    return [node, str(Path(script) / "index.js")]
