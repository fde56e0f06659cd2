"""Which installed vendor plugins load: the entry-point group and ``SKILLRACK_LOAD_PLUGINS``.

Apart from the loading (:mod:`skillrack.host.plugins`, which needs pluggy and
the hook specifications) so that ``skillrack --version`` and ``skillrack
plugins``' explanations can read the selection from installed metadata without
importing either.
"""

from __future__ import annotations

import re

#: The entry-point group a vendor distribution registers its plugin module in.
ENTRY_POINT_GROUP = "skillrack"
#: Comma-separated distribution names to load (unset: all installed; empty: none).
LOAD_PLUGINS_ENV = "SKILLRACK_LOAD_PLUGINS"


def normalize_distribution(name: str) -> str:
    """PEP 503 normalization, so ``Acme_Skills`` and ``acme-skills`` select the same package."""
    return re.sub(r"[-_.]+", "-", name).lower()


def selected_distributions(env: str | None) -> set[str] | None:
    """Parse ``SKILLRACK_LOAD_PLUGINS``: ``None`` means all installed, ``set()`` means none."""
    if env is None:
        return None
    return {normalize_distribution(n.strip()) for n in env.split(",") if n.strip()}


__all__ = [
    "ENTRY_POINT_GROUP",
    "LOAD_PLUGINS_ENV",
    "normalize_distribution",
    "selected_distributions",
]
