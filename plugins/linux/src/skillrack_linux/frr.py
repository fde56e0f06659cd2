"""FRR's view of one device: ``vtysh -N <pathspace> -c '<show ...> json'``.

Debian's ``frr`` package runs one set of daemons per pathspace (``-N``); a
device with ``frr = true`` names its namespace as the pathspace.  Only
``show ... json`` commands are sent, and only their JSON is read: vtysh's
text is never parsed.
"""

from __future__ import annotations

import asyncio
import json
import shutil
from typing import Any

#: How long one vtysh command may take before the device counts as unreachable.
VTYSH_TIMEOUT_S = 10.0


class FrrUnavailable(Exception):
    """vtysh is missing, failed, or did not answer JSON; the message says which."""


def vtysh_path() -> str | None:
    return shutil.which("vtysh")


async def show(pathspace: str, command: str) -> Any:
    """The JSON answer of ``vtysh -N pathspace -c command`` (``command`` ends in ``json``)."""
    binary = vtysh_path()
    if binary is None:
        raise FrrUnavailable("vtysh is not installed (Debian: apt-get install frr)")
    process = await asyncio.create_subprocess_exec(
        binary,
        "-N",
        pathspace,
        "-c",
        command,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        out, err = await asyncio.wait_for(process.communicate(), VTYSH_TIMEOUT_S)
    except TimeoutError:
        process.kill()
        await process.wait()
        raise FrrUnavailable(
            f"vtysh -N {pathspace} did not answer within {VTYSH_TIMEOUT_S:g} s"
        ) from None
    if process.returncode != 0:
        reason = err.decode(errors="replace").strip().splitlines()
        raise FrrUnavailable(
            f"vtysh -N {pathspace} failed ({reason[-1] if reason else process.returncode})"
        )
    try:
        return json.loads(out)
    except ValueError:
        raise FrrUnavailable(f"vtysh -N {pathspace} did not answer JSON to {command!r}") from None
