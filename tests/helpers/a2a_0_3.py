"""a2a-sdk 0.3.x in an environment of its own, for the A2A 0.3 caller tests, or a skip saying why.

skillrack's own environment holds a2a-sdk 1.x, so the 0.3 client runs in a
virtual environment made once and kept: in ``SKILLRACK_A2A_0_3_VENV`` when
set, else under ``$SKILLRACK_ARTIFACTS`` (tox sets it), else beside pytest's
temporary directories; a later session finds it ready (its ``.ready`` file)
and installs nothing.  It is built under another name and renamed into place,
so sessions running side by side never see half an environment.  Skipped when
the package cannot be installed (no network), as the JavaScript SDK's tests are.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest
from filelock import FileLock

PACKAGE = "a2a-sdk[http-server]<0.4"
VENV_ENV = "SKILLRACK_A2A_0_3_VENV"
#: The 0.3 caller the tests run with that environment's Python.
CLIENT = Path(__file__).with_name("a2a_0_3_client.py")


def _python(root: Path) -> Path:
    return root / ("Scripts/python.exe" if sys.platform == "win32" else "bin/python")


def a2a_0_3_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The Python of an environment holding a2a-sdk 0.3.x; made on first use, then reused."""
    given, artifacts = os.environ.get(VENV_ENV), os.environ.get("SKILLRACK_ARTIFACTS")
    if given:
        root = Path(given)
    elif artifacts:
        root = Path(artifacts) / "a2a-sdk-0.3"
    else:
        root = tmp_path_factory.getbasetemp().parent / "skillrack-a2a-sdk-0.3"
    if (root / ".ready").exists():
        return _python(root)
    root.parent.mkdir(parents=True, exist_ok=True)
    # xdist workers of one run share ``root``: one builds it, the others wait, then reuse it.
    with FileLock(str(root) + ".lock", timeout=600):
        if (root / ".ready").exists():
            return _python(root)
        return _build(root)


def _install_commands(building: Path) -> list[str]:
    """Make the environment at ``building`` and return the command that fills it.

    With uv on ``PATH`` (tox-uv puts it there) uv makes and fills it: about a second of CPU,
    where ``venv`` with pip took 13 s, a visible share of the suite's time.  Else pip.
    """
    uv = shutil.which("uv")
    if uv is None:
        venv.create(building, with_pip=True)
        return [str(_python(building)), "-m", "pip", "install", "-q", PACKAGE]
    subprocess.run(
        [uv, "venv", "--quiet", "--python", sys.executable, str(building)],
        check=True,
        capture_output=True,
        timeout=120,
    )
    return [uv, "pip", "install", "--quiet", "--python", str(_python(building)), PACKAGE]


def _build(root: Path) -> Path:
    """Make the a2a-sdk 0.3 environment at ``root`` (in a directory of its own, then renamed)."""
    building = root.with_name(f"{root.name}.{os.getpid()}")
    shutil.rmtree(building, ignore_errors=True)
    try:
        installed = subprocess.run(
            _install_commands(building),
            capture_output=True,
            text=True,
            timeout=300,
        )
    except subprocess.TimeoutExpired:
        shutil.rmtree(building, ignore_errors=True)
        pytest.skip(f"pip install {PACKAGE} timed out (no network?)")
    if installed.returncode != 0:
        shutil.rmtree(building, ignore_errors=True)
        pytest.skip(f"pip install {PACKAGE} failed: {installed.stderr.strip()[-500:]}")
    (building / ".ready").write_text(PACKAGE + "\n")
    root.parent.mkdir(parents=True, exist_ok=True)
    try:
        building.rename(root)
    except OSError:  # another session finished first: use its environment
        shutil.rmtree(building, ignore_errors=True)
    return _python(root)
