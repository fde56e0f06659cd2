"""``skillrack --version``: this host's version, a2a-sdk's, and each plugin distribution's.

A bug report needs all of them: which host, which A2A SDK under it, and which
vendor packages it would load.  Everything comes from installed metadata
(:mod:`importlib.metadata`), and no plugin is imported, so the answer is
cheap and a broken plugin cannot stop it.
"""

from __future__ import annotations

import os
import platform
from importlib import metadata

from skillrack.host.selection import (
    ENTRY_POINT_GROUP,
    LOAD_PLUGINS_ENV,
    normalize_distribution,
    selected_distributions,
)


def _version(distribution: str) -> str:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return "(not installed)"


def version_text() -> str:
    """One line per component; plugins ``SKILLRACK_LOAD_PLUGINS`` leaves out are marked so."""
    lines = [
        f"skillrack {_version('skillrack')}",
        f"a2a-sdk {_version('a2a-sdk')}",
        f"Python {platform.python_version()}",
    ]
    selected = selected_distributions(os.environ.get(LOAD_PLUGINS_ENV))
    plugins = sorted(
        {
            (ep.dist.name, ep.dist.version)
            for ep in metadata.entry_points(group=ENTRY_POINT_GROUP)
            if ep.dist is not None
        },
        key=lambda named: normalize_distribution(named[0]),
    )
    for name, version in plugins:
        loaded = selected is None or normalize_distribution(name) in selected
        lines.append(
            f"plugin {name} {version}" + ("" if loaded else f" (not loaded: {LOAD_PLUGINS_ENV})")
        )
    if not plugins:
        lines.append("no plugins installed")
    return "\n".join(lines)


__all__ = ["version_text"]
