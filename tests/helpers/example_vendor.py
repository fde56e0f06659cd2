"""The example vendor plugin as an installed distribution, in every test environment.

tox's core environment holds only the host (the example vendor is tested in
its own environment), yet the README, the examples and a few CLI tests serve
its skills: there, a dist-info on PYTHONPATH makes ``example_vendor_plugin/src``
what ``pip install ./example_vendor_plugin`` would have installed.
"""

from __future__ import annotations

import importlib.metadata
import os
from pathlib import Path

from helpers.fake_dist import pythonpath

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE_VENDOR = "skillrack-example-vendor"


def example_vendor_env(site: Path) -> dict[str, str]:
    """This process's environment loading only the example vendor; ``site`` is a new directory."""
    env = {**os.environ, "SKILLRACK_LOAD_PLUGINS": EXAMPLE_VENDOR}
    try:
        importlib.metadata.distribution(EXAMPLE_VENDOR)
    except importlib.metadata.PackageNotFoundError:
        pass
    else:
        return env  # installed: a second copy would load twice
    site.mkdir()
    info = site / "skillrack_example_vendor-0.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {EXAMPLE_VENDOR}\nVersion: 0.0\n")
    (info / "entry_points.txt").write_text(
        "[skillrack]\nexample_vendor = skillrack_example_vendor\n"
    )
    source = ROOT / "example_vendor_plugin" / "src"
    return {**env, "PYTHONPATH": pythonpath(site, source)}
