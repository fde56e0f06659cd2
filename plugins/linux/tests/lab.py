"""The test lab: examples/linux-lab/lab.sh under a prefix of its own, and independent reads.

The lab is the operator's script (the one docs/linux-lab.md walks), run with
``LAB_PREFIX`` so that the tests' namespaces never meet an operator's.  The
oracles read the same state the plugin reads, but through other programs:
``ip -j`` (iproute2's JSON) and ``vtysh ... json``; the tests compare the
plugin's answers with them, never with the plugin's own code.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

LAB_SCRIPT = Path(__file__).resolve().parents[3] / "examples" / "linux-lab" / "lab.sh"
FRR_BIN = Path("/usr/lib/frr")


def missing() -> str | None:
    """What this machine lacks for the lab, in one line; None when it has everything."""
    if os.geteuid() != 0:
        return "the lab needs root (network namespaces, FRR)"
    if shutil.which("ip") is None:
        return "iproute2 is missing (apt-get install iproute2)"
    if shutil.which("vtysh") is None or not (FRR_BIN / "bgpd").exists():
        return "FRR is missing (apt-get install frr)"
    if not LAB_SCRIPT.exists():
        return f"{LAB_SCRIPT} is missing"
    return None


@dataclass(frozen=True)
class Lab:
    prefix: str

    def ns(self, router: str) -> str:
        return f"{self.prefix}{router}"

    def ip(self, router: str, *args: str) -> Any:
        """``ip -j -n <ns> args...``: iproute2's JSON, the independent read of the kernel."""
        out = subprocess.run(
            ["ip", "-j", "-n", self.ns(router), *args], check=True, capture_output=True, text=True
        ).stdout
        return json.loads(out) if out.strip() else []

    def vtysh(self, router: str, command: str) -> Any:
        out = subprocess.run(
            ["vtysh", "-N", self.ns(router), "-c", command],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        return json.loads(out)

    def run(self, router: str, *command: str) -> None:
        subprocess.run(
            ["ip", "netns", "exec", self.ns(router), *command], check=True, capture_output=True
        )

    def script(self, action: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(LAB_SCRIPT), action],
            env={**os.environ, "LAB_PREFIX": self.prefix},
            capture_output=True,
            text=True,
            timeout=90,
        )
