"""Where the IETF modules pyang ships are, and one converter call for the yang tests."""

from __future__ import annotations

import functools
import os
import sys
from pathlib import Path
from typing import Any


def _modules_dir() -> Path:
    """``share/yang/modules`` of the environment pyang is installed in."""
    for root in (Path(sys.prefix), Path(sys.base_prefix)):
        candidate = root / "share" / "yang" / "modules"
        if (candidate / "ietf" / "ietf-interfaces.yang").is_file():
            return candidate
    import pyang

    for parent in Path(pyang.__file__).resolve().parents:
        candidate = parent / "share" / "yang" / "modules"
        if (candidate / "ietf" / "ietf-interfaces.yang").is_file():
            return candidate
    raise RuntimeError("pyang's IETF modules (share/yang/modules) were not found")


MODULES = _modules_dir()
IETF = MODULES / "ietf"
IANA = MODULES / "iana"
SEARCH = (IETF, IANA)


def module_file(name: str) -> Path:
    for directory in SEARCH:
        path = directory / f"{name}.yang"
        if path.is_file():
            return path
    raise FileNotFoundError(name)


@functools.lru_cache(maxsize=32)
def converted(names: tuple[str, ...], node: str | None, config_only: bool = False) -> Any:
    from skillrack.yang.convert import convert
    from skillrack.yang.load import load_modules

    loaded = load_modules([module_file(n) for n in names], search_path=SEARCH)
    return loaded, convert(loaded, node, config_only=config_only)


#: Under CI a missing tool fails instead of skipping (tox passes CI; it also keeps the
#: original value under this name when a configuration does not).
IN_CI = any(
    os.environ.get(name, "").lower() in ("1", "true", "yes")
    for name in ("CI", "__TOX_ENVIRONMENT_VARIABLE_ORIGINAL_CI")
)
